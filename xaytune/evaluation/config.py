"""Evaluation config ``xaytune.harness-evaluation/v1alpha1``: schemas, resolve, fingerprint.

A config is accepted only in its canonical form: every field explicit, no unknown
field, no default filled in silently. Its fingerprint is the canonical digest of the
whole config except ``metadata.disclosure`` (spec: disclosure stays outside the
fingerprint), so two evaluations that differ only in what they release compare (C3).

Shape::

    {"apiVersion": "xaytune.harness-evaluation/v1alpha1",
     "kind": "HarnessOutcomeEvaluation" | "HarnessJudgeEvaluation",
     "metadata": {"name": "<id>", "disclosure": "aggregate" | "per-task"},
     "spec": {...}}

outcome spec: ``{"match": {"strip": bool, "case_sensitive": bool, "numeric": bool},
"scorer": {"name": <short name or dotted path>, "params": {...}, "code": <CodeIdentity>
| null}}``. The scorer decides task_success (see ``xaytune.evaluation.scorers``);
``match`` is the normalisation of the ``exact`` scorer (a scorer that declares a
``match`` parameter receives it) and is ignored by the others, yet stays in the
fingerprint. A user writes ``code: null``; binding fills in the resolved scorer's
code identity, so the bound config and its fingerprint pin the scorer's code (C3);
``code`` given and not the current code's identity is refused (``scorer-mismatch``,
by the outcome evaluator). The outcome spec selects its metrics catalog: without a
``metrics`` key it measures catalog ``xaytune.harness-metrics/v1`` (the spec's, and
the only spelling of it); ``"metrics": {"catalog": "xaytune.harness-metrics/v2",
"prices": <price table> | null}`` selects v2, whose ``cost`` is computed at those
prices (a :class:`~xaytune.models.ModelPrices`: USD per million input, cached input
and output tokens, optional prompt-size tiers). Both are in the fingerprint;
judge spec: ``{"judge_model": {provider, model, revision, parameters},
"rubric": {"text", "sha256"}, "scale": {"min", "max"}, "reference_access":
"none" | "reference", "judge_repeats": int >= 1, "judge_retries": int >= 0}``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from xaytune.core.canonical import fingerprint, sha256_digest, to_plain
from xaytune.core.errors import EvaluationError, FingerprintError
from xaytune.core.ids import is_valid_id
from xaytune.evaluation._grants import ReferenceEgressGrant
from xaytune.evaluation.metrics import CATALOG_ID, CATALOG_V2_ID
from xaytune.models.prices import ModelPrices
from xaytune.models.protocol import ModelIdentity
from xaytune.plugins import CodeIdentity

__all__ = [
    "API_VERSION",
    "JUDGE_KIND",
    "OUTCOME_KIND",
    "BoundEvaluation",
    "Disclosure",
    "EvaluationConfig",
    "EvaluationSpec",
    "EvaluatorSpec",
    "JudgeEvaluationConfig",
    "MetricsSpec",
    "OutcomeEvaluationConfig",
    "ScorerSpec",
    "config_fingerprint",
    "judge_config",
    "outcome_config",
    "resolve_config",
]

API_VERSION = "xaytune.harness-evaluation/v1alpha1"
OUTCOME_KIND = "HarnessOutcomeEvaluation"
JUDGE_KIND = "HarnessJudgeEvaluation"
Disclosure = Literal["aggregate", "per-task"]


class _Strict(BaseModel):
    # Strict: a canonical config says true, not "yes"; 3, not "3" or 3.0.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class EvaluationMetadata(_Strict):
    name: str
    disclosure: Disclosure


class MatchRule(_Strict):
    """Exact match after the declared normalisation (see ``_outcome.normalise``)."""

    strip: bool
    case_sensitive: bool
    numeric: bool


class ScorerSpec(_Strict):
    """Which scorer decides task_success: a reference (short name or dotted path), its
    parameters, and the code identity it is pinned to (None until bound)."""

    name: str
    params: dict[str, Any]
    code: CodeIdentity | None


class MetricsSpec(_Strict):
    """The metrics catalog an outcome evaluation measures, and the prices its
    ``cost`` is computed at (v2; None: cost is not recorded)."""

    catalog: Literal["xaytune.harness-metrics/v1", "xaytune.harness-metrics/v2"]
    prices: ModelPrices | None


class OutcomeSpec(_Strict):
    match: MatchRule
    scorer: ScorerSpec
    metrics: MetricsSpec | None = None

    @model_serializer(mode="wrap")
    def _canonical(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        plain = handler(self)
        if plain.get("metrics", 0) is None:
            del plain["metrics"]  # catalog v1 is written without it (as before v2 existed)
        return plain

    @property
    def catalog(self) -> str:
        """The selected catalog's id (v1 when ``metrics`` is left out)."""
        return CATALOG_ID if self.metrics is None else self.metrics.catalog

    @property
    def prices(self) -> ModelPrices | None:
        """The price table v2's cost is computed at (None: cost is not recorded)."""
        return None if self.metrics is None else self.metrics.prices


class OutcomeEvaluationConfig(_Strict):
    apiVersion: Literal["xaytune.harness-evaluation/v1alpha1"]  # k8s-style key
    kind: Literal["HarnessOutcomeEvaluation"]
    metadata: EvaluationMetadata
    spec: OutcomeSpec


class JudgeModelSpec(_Strict):
    provider: str
    model: str
    revision: str
    parameters: dict[str, Any]

    def identity(self) -> ModelIdentity:
        return ModelIdentity(**self.model_dump())


class Rubric(_Strict):
    text: str
    sha256: str


class Scale(_Strict):
    min: int
    max: int


class JudgeSpec(_Strict):
    judge_model: JudgeModelSpec
    rubric: Rubric
    scale: Scale
    reference_access: Literal["none", "reference"]
    judge_repeats: int
    judge_retries: int


class JudgeEvaluationConfig(_Strict):
    apiVersion: Literal["xaytune.harness-evaluation/v1alpha1"]
    kind: Literal["HarnessJudgeEvaluation"]
    metadata: EvaluationMetadata
    spec: JudgeSpec


EvaluationConfig = OutcomeEvaluationConfig | JudgeEvaluationConfig
_SCHEMAS: dict[str, type[BaseModel]] = {
    OUTCOME_KIND: OutcomeEvaluationConfig,
    JUDGE_KIND: JudgeEvaluationConfig,
}


def _loc(parts: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in parts)


def resolve_config(config: Mapping[str, Any] | BaseModel) -> EvaluationConfig:
    """Validate a config in canonical form and return its typed record.

    Refusals: ``non-canonical-config`` (a missing or unknown field; the message lists
    every one), ``invalid-config`` (a wrong type or value), ``rubric-digest-mismatch``.
    """
    try:
        plain = to_plain(config)
    except FingerprintError as error:
        raise EvaluationError("invalid-config", f"config is not JSON data ({error})") from None
    if not isinstance(plain, dict):
        raise EvaluationError("invalid-config", "an evaluation config is a mapping")
    if "kind" not in plain:
        raise EvaluationError("non-canonical-config", "config: missing kind")
    schema = _SCHEMAS.get(plain["kind"]) if isinstance(plain["kind"], str) else None
    if schema is None:
        raise EvaluationError(
            "invalid-config",
            f"config kind {plain['kind']!r} is not one of {', '.join(sorted(_SCHEMAS))}",
        )
    try:
        resolved = schema.model_validate(plain)
    except ValidationError as error:
        raise _refusal(error, plain) from None
    if not is_valid_id(resolved.metadata.name):
        raise EvaluationError(
            "invalid-config", f"metadata.name {resolved.metadata.name!r} is not a valid id"
        )
    if isinstance(resolved, JudgeEvaluationConfig):
        _check_judge(resolved)
    else:
        _check_metrics(resolved)
    return resolved  # type: ignore[return-value]


def _check_metrics(config: OutcomeEvaluationConfig) -> None:
    """One spelling per catalog: v1 leaves ``metrics`` out (and has no cost to price)."""
    metrics = config.spec.metrics
    if metrics is not None and metrics.catalog == CATALOG_ID:
        raise EvaluationError(
            "non-canonical-config",
            f"config {config.metadata.name!r}: spec.metrics selects {CATALOG_ID}, which is "
            f"written by leaving spec.metrics out (and prices nothing); {CATALOG_V2_ID} "
            "records cost",
        )


def _refusal(error: ValidationError, plain: dict[str, Any]) -> EvaluationError:
    metadata = plain.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    where = f"config {name!r}" if isinstance(name, str) else "config"
    missing = [_loc(e["loc"]) for e in error.errors() if e["type"] == "missing"]
    extra = [_loc(e["loc"]) for e in error.errors() if e["type"] == "extra_forbidden"]
    if missing or extra:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if extra:
            parts.append("extra " + ", ".join(extra))
        return EvaluationError(
            "non-canonical-config",
            f"{where} is not canonical (every field explicit, none unknown): " + "; ".join(parts),
        )
    first = error.errors()[0]
    return EvaluationError("invalid-config", f"{where}: {_loc(first['loc'])}: {first['msg']}")


def _check_judge(config: JudgeEvaluationConfig) -> None:
    spec, name = config.spec, config.metadata.name
    if spec.scale.min >= spec.scale.max:
        raise EvaluationError(
            "invalid-config",
            f"config {name!r}: spec.scale min {spec.scale.min} is not below max {spec.scale.max}",
        )
    if spec.judge_repeats < 1:
        raise EvaluationError(
            "invalid-config", f"config {name!r}: spec.judge_repeats {spec.judge_repeats} < 1"
        )
    if spec.judge_retries < 0:
        raise EvaluationError(
            "invalid-config", f"config {name!r}: spec.judge_retries {spec.judge_retries} < 0"
        )
    actual = sha256_digest(spec.rubric.text.encode())
    if spec.rubric.sha256 != actual:
        raise EvaluationError(
            "rubric-digest-mismatch",
            f"config {name!r}: spec.rubric.sha256 {spec.rubric.sha256} is not the digest "
            f"of spec.rubric.text ({actual})",
        )


def config_fingerprint(config: EvaluationConfig) -> str:
    """Canonical digest of the config without ``metadata.disclosure`` (only that)."""
    plain = config.model_dump(mode="json")
    del plain["metadata"]["disclosure"]
    return fingerprint(plain)


def outcome_config(
    *,
    name: str = "harness-outcome",
    disclosure: Disclosure = "aggregate",
    strip: bool = True,
    case_sensitive: bool = False,
    numeric: bool = True,
    scorer: str = "exact",
    scorer_params: dict[str, Any] | None = None,
    catalog: str = CATALOG_ID,
    prices: ModelPrices | None = None,
) -> dict[str, Any]:
    """A canonical outcome config (every field explicit) for users and the app.

    ``scorer`` is a scorer's short name or dotted path and ``scorer_params`` its
    parameters; ``code`` is left None for binding to fill in. ``catalog`` v2 (with
    ``prices``, or None to leave cost not recorded) adds ``spec.metrics``.
    """
    spec: dict[str, Any] = {
        "match": {"strip": strip, "case_sensitive": case_sensitive, "numeric": numeric},
        "scorer": {
            "name": scorer,
            "params": copy.deepcopy(scorer_params) if scorer_params is not None else {},
            "code": None,
        },
    }
    if catalog != CATALOG_ID or prices is not None:
        spec["metrics"] = {
            "catalog": catalog,
            "prices": None if prices is None else prices.model_dump(mode="json"),
        }
    return {
        "apiVersion": API_VERSION,
        "kind": OUTCOME_KIND,
        "metadata": {"name": name, "disclosure": disclosure},
        "spec": spec,
    }


def judge_config(
    *,
    judge_model: ModelIdentity,
    rubric: str,
    name: str = "harness-judge",
    disclosure: Disclosure = "aggregate",
    scale: tuple[int, int] = (1, 5),
    reference_access: Literal["none", "reference"] = "none",
    judge_repeats: int = 1,
    judge_retries: int = 2,
) -> dict[str, Any]:
    """A canonical judge config: pins the judge identity and the rubric's digest."""
    return {
        "apiVersion": API_VERSION,
        "kind": JUDGE_KIND,
        "metadata": {"name": name, "disclosure": disclosure},
        "spec": {
            "judge_model": copy.deepcopy(judge_model.model_dump(mode="json")),
            "rubric": {"text": rubric, "sha256": sha256_digest(rubric.encode())},
            "scale": {"min": scale[0], "max": scale[1]},
            "reference_access": reference_access,
            "judge_repeats": judge_repeats,
            "judge_retries": judge_retries,
        },
    }


class EvaluatorSpec(BaseModel):
    """Which evaluator (``harness-outcome`` | ``harness-judge``) and its config."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    config: dict[str, Any]


class EvaluationSpec(BaseModel):
    """An evaluation to bind: the evaluator spec and, for a judge that sends
    references, the host-issued :class:`ReferenceEgressGrant`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evaluator: EvaluatorSpec
    grant: ReferenceEgressGrant | None = None


class BoundEvaluation(BaseModel):
    """What :func:`bind_evaluation` returns: a resolved, prepared evaluation.

    ``config`` is the canonical config (disclosure included); ``fingerprint``
    excludes the disclosure. ``grant`` is the grant ``prepare()`` accepted.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    evaluator: str
    kind: str
    determinism: Literal["DETERMINISTIC", "STOCHASTIC"]
    config: dict[str, Any]
    fingerprint: str
    disclosure: Disclosure
    grant: ReferenceEgressGrant | None = None

    def resolved(self) -> EvaluationConfig:
        """The config re-resolved; refused if it no longer has this fingerprint."""
        config = resolve_config(self.config)
        if config_fingerprint(config) != self.fingerprint or (
            config.metadata.disclosure != self.disclosure
        ):
            raise EvaluationError(
                "fingerprint-mismatch",
                f"bound evaluation {self.evaluator}: config is not the one that was bound "
                f"({self.fingerprint})",
            )
        return config
