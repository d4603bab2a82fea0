"""Input records, the comparison spec and replicate summaries (spec: Comparing two
candidates). Re-exported by :mod:`xaytune.comparison.compare`."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from xaytune.comparison.methods import PAIRED_DIFFERENCE, SEQUENTIAL_PAIRED, Method
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.measurement import EvaluationResult, MetricResult, TaskObservation
from xaytune.core.errors import ComparisonError

__all__ = [
    "SUMMARY_METHOD",
    "CandidateRuns",
    "CandidateSummary",
    "ComparisonSpec",
    "MetricSummary",
    "ObjectiveMetric",
    "ReplicateRuns",
    "RunValue",
]

SUMMARY_METHOD = "replicate-mean/v1"

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _refuse_non_finite(record: MetricResult | TaskObservation, where: str) -> None:
    """NaN and infinity are not measurements: refused here, before any arithmetic."""
    for field in ("value", "judge_spread"):
        number = getattr(record, field)
        if number is not None and not math.isfinite(number):
            raise ComparisonError("non-finite", f"{where} has {field} {number}")


class ReplicateRuns(BaseModel):
    """One replicate of one candidate: every evaluation of the run under one seed.

    ``facets`` are the declared execution facets (C4: model identity and parameters,
    runtime, toolbox version, ...). ``timing_environment`` names where time was
    measured; time metrics are compared only under one declared environment.
    ``task_observations`` is optional restricted material, per metric key, used only
    by the descriptive task-level view and the restricted per-task part of a report.
    """

    model_config = _FROZEN

    seed: int
    suite_digest: str
    assignment_digest: str
    evaluations: tuple[EvaluationResult, ...]
    facets: dict[str, Any] = Field(default_factory=dict)
    timing_environment: str | None = None
    task_observations: dict[str, tuple[TaskObservation, ...]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> ReplicateRuns:
        # A record that contradicts itself is refused at the boundary, never repaired.
        where = f"replicate seed {self.seed}"
        names: set[str] = set()
        keys: set[str] = set()
        for evaluation in self.evaluations:
            for field in ("seed", "suite_digest", "assignment_digest"):
                if getattr(evaluation, field) != getattr(self, field):
                    raise ComparisonError(
                        "replicate-mismatch",
                        f"{where}: evaluation {evaluation.evaluator} has {field} "
                        f"{getattr(evaluation, field)!r}, the replicate "
                        f"{getattr(self, field)!r}",
                    )
            if evaluation.evaluator in names:
                raise ComparisonError(
                    "duplicate-evaluator", f"{where}: evaluator {evaluation.evaluator} twice"
                )
            names.add(evaluation.evaluator)
            for result in evaluation.metrics:
                _refuse_non_finite(result, f"{where}: metric {result.key}")
                if result.key in keys:
                    raise ComparisonError(
                        "duplicate-metric", f"{where}: metric {result.key} reported twice"
                    )
                keys.add(result.key)
        for key, observations in self.task_observations.items():
            if key not in keys:
                raise ComparisonError(
                    "unknown-metric",
                    f"{where}: task observations for {key}, which no evaluation measured",
                )
            for observation in observations:
                _refuse_non_finite(observation, f"{where}: task {observation.task_id} of {key}")
            task_ids = [observation.task_id for observation in observations]
            if len(set(task_ids)) != len(task_ids):
                raise ComparisonError(
                    "duplicate-task", f"{where}: a task is observed twice for metric {key}"
                )
        canonical_bytes(self.facets)  # facets are JSON data, or refused here (C4 compares them)
        return self

    def metric(self, key: str) -> tuple[MetricResult, EvaluationResult] | None:
        """The run-level result for ``key`` and the evaluation that produced it."""
        for evaluation in self.evaluations:
            result = evaluation.metric(key)
            if result is not None:
                return result, evaluation
        return None

    def metric_keys(self) -> set[str]:
        """Every metric key measured in this replicate."""
        return {result.key for evaluation in self.evaluations for result in evaluation.metrics}


class CandidateRuns(BaseModel):
    """A candidate harness and its replicates, one per seed."""

    model_config = _FROZEN

    name: str
    harness_fingerprint: str
    harness_config: dict[str, Any] = Field(default_factory=dict)
    replicates: tuple[ReplicateRuns, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _json_config(self) -> CandidateRuns:
        canonical_bytes(self.harness_config)  # diffed and compared as JSON data
        return self


class ObjectiveMetric(BaseModel):
    """One objective: a metric key, the direction that is better, the smallest effect
    worth acting on (in the metric's unit)."""

    model_config = _FROZEN

    metric: str
    direction: Literal["maximize", "minimize"]
    min_effect: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)


class ComparisonSpec(BaseModel):
    """The objectives (never collapsed into one score), the rule's k, the disclosure,
    and whether to measure the A/A rate by simulation (``calibrate``)."""

    model_config = _FROZEN

    objectives: tuple[ObjectiveMetric, ...] = Field(min_length=1)
    k: float = Field(default=2.0, gt=0.0, allow_inf_nan=False)
    # aggregate (default): per-task facts stay in the restricted part of a report.
    disclosure: Literal["aggregate", "per-task"] = "aggregate"
    # Descriptive only: add the library's A/A Monte Carlo on the observed spread
    # (report.calibration.measured). Never changes a verdict.
    calibrate: bool = False
    # The declared method (xaytune.comparison.methods): the spec's rule by default.
    method: Method = PAIRED_DIFFERENCE
    # task-paired/v1 and sequential-paired/v1: the false-favor rate they hold to.
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0, allow_inf_nan=False)
    # sequential-paired/v1: per metric, the largest possible |per-task difference|
    # (task_success: 1). An objective on another metric must declare one.
    bounds: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _distinct_objectives(self) -> ComparisonSpec:
        metrics = [objective.metric for objective in self.objectives]
        if len(set(metrics)) != len(metrics):
            raise ValueError(f"an objective metric is listed twice: {metrics}")
        for metric, bound in self.bounds.items():
            if not (math.isfinite(bound) and bound > 0):
                raise ValueError(f"bounds.{metric}: {bound} is not a positive number")
        if self.method == SEQUENTIAL_PAIRED:
            for objective in self.objectives:
                if self.bound(objective.metric) is None:
                    raise ValueError(
                        f"method {SEQUENTIAL_PAIRED}: objective {objective.metric} needs a "
                        f"declared bound (bounds.{objective.metric}: the largest possible "
                        "per-task difference)"
                    )
        return self

    @model_serializer(mode="wrap")
    def _unchanged_by_default(self, handler: Any) -> dict[str, Any]:
        # A spec of the spec's rule serialises exactly as it did before methods
        # existed, so its reports and fingerprints are unchanged.
        data = handler(self)
        if self.method == PAIRED_DIFFERENCE:
            for key in ("method", "alpha", "bounds"):
                data.pop(key, None)
        return data

    def bound(self, metric: str) -> float | None:
        """The declared bound of a per-task difference of ``metric``: 1 for the 0/1
        task_success unless declared otherwise; None when undeclared."""
        if metric in self.bounds:
            return self.bounds[metric]
        return 1.0 if metric == "task_success" else None

    def objective(self, key: str) -> ObjectiveMetric | None:
        """The objective on metric ``key``, if any."""
        for objective in self.objectives:
            if objective.metric == key:
                return objective
        return None


class RunValue(BaseModel):
    """One replicate's run-level value of a metric, or its absence with reasons."""

    model_config = _FROZEN

    seed: int
    value: float | None
    n_tasks: int
    # When ``value`` is None: per reason, how many tasks were absent; a replicate that
    # did not measure the metric at all counts once under "not-measured".
    absent_reasons: dict[str, int] = Field(default_factory=dict)
    judge_spread: float | None = None


class MetricSummary(BaseModel):
    """replicate-mean/v1 for one metric of one candidate.

    ``execution_se`` is the spread of the run values across replicates (sample sd /
    sqrt(R)); ``judge_spread`` is the judge's own spread (judge metrics only), kept
    apart. With one replicate both sd and execution_se are unknown (None), not 0.
    A replicate without a run value makes ``mean`` None, with the reasons summed.
    """

    model_config = _FROZEN

    metric: str
    unit: str | None  # None only when no replicate measured the metric
    reference_derived: bool
    judge: bool
    replicates: int
    runs: tuple[RunValue, ...]
    mean: float | None
    sd: float | None
    execution_se: float | None
    judge_spread: float | None
    absent_reasons: dict[str, int] = Field(default_factory=dict)

    @property
    def present(self) -> bool:
        """True when every replicate has a run value."""
        return self.mean is not None


class CandidateSummary(BaseModel):
    """Every metric of one candidate summarized across its replicates."""

    model_config = _FROZEN

    method: Literal["replicate-mean/v1"] = SUMMARY_METHOD
    candidate: str
    harness_fingerprint: str
    seeds: tuple[int, ...]
    metrics: dict[str, MetricSummary]
