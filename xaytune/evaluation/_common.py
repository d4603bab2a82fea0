"""What every harness evaluator shares: the protocol, the measurement, binding checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.domain.measurement import MetricResult
from xaytune.evaluation.config import (
    BoundEvaluation,
    EvaluationConfig,
    EvaluationSpec,
    resolve_config,
)
from xaytune.evaluation.metrics import CATALOG_ID, Column
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.store import HarnessEvidenceStore

__all__ = [
    "Determinism",
    "EvaluatorBase",
    "HarnessEvaluator",
    "JudgeExchange",
    "Measurement",
    "ScorerReason",
]

Determinism = Literal["DETERMINISTIC", "STOCHASTIC"]


class JudgeExchange(BaseModel):
    """RESTRICTED: one judge call, its request and its reply (or failure).

    ``messages`` carry the candidate answer and, with reference access, the
    reference: exchanges go to the restricted report only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    position: int
    repeat: int
    attempt: int
    sampling_key: str
    messages: tuple[dict[str, str], ...]
    reply: str | None
    error: str | None
    score: int | None


class ScorerReason(BaseModel):
    """RESTRICTED: why the outcome scorer decided as it did on one task (``Score.reason``,
    e.g. a benchmark checker's error): it tells what the reference is, so it goes to
    the restricted report only."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Measurement:
    """What an evaluator measured on one verified run (before disclosure).

    ``columns`` are the per-task observations of each all-tasks metric; ``results``
    the run-level results (all-tasks and successful-tasks slices); ``catalog`` the
    metrics catalog they follow.
    """

    task_ids: tuple[str, ...]
    columns: tuple[Column, ...]
    results: tuple[MetricResult, ...]
    attested: int
    exchanges: tuple[JudgeExchange, ...] = ()
    scorer_reasons: tuple[ScorerReason, ...] = ()
    catalog: str = CATALOG_ID


@runtime_checkable
class HarnessEvaluator(Protocol):
    """An evaluator of harness runs (``harness-outcome``, ``harness-judge``)."""

    name: ClassVar[str]
    kind: ClassVar[str]
    determinism: ClassVar[Determinism]
    source: SuiteSource

    def supports(self, spec: EvaluationSpec | BoundEvaluation) -> bool: ...

    def resolve(self, config: dict[str, Any]) -> EvaluationConfig: ...

    def prepare(self, bound: BoundEvaluation) -> BoundEvaluation: ...

    def check_execution(self, bound: BoundEvaluation) -> EvaluationConfig: ...

    def measure(
        self,
        bound: BoundEvaluation,
        evidence: HarnessRunEvidence,
        *,
        seed: int,
        store: HarnessEvidenceStore | None = None,
    ) -> Measurement: ...


class EvaluatorBase:
    """supports / resolve shared by the evaluators."""

    name: ClassVar[str]
    kind: ClassVar[str]
    determinism: ClassVar[Determinism]
    source: SuiteSource

    def supports(self, spec: EvaluationSpec | BoundEvaluation) -> bool:
        """True for a spec naming this evaluator, or a bound config of this kind."""
        if isinstance(spec, EvaluationSpec):
            return spec.evaluator.name == self.name
        return spec.evaluator == self.name and spec.kind == self.kind

    def resolve(self, config: dict[str, Any]) -> EvaluationConfig:
        """The canonical config, typed (refuses non-canonical and invalid configs)."""
        return resolve_config(config)
