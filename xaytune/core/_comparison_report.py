"""The comparison report (paired-difference/v1) and its parts.

A report has a released part (comparability, per-metric summaries, paired
differences, verdicts, descriptive statistics) and a ``restricted`` part holding
per-task facts. ``report.released()`` is what may leave the researcher's machine:
under the default ``aggregate`` disclosure it drops the restricted part and every
metric the spec withholds (spec: Disclosure and references).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from xaytune.core._comparison_records import ComparisonSpec, MetricSummary, ObjectiveMetric

__all__ = [
    "COMPARISON_METHOD",
    "CandidateRef",
    "Comparability",
    "ComparisonReport",
    "ConditionFailure",
    "ConfigChange",
    "Descriptive",
    "Difference",
    "Interval",
    "MetricComparison",
    "PassHatK",
    "Relation",
    "RestrictedComparison",
    "RunInterval",
    "SeedDifference",
    "SeedTaskChanges",
    "SuiteRef",
    "TaskChangeCount",
    "TaskDifference",
    "TaskPairedView",
    "TimingCheck",
    "Verdict",
    "VerdictReason",
]

COMPARISON_METHOD = "paired-difference/v1"

_FROZEN = ConfigDict(frozen=True, extra="forbid")

Verdict = Literal["favors-a", "favors-b", "inconclusive", "not-compared"]
Relation = Literal["favors-a", "favors-b", "trade-off", "inconclusive", "not-comparable"]
VerdictReason = Literal[
    "exceeds-threshold",  # |mean| > max(min_effect, k·se): favors a side
    "within-threshold",  # |mean| <= the threshold (strict ">" to favor): inconclusive
    "too-few-replicates",  # R < 3: always inconclusive
    "absent",  # a replicate has no run value on a side: never imputed
    "not-comparable",  # a condition C1–C4 failed: no verdicts
    "timing-environment-differs",  # time metric, the sides' environments differ
    "timing-environment-undeclared",  # time metric, a replicate declares none
    "not-an-objective",  # differences reported for the reader, no verdict
]
TimingStatus = Literal["same", "timing-environment-differs", "timing-environment-undeclared"]


class CandidateRef(BaseModel):
    """Which candidate a side of the report is."""

    model_config = _FROZEN

    name: str
    harness_fingerprint: str


class SuiteRef(BaseModel):
    """The benchmark cohort the comparison was asked about."""

    model_config = _FROZEN

    name: str
    digest: str


class ConfigChange(BaseModel):
    """One dotted path at which two configs differ (None on the side that lacks it)."""

    model_config = _FROZEN

    path: str
    change: Literal["added", "removed", "changed"]
    a: Any = None
    b: Any = None


class Difference(BaseModel):
    """What differed for a failed condition: the distinct values seen on each side.

    ``a`` and ``b`` list each side's distinct values across its replicates (more than
    one when a side disagrees with itself); None in a list means "not declared" or
    "not run". ``suite`` is the suite argument's digest (C1 only).
    """

    model_config = _FROZEN

    item: str
    a: tuple[Any, ...]
    b: tuple[Any, ...]
    suite: str | None = None


class ConditionFailure(BaseModel):
    """One failed comparability condition."""

    model_config = _FROZEN

    condition: Literal["C1", "C2", "C3", "C4"]
    reason: Literal["suite-differs", "assignment-differs", "evaluator-differs", "facets-differ"]
    differences: tuple[Difference, ...]


class TimingCheck(BaseModel):
    """Whether time metrics can be compared: one declared environment on both sides."""

    model_config = _FROZEN

    status: TimingStatus
    environment: str | None
    a: tuple[str | None, ...]
    b: tuple[str | None, ...]


class Comparability(BaseModel):
    """C1–C4: every failed condition, and the key of what was held equal.

    ``comparison_key`` fingerprints the suite digest, the seeds with their assignment
    digests, the evaluation fingerprints, the facets and the shared timing
    environment; None when a condition failed (nothing was held equal).
    """

    model_config = _FROZEN

    comparable: bool
    failures: tuple[ConditionFailure, ...]
    comparison_key: str | None
    timing: TimingCheck


class SeedDifference(BaseModel):
    """One seed's paired values and their oriented difference (positive favours A)."""

    model_config = _FROZEN

    seed: int
    a: float
    b: float
    difference: float


class Interval(BaseModel):
    """A two-sided interval at ``level``."""

    model_config = _FROZEN

    low: float
    high: float
    level: float = 0.95


class RunInterval(BaseModel):
    """Wilson score interval of one run's task_success (successes / n)."""

    model_config = _FROZEN

    side: Literal["a", "b"]
    seed: int
    successes: int
    n: int
    low: float
    high: float
    level: float = 0.95


class PassHatK(BaseModel):
    """pass^k (tau-bench): mean over tasks of C(c, k) / C(n, k)."""

    model_config = _FROZEN

    k: int
    value: float


class TaskPairedView(BaseModel):
    """Task-level paired view over (seed, task) differences, clustered by task id.

    ``clustered_se`` follows Miller (2024); ``independent_se`` treats every
    observation as independent, for contrast. Values are None when an observation
    is absent on a side (reasons counted) or when fewer than two tasks exist.
    """

    model_config = _FROZEN

    n_observations: int
    n_tasks: int
    n_seeds: int
    mean_difference: float | None
    clustered_se: float | None
    independent_se: float | None
    absent_reasons: dict[str, int] = Field(default_factory=dict)


class Descriptive(BaseModel):
    """For the reader only: nothing here changes a verdict."""

    model_config = _FROZEN

    label: Literal["descriptive"] = "descriptive"
    # t-based interval for the mean paired difference (df = R − 1); None for R < 2.
    mean_interval: Interval | None = None
    # Two-sided t coverage that ±k·se carries at this R (k = 2, R = 3: ≈ 0.8165).
    threshold_coverage: float | None = None
    # Pearson correlation of the two sides' run values across seeds.
    correlation: float | None = None
    # k·se: the smallest mean difference the rule could call at this se.
    minimum_detectable_difference: float | None = None
    # Smallest R (>= 3) with k·sd/sqrt(R) <= min_effect; None if min_effect is 0.
    replicates_needed: int | None = None
    task_view: TaskPairedView | None = None
    wilson: tuple[RunInterval, ...] = ()
    pass_hat_k_a: tuple[PassHatK, ...] | None = None
    pass_hat_k_b: tuple[PassHatK, ...] | None = None


class MetricComparison(BaseModel):
    """Both summaries of one metric, its paired differences and its verdict."""

    model_config = _FROZEN

    metric: str
    unit: str | None
    reference_derived: bool
    time_metric: bool
    objective: ObjectiveMetric | None
    # How differences are oriented: "b-minus-a" for a minimized objective, so a
    # positive difference always favours A.
    orientation: Literal["a-minus-b", "b-minus-a"]
    a: MetricSummary
    b: MetricSummary
    differences: tuple[SeedDifference, ...]
    mean: float | None
    se: float | None
    threshold: float | None
    verdict: Verdict
    reason: VerdictReason
    descriptive: Descriptive


class TaskDifference(BaseModel):
    """One task's oriented differences across the seeds that ran it."""

    model_config = _FROZEN

    task_id: str
    seeds: tuple[int, ...]
    differences: tuple[float, ...]
    mean_difference: float


class SeedTaskChanges(BaseModel):
    """Under one seed: tasks A solved and B did not, and the reverse."""

    model_config = _FROZEN

    seed: int
    improvements: tuple[str, ...]
    regressions: tuple[str, ...]


class TaskChangeCount(BaseModel):
    """Aggregated over seeds: how often a task was an improvement or a regression."""

    model_config = _FROZEN

    task_id: str
    paired_seeds: int
    improvements: int
    regressions: int


class RestrictedComparison(BaseModel):
    """RESTRICTED: per-task, reference-derived facts (released only per-task).

    Which tasks A solved and B did not (and the reverse), and the per-task
    differences of every metric with task observations.
    """

    model_config = _FROZEN

    label: Literal["restricted"] = "restricted"
    task_changes_by_seed: tuple[SeedTaskChanges, ...] = ()
    task_changes: tuple[TaskChangeCount, ...] = ()
    task_differences: dict[str, tuple[TaskDifference, ...]] = Field(default_factory=dict)


def _withheld_under_aggregate(comparison: MetricComparison) -> bool:
    # spec: Disclosure — under aggregate, every successful-tasks slice is withheld,
    # and so is a reference-derived run value over a single task.
    if comparison.metric.endswith("@successful-tasks"):
        return True
    single_task = any(
        run.n_tasks == 1 for summary in (comparison.a, comparison.b) for run in summary.runs
    )
    return comparison.reference_derived and single_task


class ComparisonReport(BaseModel):
    """paired-difference/v1 over two candidates. The objective vector is never
    collapsed into one score; ``claim`` is always "exploratory"."""

    model_config = _FROZEN

    method: Literal["paired-difference/v1"] = COMPARISON_METHOD
    claim: Literal["exploratory"] = "exploratory"
    a: CandidateRef
    b: CandidateRef
    suite: SuiteRef
    spec: ComparisonSpec
    seeds: tuple[int, ...]
    comparability: Comparability
    metrics: dict[str, MetricComparison]
    relation: Relation
    config_diff: tuple[ConfigChange, ...]
    # The two harnesses are identical (config and fingerprint): only the seeds'
    # execution differs, so any "difference" is execution noise.
    seed_only_difference: bool
    # "full" holds everything; "released" is the output of released().
    view: Literal["full", "released"] = "full"
    # Metric keys dropped from a released view under aggregate disclosure.
    withheld: tuple[str, ...] = ()
    restricted: RestrictedComparison | None = None

    def released(self) -> ComparisonReport:
        """The report with restricted content removed per ``spec.disclosure``.

        per-task: everything is released. aggregate: the restricted part is dropped,
        and so is every successful-tasks slice and every reference-derived metric
        with a run over a single task (listed in ``withheld``).
        """
        if self.view == "released":
            return self
        if self.spec.disclosure == "per-task":
            return self.model_copy(update={"view": "released"})
        withheld = tuple(
            key for key, comparison in self.metrics.items() if _withheld_under_aggregate(comparison)
        )
        metrics = {key: value for key, value in self.metrics.items() if key not in withheld}
        return self.model_copy(
            update={
                "view": "released",
                "restricted": None,
                "metrics": metrics,
                "withheld": withheld,
            }
        )
