"""Measurement records shared by evaluation (which produces them) and comparison.

A per-task observation is a value or an absence with a reason; zero never stands in
for an absence and None never stands in for zero (spec: Metrics and absences).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "ABSENCE_REASONS",
    "AbsenceReason",
    "EvaluationResult",
    "MetricResult",
    "MetricSlice",
    "TaskObservation",
]

AbsenceReason = Literal[
    "no-attested-result",
    "unscored-cancelled",
    "judge-failed",
    "not-recorded",
    "not-applicable",
    "spend-unaccounted",
]
ABSENCE_REASONS: tuple[AbsenceReason, ...] = (
    "no-attested-result",
    "unscored-cancelled",
    "judge-failed",
    "not-recorded",
    "not-applicable",
    "spend-unaccounted",
)

MetricSlice = Literal["all-tasks", "successful-tasks"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class TaskObservation(BaseModel):
    """One task's observation of one metric: exactly one of ``value`` and ``absence``."""

    model_config = _FROZEN

    task_id: str
    position: int
    value: float | None = None
    absence: AbsenceReason | None = None
    # Judge metrics: the spread (sample sd) across judge repeats for this task;
    # None when there was a single repeat (unknown, not zero).
    judge_spread: float | None = None

    @model_validator(mode="after")
    def _value_xor_absence(self) -> TaskObservation:
        if (self.value is None) == (self.absence is None):
            raise ValueError(
                f"task {self.task_id}: an observation is a value or an absence, exactly one"
            )
        return self


class MetricResult(BaseModel):
    """A run-level value of one metric, or its absence with the reasons counted."""

    model_config = _FROZEN

    metric: str
    unit: str
    reference_derived: bool
    slice: MetricSlice = "all-tasks"
    n_tasks: int
    value: float | None
    # When ``value`` is None: how many tasks were absent, per reason.
    absent_reasons: dict[str, int] = {}
    # Judge metrics: mean over tasks of the per-task judge spread; None if unknown.
    judge_spread: float | None = None

    @model_validator(mode="after")
    def _absent_has_reasons(self) -> MetricResult:
        if self.value is None and not self.absent_reasons:
            raise ValueError(f"metric {self.metric}: an absent run value needs its reasons")
        if self.value is not None and self.absent_reasons:
            raise ValueError(f"metric {self.metric}: a present run value has no absences")
        return self

    @property
    def key(self) -> str:
        """``metric`` for the all-tasks slice, ``metric@successful-tasks`` otherwise."""
        return self.metric if self.slice == "all-tasks" else f"{self.metric}@{self.slice}"


class EvaluationResult(BaseModel):
    """What one evaluator measured on one published subject (run-level only)."""

    model_config = _FROZEN

    evaluator: str
    evaluator_fingerprint: str
    determinism: Literal["DETERMINISTIC", "STOCHASTIC"]
    catalog: str = "xaytune.harness-metrics/v1"
    subject_digest: str
    suite_digest: str
    assignment_digest: str
    seed: int
    metrics: tuple[MetricResult, ...]

    def metric(self, key: str) -> MetricResult | None:
        """The result for ``key`` (``"task_success"`` or ``"x@successful-tasks"``)."""
        for result in self.metrics:
            if result.key == key:
                return result
        return None
