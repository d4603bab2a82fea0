"""The comparison report (paired-difference/v1) and its parts.

A report has a released part (comparability, per-metric summaries, paired
differences, verdicts, descriptive statistics) and a ``restricted`` part holding
per-task facts. ``report.released()`` is what may leave the researcher's machine:
under the default ``aggregate`` disclosure it drops the restricted part and every
metric the spec withholds (spec: Disclosure and references).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from xaytune.comparison.method_records import Look, Looks, MethodDetail
from xaytune.comparison.methods import PAIRED_DIFFERENCE, Method
from xaytune.comparison.records import ComparisonSpec, MetricSummary, ObjectiveMetric
from xaytune.comparison.restricted import (
    RestrictedComparison,
    SeedTaskChanges,
    TaskChangeCount,
    TaskDifference,
)

__all__ = [
    "AA_METHOD",
    "COMPARISON_METHOD",
    "Calibration",
    "CandidateRef",
    "Comparability",
    "ComparisonReport",
    "ConditionFailure",
    "ConfigChange",
    "Descriptive",
    "Difference",
    "Interval",
    "Look",
    "Looks",
    "MeasuredCalibration",
    "MethodDetail",
    "MetricComparison",
    "ObjectiveCalibration",
    "PassHatK",
    "Power",
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
    "withheld_under_aggregate",
]

COMPARISON_METHOD = "paired-difference/v1"
# The library's A/A Monte Carlo (see xaytune.comparison.calibration).
AA_METHOD = "normal-aa/v1"

_FROZEN = ConfigDict(frozen=True, extra="forbid")

Verdict = Literal["favors-a", "favors-b", "inconclusive", "not-compared"]
Relation = Literal["favors-a", "favors-b", "trade-off", "inconclusive", "not-comparable"]
VerdictReason = Literal[
    "exceeds-threshold",  # |mean| > max(min_effect, k·se): favors a side
    "within-threshold",  # |mean| <= the threshold (strict ">" to favor): inconclusive
    "no-variance",  # se = 0 and min_effect = 0: a constant difference is no evidence
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


class Power(BaseModel):
    """How often the rule calls a true difference at this R, at an upper confidence
    bound of the sd of the per-seed differences (normal differences; exact formula in
    ``xaytune.comparison.calibration.rule_power``). Descriptive only.

    A true difference of exactly ``min_effect`` is called less than half of the time
    at any R (the mean must exceed ``min_effect``), so replicates are planned for
    ``planning_effect`` = 2·min_effect.
    """

    model_config = _FROZEN

    power_target: float = 0.8
    # Observed sample sd of the per-seed differences.
    sd: float
    # The sd_level one-sided upper confidence bound of σ (chi-square) at which every
    # figure below is computed (xaytune.comparison.power.spread_upper); None in
    # reports written before it (the observed sd was then taken as the true one).
    sd_upper: float | None = None
    sd_level: float | None = None
    # Fewer than 5 replicates: the spread, hence every figure below, is rough.
    rough: bool = False
    # k·se: the rule's noise bar at this R (once "minimum detectable difference").
    k_se: float
    # P(the rule calls it) when the true difference is k·se: about 0.58 at R = 3 for
    # min_effect 0, 0.5 for large R — not a "detectable" difference.
    power_at_k_se: float
    # P(the rule calls it) when the true difference is min_effect; None for 0.
    power_at_min_effect: float | None
    # The true difference the rule calls with probability power_target at this R.
    difference_for_power: float
    # 2·min_effect; None when min_effect is 0 (nothing to plan for).
    planning_effect: float | None
    # Smallest R >= 3 with power_target at planning_effect; None when min_effect is 0
    # or beyond 100,000 replicates.
    replicates_for_power: int | None


class Descriptive(BaseModel):
    """For the reader only: nothing here changes a verdict."""

    model_config = _FROZEN

    label: Literal["descriptive"] = "descriptive"
    # t-based interval for the mean paired difference (df = R − 1); None for R < 2.
    mean_interval: Interval | None = None
    # The interval contains 0: a verdict beside it names a side the 95% interval
    # does not (k·se is narrower than the interval below R ≈ 6 at k = 2).
    interval_spans_zero: bool | None = None
    # Two-sided t coverage that ±k·se carries at this R (k = 2, R = 3: ≈ 0.8165).
    threshold_coverage: float | None = None
    # Pearson correlation of the two sides' run values across seeds.
    correlation: float | None = None
    # Objectives with a spread across seeds only.
    power: Power | None = None
    task_view: TaskPairedView | None = None
    wilson: tuple[RunInterval, ...] = ()
    pass_hat_k_a: tuple[PassHatK, ...] | None = None
    pass_hat_k_b: tuple[PassHatK, ...] | None = None


AAModel = Literal["student-t", "binomial-lattice"]


class ObjectiveCalibration(BaseModel):
    """How often one objective names a side when A and B are the same harness.

    ``student-t``: 2·P(T_{R−1} > k), exact for normal per-seed differences with
    min_effect 0 and an upper bound with a positive one. ``binomial-lattice``
    (task_success, R small enough to enumerate): exact when every task of every run
    succeeds independently with the pooled rate ``success_rate`` on ``n_tasks``
    tasks, this objective's min_effect included; success rates on few tasks take few
    values, which makes a tiny se (and a t-based call) rarer than normal theory says;
    tasks of different difficulty make it rarer still. ``measured``: the library's
    simulation (``comparison.calibrate``), None without it or without a spread.
    """

    model_config = _FROZEN

    metric: str
    rate: float
    model: AAModel
    n_tasks: int | None = None
    success_rate: float | None = None
    measured: float | None = None


class MeasuredCalibration(BaseModel):
    """The library's A/A simulation on this comparison's observed spread
    (``comparison.calibrate``): ``draws`` comparisons of a harness with itself whose
    per-seed differences are normal with the observed covariance across objectives
    (rounded to the task lattice for task_success), decided by the rule with each
    objective's min_effect; the generator is seeded from ``seed_digest`` (a digest of
    the spec and the per-seed differences), so the figures are a function of the
    records. Per objective in ``Calibration.objectives[].measured``. Under aggregate
    disclosure an objective the released view withholds is not simulated (its spread
    would show through), and ``relation`` is over the others."""

    model_config = _FROZEN

    method: Literal["normal-aa/v1"] = AA_METHOD
    draws: int
    seed_digest: str
    # The share of draws in which at least one objective names a side.
    relation: float


class Calibration(BaseModel):
    """What the rule says when there is nothing to find (A/A: the same harness on
    both sides), for this comparison's R, k and objectives. Descriptive only.

    ``objectives`` lists those the rule decided (an absent or not-compared objective
    names no side); ``t_rate`` = 2·P(T_{R−1} > k) (0 below three replicates). With
    per-objective rates p_i, the relation is not "inconclusive" with probability
    ``relation_rate_independent`` = 1 − Π(1 − p_i) when the objectives are
    independent, and within [max p_i, min(1, Σ p_i)] whatever their dependence.
    """

    model_config = _FROZEN

    label: Literal["descriptive"] = "descriptive"
    replicates: int
    k: float
    t_rate: float
    objectives: tuple[ObjectiveCalibration, ...]
    relation_rate_independent: float
    relation_rate_low: float
    relation_rate_high: float
    assumption: str = (
        "per-seed differences independent across seeds (normal, or binomial task "
        "successes); the independent figure also assumes independent objectives"
    )
    measured: MeasuredCalibration | None = None

    def objective(self, metric: str) -> ObjectiveCalibration | None:
        """The calibration of objective ``metric``, if the rule decided it."""
        for objective in self.objectives:
            if objective.metric == metric:
                return objective
        return None


class MetricComparison(BaseModel):
    """Both summaries of one metric, its paired differences and its verdict (under
    a method other than the spec's rule, ``method_detail`` says how it was decided)."""

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
    method_detail: MethodDetail | None = None

    @model_serializer(mode="wrap")
    def _unchanged_by_default(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if self.method_detail is None:
            data.pop("method_detail", None)  # the spec's rule: bytes as before methods
        return data


def withheld_under_aggregate(comparison: MetricComparison) -> bool:
    """Whether the released view drops this metric under aggregate disclosure."""
    # spec: Disclosure — under aggregate, every successful-tasks slice is withheld,
    # and so is a reference-derived run value over a single task.
    if comparison.metric.endswith("@successful-tasks"):
        return True
    single_task = any(
        run.n_tasks == 1 for summary in (comparison.a, comparison.b) for run in summary.runs
    )
    return comparison.reference_derived and single_task


class ComparisonReport(BaseModel):
    """The comparison of two candidates under ``method`` (paired-difference/v1 unless
    declared). The objective vector is never collapsed into one score; ``claim`` is
    always "exploratory"."""

    model_config = _FROZEN

    # The declared method (spec.method): paired-difference/v1 unless declared.
    method: Method = PAIRED_DIFFERENCE
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
    # The two harnesses are identical but for their names: only the seeds'
    # execution differs, so any "difference" is execution noise (an A/A comparison).
    seed_only_difference: bool
    # A/A rates for this R, k and these objectives; None when not comparable.
    calibration: Calibration | None = None
    # "full" holds everything; "released" is the output of released().
    view: Literal["full", "released"] = "full"
    # Metric keys dropped from a released view under aggregate disclosure.
    withheld: tuple[str, ...] = ()
    restricted: RestrictedComparison | None = None
    # The looks at the tree so far, when this is not its first (None: the first).
    looks: Looks | None = None

    @model_serializer(mode="wrap")
    def _unchanged_by_default(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if self.looks is None:
            data.pop("looks", None)  # a first look's report: bytes as before looks
        return data

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
            key for key, comparison in self.metrics.items() if withheld_under_aggregate(comparison)
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
