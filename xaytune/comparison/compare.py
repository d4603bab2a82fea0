"""Summarize and compare two harness candidates on a pinned benchmark.

spec: Comparing two candidates. ``summarize`` is replicate-mean/v1; ``compare`` is
paired-difference/v1: per objective, the per-seed differences d_s (oriented so a
positive value favours A) are called for A when ``mean(d) > max(min_effect, k·se)``,
for B when ``mean(d) < −max(min_effect, k·se)``, and inconclusive otherwise; fewer
than three replicates are always inconclusive. A difference is a provisional
direction for what to try next, never a statistical claim: ``claim`` is always
"exploratory", and the objective vector is never collapsed into one score.

Usage::

    report = compare(a, b, ComparisonSpec(objectives=(
        ObjectiveMetric(metric="task_success", direction="maximize", min_effect=0.05),
    )), suite)
    report.relation            # favors-a, favors-b, trade-off, inconclusive, not-comparable
    report.released()          # what may be shown, per the spec's disclosure
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from xaytune.comparison import stats as stats
from xaytune.comparison.calibration import calibrate, lattice_counts
from xaytune.comparison.conditions import (
    check_conditions,
    check_pairing,
    check_timing,
    comparison_key,
    config_diff,
    same_harness,
)
from xaytune.comparison.decide import decide_by_method
from xaytune.comparison.delegate import (
    SuiteName,
    asked_delegate,
    compare_ahead,
    set_compare_delegate,
)
from xaytune.comparison.family import (
    FAMILY_TRIALS,
    FamilyObjective,
    FamilyRate,
    family_aa_rate,
    independent_family_rate,
)
from xaytune.comparison.methods import (
    METHODS,
    PAIRED_DIFFERENCE,
    SEQUENTIAL_PAIRED,
    TASK_PAIRED,
    SequentialOutcome,
    TaskPairedOutcome,
    expected_seeds,
    sequential_decision,
    task_paired_decision,
)
from xaytune.comparison.power import power_of
from xaytune.comparison.records import (
    CandidateRuns,
    CandidateSummary,
    ComparisonSpec,
    MetricSummary,
    ObjectiveMetric,
    ReplicateRuns,
    RunValue,
)
from xaytune.comparison.report import (
    Calibration,
    CandidateRef,
    Comparability,
    ComparisonReport,
    ConditionFailure,
    ConfigChange,
    Descriptive,
    Difference,
    Interval,
    Look,
    Looks,
    MeasuredCalibration,
    MethodDetail,
    MetricComparison,
    ObjectiveCalibration,
    PassHatK,
    Power,
    Relation,
    RestrictedComparison,
    RunInterval,
    SeedDifference,
    SeedTaskChanges,
    SuiteRef,
    TaskChangeCount,
    TaskDifference,
    TaskPairedView,
    TimingCheck,
    Verdict,
    VerdictReason,
)
from xaytune.comparison.rule import Rule, apply_rule, orient
from xaytune.comparison.tasks import (
    TASK_SUCCESS,
    pass_hat_k_of,
    task_changes,
    task_view,
    wilson_runs,
)
from xaytune.core.errors import ComparisonError

__all__ = [
    "FAMILY_TRIALS",
    "METHODS",
    "PAIRED_DIFFERENCE",
    "SEQUENTIAL_PAIRED",
    "TASK_PAIRED",
    "TIME_METRICS",
    "Calibration",
    "CandidateRef",
    "CandidateRuns",
    "CandidateSummary",
    "Comparability",
    "ComparisonReport",
    "ComparisonSpec",
    "ConditionFailure",
    "ConfigChange",
    "Descriptive",
    "Difference",
    "FamilyObjective",
    "FamilyRate",
    "Interval",
    "Look",
    "Looks",
    "MeasuredCalibration",
    "MethodDetail",
    "MetricComparison",
    "MetricSummary",
    "ObjectiveCalibration",
    "ObjectiveMetric",
    "PassHatK",
    "Power",
    "Relation",
    "ReplicateRuns",
    "RestrictedComparison",
    "RunInterval",
    "RunValue",
    "SeedDifference",
    "SeedTaskChanges",
    "SequentialOutcome",
    "SuiteLike",
    "SuiteName",
    "SuiteRef",
    "TaskChangeCount",
    "TaskDifference",
    "TaskPairedOutcome",
    "TaskPairedView",
    "TimingCheck",
    "Verdict",
    "VerdictReason",
    "compare",
    "compare_ahead",
    "compare_here",
    "config_diff",
    "expected_seeds",
    "family_aa_rate",
    "independent_family_rate",
    "lattice_counts",
    "sequential_decision",
    "set_compare_delegate",
    "summarize",
    "task_paired_decision",
]

TIME_METRICS = frozenset({"model_time", "model_call_time", "tool_time", "end_to_end_time"})


class SuiteLike(Protocol):
    """What compare() reads of a BenchmarkSuite: its name and digest."""

    @property
    def name(self) -> str: ...

    @property
    def digest(self) -> str: ...


# --- replicate-mean/v1 -----------------------------------------------------------


def _summarize_metric(candidate: CandidateRuns, key: str) -> MetricSummary:
    runs, units = [], set()
    reference_derived = judge = False
    for replicate in candidate.replicates:
        found = replicate.metric(key)
        if found is None:
            runs.append(
                RunValue(
                    seed=replicate.seed, value=None, n_tasks=0, absent_reasons={"not-measured": 1}
                )
            )
            continue
        result, evaluation = found
        units.add(result.unit)
        reference_derived = reference_derived or result.reference_derived
        judge = judge or evaluation.determinism == "STOCHASTIC" or result.judge_spread is not None
        runs.append(
            RunValue(
                seed=replicate.seed,
                value=result.value,
                n_tasks=result.n_tasks,
                absent_reasons=dict(result.absent_reasons),
                judge_spread=result.judge_spread,
            )
        )
    if len(units) > 1:
        raise ComparisonError(
            "unit-mismatch", f"candidate {candidate.name}: metric {key} has units {sorted(units)}"
        )
    values = [run.value for run in runs]
    absent: dict[str, int] = {}
    for run in runs:
        for reason, count in run.absent_reasons.items():
            absent[reason] = absent.get(reason, 0) + count
    spreads = [run.judge_spread for run in runs if run.judge_spread is not None]
    present = [value for value in values if value is not None]
    complete = len(present) == len(values)
    return MetricSummary(
        metric=key,
        unit=units.pop() if units else None,
        reference_derived=reference_derived,
        judge=judge,
        replicates=len(runs),
        runs=tuple(runs),
        mean=stats.mean(present) if complete else None,
        sd=stats.sample_sd(present) if complete else None,
        execution_se=stats.standard_error(present) if complete else None,
        # The judge's spread is its own quantity, never folded into execution_se.
        judge_spread=stats.mean(spreads) if judge and len(spreads) == len(runs) else None,
        absent_reasons=dict(sorted(absent.items())),
    )


def _metric_keys(candidate: CandidateRuns) -> set[str]:
    return {key for replicate in candidate.replicates for key in replicate.metric_keys()}


def summarize(candidate: CandidateRuns) -> CandidateSummary:
    """replicate-mean/v1: per metric, the mean of the run values across replicates,
    the execution standard error (sample sd / sqrt(R), None for R = 1) and, for judge
    metrics, the judge's spread separately."""
    metrics = {}
    for key in sorted(_metric_keys(candidate)):
        with _within_float_range(key):
            metrics[key] = _summarize_metric(candidate, key)
    return CandidateSummary(
        candidate=candidate.name,
        harness_fingerprint=candidate.harness_fingerprint,
        seeds=tuple(replicate.seed for replicate in candidate.replicates),
        metrics=metrics,
    )


# --- paired-difference/v1 --------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    spec: ComparisonSpec
    comparable: bool
    timing: TimingCheck
    paired: dict[int, tuple[ReplicateRuns, ReplicateRuns]]


def _is_time_metric(key: str, unit: str | None) -> bool:
    return key.split("@", 1)[0] in TIME_METRICS or unit == "s"


def _descriptive(
    key: str, objective: ObjectiveMetric | None, rule: Rule, context: _Context
) -> tuple[Descriptive, tuple[TaskDifference, ...]]:
    k, r = context.spec.k, len(rule.differences)
    interval = stats.t_interval(rule.mean, rule.se, r - 1) if rule.mean is not None else None
    per_task: tuple[TaskDifference, ...] = ()
    view = None
    if rule.differences:
        view, per_task = task_view(context.paired, key, orient(objective))
    sides = list(zip(*context.paired.values(), strict=True)) if context.paired else [(), ()]
    is_success = key == TASK_SUCCESS
    descriptive = Descriptive(
        mean_interval=Interval(low=interval[0], high=interval[1]) if interval else None,
        interval_spans_zero=interval[0] <= 0.0 <= interval[1] if interval else None,
        threshold_coverage=stats.t_coverage(k, r - 1) if rule.differences else None,
        correlation=stats.pearson([d.a for d in rule.differences], [d.b for d in rule.differences]),
        power=(
            power_of(r, rule.sd, rule.se, k, objective.min_effect)
            if objective is not None and rule.threshold is not None
            else None
        ),
        task_view=view,
        wilson=wilson_runs(context.paired) if is_success else (),
        pass_hat_k_a=pass_hat_k_of(list(sides[0])) if is_success else None,
        pass_hat_k_b=pass_hat_k_of(list(sides[1])) if is_success else None,
    )
    return descriptive, per_task


def _compare_metric(
    key: str, a: CandidateRuns, b: CandidateRuns, context: _Context
) -> tuple[MetricComparison, tuple[TaskDifference, ...]]:
    summary_a, summary_b = _summarize_metric(a, key), _summarize_metric(b, key)
    unit = summary_a.unit or summary_b.unit
    objective = context.spec.objective(key)
    time_metric = _is_time_metric(key, unit)
    rule, verdict, reason = Rule(), "not-compared", "not-comparable"
    detail: MethodDetail | None = None
    if not context.comparable:
        pass  # no verdicts, and no pairing to difference across
    elif time_metric and context.timing.status != "same":
        reason = context.timing.status
    elif not (summary_a.present and summary_b.present):
        # An absent run value is never imputed: the objective stays undecided.
        verdict, reason = ("inconclusive" if objective else "not-compared"), "absent"
    else:
        rule, verdict, reason = apply_rule(summary_a, summary_b, objective, context.spec.k)
        if objective is not None and context.spec.method != PAIRED_DIFFERENCE:
            # The declared method decides; the per-seed differences stay for the reader.
            verdict, reason, detail = decide_by_method(
                key, objective, context.spec, context.paired, orient(objective)
            )
    descriptive, per_task = _descriptive(key, objective, rule, context)
    comparison = MetricComparison(
        metric=key,
        unit=unit,
        reference_derived=summary_a.reference_derived or summary_b.reference_derived,
        time_metric=time_metric,
        objective=objective,
        orientation=(
            "b-minus-a"
            if objective is not None and objective.direction == "minimize"
            else "a-minus-b"
        ),
        a=summary_a,
        b=summary_b,
        differences=rule.differences,
        mean=rule.mean,
        se=rule.se,
        threshold=rule.threshold,
        verdict=verdict,
        reason=reason,
        descriptive=descriptive,
        method_detail=detail,
    )
    return comparison, per_task


@contextmanager
def _within_float_range(key: str) -> Iterator[None]:
    """A statistic beyond float range is a refusal naming the metric, not a crash."""
    try:
        yield
    except OverflowError:
        raise ComparisonError(
            "overflow",
            f"metric {key}: its run values are too large to compare (a difference, "
            "mean or spread is beyond float range)",
        ) from None


def _relation(
    comparable: bool, spec: ComparisonSpec, metrics: dict[str, MetricComparison]
) -> Relation:
    if not comparable:
        return "not-comparable"
    verdicts = {metrics[objective.metric].verdict for objective in spec.objectives}
    if "favors-a" in verdicts and "favors-b" in verdicts:
        return "trade-off"
    if "favors-a" in verdicts:
        return "favors-a"
    if "favors-b" in verdicts:
        return "favors-b"
    return "inconclusive"


def compare(
    a: CandidateRuns, b: CandidateRuns, spec: ComparisonSpec, suite: SuiteLike
) -> ComparisonReport:
    """:func:`compare_here`, computed by the delegate set with
    :func:`set_compare_delegate` when it answers (a process that imported scipy
    while this one did other work: xaytune.report.plot_worker;
    :mod:`xaytune.comparison.delegate`)."""
    report = asked_delegate(a, b, spec, suite)
    if report is not None:
        return report
    return compare_here(a, b, spec, suite)


def compare_here(
    a: CandidateRuns, b: CandidateRuns, spec: ComparisonSpec, suite: SuiteLike
) -> ComparisonReport:
    """``spec.method`` (paired-difference/v1 by default) of candidate ``a`` against
    ``b`` on ``suite``; see :mod:`xaytune.comparison.methods` for the others.

    Refuses an unpaired design (ComparisonError "unpaired-design"), an objective
    on a metric neither side measured ("unknown-metric") and run values whose
    statistics leave float range ("overflow"); under task-paired/v1 and
    sequential-paired/v1 also a replicate without per-task observations of an
    objective ("no-task-observations") and, sequential only, a per-task difference
    beyond the declared bound ("out-of-bound"). Failed conditions C1–C4 are
    reported, not refused: the relation is then "not-comparable". Every report
    carries its A/A calibration (``report.calibration``), measured by simulation
    too when ``spec.calibrate``.
    """
    seeds = check_pairing(a, b)
    failures = check_conditions(a, b, suite.digest, seeds)
    timing = check_timing(a, b)
    comparable = not failures
    keys = sorted(_metric_keys(a) | _metric_keys(b))
    for objective in spec.objectives:
        if objective.metric not in keys:
            raise ComparisonError(
                "unknown-metric", f"objective metric {objective.metric} is measured by neither side"
            )
    by_seed_b = {replicate.seed: replicate for replicate in b.replicates}
    paired = {replicate.seed: (replicate, by_seed_b[replicate.seed]) for replicate in a.replicates}
    context = _Context(spec=spec, comparable=comparable, timing=timing, paired=paired)
    metrics, task_differences = {}, {}
    for key in keys:
        with _within_float_range(key):
            metrics[key], per_task = _compare_metric(key, a, b, context)
        if per_task:
            task_differences[key] = per_task
    by_seed, counts = task_changes(paired) if comparable else ((), ())
    paired_rule = spec.method == PAIRED_DIFFERENCE
    return ComparisonReport(
        method=spec.method,
        a=CandidateRef(name=a.name, harness_fingerprint=a.harness_fingerprint),
        b=CandidateRef(name=b.name, harness_fingerprint=b.harness_fingerprint),
        suite=SuiteRef(name=suite.name, digest=suite.digest),
        spec=spec,
        seeds=seeds,
        comparability=Comparability(
            comparable=comparable,
            failures=failures,
            comparison_key=comparison_key(a, suite.digest, timing) if comparable else None,
            timing=timing,
        ),
        metrics=metrics,
        relation=_relation(comparable, spec, metrics),
        config_diff=tuple(config_diff(a.harness_config, b.harness_config)),
        seed_only_difference=same_harness(a, b),
        # The A/A figures are the spec's rule's; another method states its own alpha.
        calibration=calibrate(spec, metrics, seeds) if comparable and paired_rule else None,
        restricted=RestrictedComparison(
            task_changes_by_seed=by_seed, task_changes=counts, task_differences=task_differences
        ),
    )
