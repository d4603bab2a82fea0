"""Reference egress grants: permission to send held-out references to a judge.

spec: Disclosure and references. A judge with ``reference_access="reference"`` needs
a :class:`ReferenceEgressGrant` for the suite and the pinned judge model, or
``prepare()`` refuses and nothing is sent. Execution checks the prepared grant
again, against the grants the host supplied, before any reference is read: a
missing, altered or unissued grant is refused, and so is a grant on an evaluation
that sends no reference.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from xaytune.core.canonical import fingerprint
from xaytune.core.errors import EvaluationError
from xaytune.models.protocol import ModelIdentity

__all__ = ["GRANT_SCHEMA", "ReferenceEgressGrant", "check_grant", "model_fingerprint"]

GRANT_SCHEMA = "xaytune.reference-egress-grant/v1"


def model_fingerprint(identity: ModelIdentity) -> str:
    """Canonical digest of a model identity (provider, model, revision, parameters)."""
    return fingerprint(identity.model_dump(mode="json"))


class ReferenceEgressGrant(BaseModel):
    """Permission, issued by a host, to send one suite's references to one judge model.

    ``digest`` is over every other field. Construction does not check it: an
    altered grant must reach :func:`check_grant` and be refused there with
    ``grant-altered``, not fail earlier as a parsing error.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: Literal["xaytune.reference-egress-grant/v1"] = Field(
        default=GRANT_SCHEMA, alias="schema"
    )
    suite_digest: str
    judge_model: str  # model_fingerprint() of the pinned judge identity
    issued_by: str
    digest: str

    @classmethod
    def issue(
        cls, *, suite_digest: str, judge_model: ModelIdentity, issued_by: str
    ) -> ReferenceEgressGrant:
        """A grant for (suite, judge model) with its digest computed."""
        fields = {
            "schema": GRANT_SCHEMA,
            "suite_digest": suite_digest,
            "judge_model": model_fingerprint(judge_model),
            "issued_by": issued_by,
        }
        return cls(**fields, digest=fingerprint(fields))

    def content_digest(self) -> str:
        """The digest of every field but ``digest``."""
        return fingerprint(self.model_dump(mode="json", by_alias=True, exclude={"digest"}))


def check_grant(
    grant: ReferenceEgressGrant | None,
    *,
    sends_reference: bool,
    suite_digest: str,
    judge_model: ModelIdentity,
    host_grants: Iterable[ReferenceEgressGrant],
    where: str,
) -> None:
    """Refuse a grant that does not permit this evaluation's reference egress.

    Reasons: ``grant-unneeded`` (a grant on an evaluation that sends no reference),
    ``grant-missing`` (none, or one for another suite or judge model),
    ``grant-altered`` (digest not its contents', or contents differ from the issued
    grant with that digest), ``grant-unissued`` (not among the host's grants).
    """
    if not sends_reference:
        if grant is not None:
            raise EvaluationError(
                "grant-unneeded",
                f"{where}: reference_access is none, yet a reference egress grant "
                f"({grant.digest}) is attached",
            )
        return
    if grant is None:
        raise EvaluationError(
            "grant-missing",
            f"{where}: reference_access is reference but no ReferenceEgressGrant is given "
            f"for suite {suite_digest}",
        )
    if grant.digest != grant.content_digest():
        raise EvaluationError(
            "grant-altered", f"{where}: grant {grant.digest} is not its contents' digest"
        )
    if grant.suite_digest != suite_digest or grant.judge_model != model_fingerprint(judge_model):
        raise EvaluationError(
            "grant-missing",
            f"{where}: grant {grant.digest} covers suite {grant.suite_digest} and judge "
            f"{grant.judge_model}, not suite {suite_digest} and judge "
            f"{judge_model.provider}/{judge_model.model}@{judge_model.revision}",
        )
    issued = {host.digest: host for host in host_grants}
    match = issued.get(grant.digest)
    if match is None:
        raise EvaluationError(
            "grant-unissued", f"{where}: grant {grant.digest} is not among the host's grants"
        )
    if match != grant:
        raise EvaluationError(
            "grant-altered",
            f"{where}: grant {grant.digest} differs from the host's grant with that digest",
        )
