"""Publishing evidence as a content-addressed in-toto Statement v1.

The statement names the evidence (its digest) and every attempt's record and seal
file (their sha256) as subjects; the predicate is the evidence itself. Standard
supply-chain tooling can read it and later sign it (DSSE). The file is named by the
evidence digest, so publishing the same evidence twice yields the same subject,
and a published record edited on disk is refused when loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.store import ATTEMPT_FILE, SEAL_FILE, HarnessEvidenceStore, atomic_write

__all__ = [
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "PublishedSubject",
    "load_published",
    "publish_evidence",
    "statement_for",
]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://xaytune.dev/attestations/agent-run-evidence/v1"
SUBJECT_KIND = "agent_run_evidence"


class PublishedSubject(BaseModel):
    """A published evidence record: what an evaluator loads and re-verifies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["agent_run_evidence"] = SUBJECT_KIND
    digest: str
    path: str
    store_root: str


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def statement_for(evidence: HarnessRunEvidence) -> dict[str, object]:
    """The in-toto Statement v1 for ``evidence`` (plain data, canonicalisable)."""
    subjects: list[dict[str, object]] = [
        {"name": SUBJECT_KIND, "digest": {"sha256": _hex(evidence.digest)}}
    ]
    for entry in evidence.entries:
        for attempt in entry.attempts:
            base = f"tasks/{entry.position:06d}/attempts/{attempt.attempt:03d}"
            subjects.append(
                {
                    "name": f"{base}/{ATTEMPT_FILE}",
                    "digest": {"sha256": _hex(attempt.record_digest)},
                }
            )
            subjects.append(
                {"name": f"{base}/{SEAL_FILE}", "digest": {"sha256": _hex(attempt.seal_digest)}}
            )
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": evidence.model_dump(mode="json", by_alias=True),
    }


def publish_evidence(evidence: HarnessRunEvidence, store: HarnessEvidenceStore) -> PublishedSubject:
    """Write ``evidence`` as a statement under ``store``; return its subject.

    Refuses evidence whose digest is not its contents' (``digest-mismatch``) and a
    different record already published under the same digest (``subject-tampered``).
    """
    if evidence.digest != evidence.content_digest():
        raise EvidenceError("digest-mismatch", "the evidence digest is not its contents'")
    raw = canonical_bytes(statement_for(evidence)) + b"\n"
    directory = store.published_dir
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{_hex(evidence.digest)}.intoto.json"
    if path.exists():
        if path.read_bytes() != raw:
            raise EvidenceError(
                "subject-tampered", f"{path}: a different record is published under this digest"
            )
    else:
        atomic_write(path, raw, durable=store.durable)
    return PublishedSubject(digest=evidence.digest, path=str(path), store_root=str(store.root))


def load_published(subject: PublishedSubject) -> HarnessRunEvidence:
    """Load a published subject; refuse it (``subject-tampered``) if edited on disk."""
    path = Path(subject.path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise EvidenceError("subject-missing", f"{path}: cannot read ({error.strerror})") from None
    try:
        evidence = HarnessRunEvidence.model_validate(_statement(raw, path)["predicate"])
    except (ValidationError, KeyError, TypeError):
        raise EvidenceError("subject-tampered", f"{path}: not a valid evidence statement") from None
    if (
        evidence.digest != subject.digest
        or evidence.content_digest() != evidence.digest
        or canonical_bytes(statement_for(evidence)) + b"\n" != raw
        or path.name != f"{_hex(subject.digest)}.intoto.json"
    ):
        raise EvidenceError(
            "subject-tampered", f"{path}: the published record is not the subject it claims"
        )
    return evidence


def _statement(raw: bytes, path: Path) -> dict[str, object]:
    try:
        statement = json.loads(raw)
    except ValueError:
        raise EvidenceError("subject-tampered", f"{path}: not JSON") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise EvidenceError("subject-tampered", f"{path}: not an in-toto Statement v1")
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise EvidenceError("subject-tampered", f"{path}: predicate is not agent-run evidence")
    return statement
