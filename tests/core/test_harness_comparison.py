"""summarize (replicate-mean/v1) and compare (paired-difference/v1).

Golden values are computed by hand in the comments next to each test. The numbers
are chosen so that every intermediate is exact in binary floating point (dyadic
fractions, integers, and standard errors whose ``ss / (R (R - 1))`` is a perfect
square), so a mean can sit exactly on its threshold.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from scipy import stats

from xaytune.core.domain.measurement import EvaluationResult, MetricResult, TaskObservation
from xaytune.core.errors import ComparisonError
from xaytune.core.harness_comparison import (
    CandidateRuns,
    ComparisonSpec,
    ConfigChange,
    ObjectiveMetric,
    ReplicateRuns,
    compare,
    config_diff,
    summarize,
)

SUITE_DIGEST = "sha256:" + "5" * 64
SUITE = SimpleNamespace(name="arith-tools", digest=SUITE_DIGEST)
SEEDS = (101, 102, 103)

# metric -> (unit, reference_derived)
CATALOG = {
    "task_success": ("fraction", True),
    "quality": ("score", True),
    "total_tokens": ("tokens", False),
    "turns": ("count", False),
    "model_time": ("s", False),
    "total_tokens@successful-tasks": ("tokens", True),
}


def metric(key: str, value: float | None, *, n_tasks: int = 4, **extra) -> MetricResult:
    name, _, slice_ = key.partition("@")
    unit, reference_derived = CATALOG[key]
    absent = extra.pop("absent_reasons", {} if value is not None else {"no-attested-result": 1})
    return MetricResult(
        metric=name,
        unit=unit,
        reference_derived=reference_derived,
        slice=slice_ or "all-tasks",
        n_tasks=n_tasks,
        value=value,
        absent_reasons=absent,
        **extra,
    )


def replicate(
    seed: int,
    values: dict[str, float | None],
    *,
    suite_digest: str = SUITE_DIGEST,
    assignment_digest: str | None = None,
    evaluator_fingerprint: str = "sha256:outcome-v1",
    facets: dict | None = None,
    timing_environment: str | None = "ci-runner-1",
    judge: dict[str, float | None] | None = None,
    task_observations: dict | None = None,
    n_tasks: int = 4,
) -> ReplicateRuns:
    """One replicate: an outcome evaluation of ``values`` and optionally a judge
    evaluation of ``judge`` (quality value, judge_spread)."""
    assignment_digest = assignment_digest or f"sha256:assignment-{seed}"
    common = {
        "subject_digest": f"sha256:subject-{seed}",
        "suite_digest": suite_digest,
        "assignment_digest": assignment_digest,
        "seed": seed,
    }
    evaluations = [
        EvaluationResult(
            evaluator="harness-outcome",
            evaluator_fingerprint=evaluator_fingerprint,
            determinism="DETERMINISTIC",
            metrics=tuple(metric(k, v, n_tasks=n_tasks) for k, v in values.items()),
            **common,
        )
    ]
    if judge is not None:
        evaluations.append(
            EvaluationResult(
                evaluator="harness-judge",
                evaluator_fingerprint="sha256:judge-v1",
                determinism="STOCHASTIC",
                metrics=(
                    metric(
                        "quality", judge["value"], judge_spread=judge["spread"], n_tasks=n_tasks
                    ),
                ),
                **common,
            )
        )
    return ReplicateRuns(
        seed=seed,
        suite_digest=suite_digest,
        assignment_digest=assignment_digest,
        evaluations=tuple(evaluations),
        facets=facets if facets is not None else {"model": {"id": "sim", "temperature": 0.0}},
        timing_environment=timing_environment,
        task_observations=task_observations or {},
    )


def candidate(
    name: str,
    columns: dict[str, tuple[float | None, ...]],
    *,
    seeds: tuple[int, ...] = SEEDS,
    config: dict | None = None,
    **replicate_kwargs,
) -> CandidateRuns:
    """A candidate whose metric ``k`` has value ``columns[k][i]`` under ``seeds[i]``."""
    replicates = tuple(
        replicate(seed, {key: column[i] for key, column in columns.items()}, **replicate_kwargs)
        for i, seed in enumerate(seeds)
    )
    return CandidateRuns(
        name=name,
        harness_fingerprint=f"sha256:harness-{name}",
        harness_config=config if config is not None else {"name": name},
        replicates=replicates,
    )


def spec(*objectives: tuple[str, str, float], k: float = 2.0, **kwargs) -> ComparisonSpec:
    return ComparisonSpec(
        objectives=tuple(
            ObjectiveMetric(metric=m, direction=d, min_effect=e) for m, d, e in objectives
        ),
        k=k,
        **kwargs,
    )


# Tokens, minimized. A = (100, 96, 100), B = (101, 100, 101): d = B − A = (1, 4, 1).
# mean = 6/3 = 2; deviations (−1, 2, −1), ss = 6; se = sqrt(6 / (3·2)) = 1.
TOKENS_A = (100.0, 96.0, 100.0)
TOKENS_B = (101.0, 100.0, 101.0)


def _tokens_report(k: float, min_effect: float = 0.0):
    a = candidate("a", {"total_tokens": TOKENS_A})
    b = candidate("b", {"total_tokens": TOKENS_B})
    return compare(a, b, spec(("total_tokens", "minimize", min_effect), k=k), SUITE)


def test_mean_exactly_at_k_se_threshold_is_inconclusive():
    # threshold = max(0, 2·1) = 2 = mean: strict ">" makes it inconclusive.
    report = _tokens_report(k=2.0)
    tokens = report.metrics["total_tokens"]
    assert [d.difference for d in tokens.differences] == [1.0, 4.0, 1.0]
    assert [d.seed for d in tokens.differences] == [101, 102, 103]
    assert (tokens.mean, tokens.se, tokens.threshold) == (2.0, 1.0, 2.0)
    assert (tokens.verdict, tokens.reason) == ("inconclusive", "within-threshold")
    assert tokens.orientation == "b-minus-a"
    assert report.relation == "inconclusive"


def test_mean_just_above_k_se_threshold_favors_a():
    # k = 1.99: threshold = 1.99·1 = 1.99 < 2 = mean.
    tokens = _tokens_report(k=1.99).metrics["total_tokens"]
    assert tokens.threshold == 1.99
    assert (tokens.verdict, tokens.reason) == ("favors-a", "exceeds-threshold")


def test_mean_just_below_k_se_threshold_is_inconclusive():
    # k = 2.01: threshold = 2.01 > 2 = mean.
    tokens = _tokens_report(k=2.01).metrics["total_tokens"]
    assert tokens.threshold == 2.01
    assert tokens.verdict == "inconclusive"


def test_k_se_dominates_a_smaller_min_effect():
    # min_effect = 1.5 < k·se = 2: threshold = 2, mean = 2 → inconclusive.
    tokens = _tokens_report(k=2.0, min_effect=1.5).metrics["total_tokens"]
    assert tokens.threshold == 2.0
    assert tokens.verdict == "inconclusive"


# Success rate, maximized. A = (0.75, 0.875, 0.625), B = (0.5, 0.5, 0.5):
# d = (0.25, 0.375, 0.125), mean = 0.75/3 = 0.25; deviations (0, 0.125, −0.125),
# ss = 2/64 = 1/32; se = sqrt((1/32)/6) = sqrt(1/192) ≈ 0.0721688; k·se ≈ 0.1443376.
SUCCESS_A = (0.75, 0.875, 0.625)
SUCCESS_B = (0.5, 0.5, 0.5)


def _success_verdict(min_effect: float):
    a = candidate("a", {"task_success": SUCCESS_A})
    b = candidate("b", {"task_success": SUCCESS_B})
    return compare(a, b, spec(("task_success", "maximize", min_effect)), SUITE)


@pytest.mark.parametrize(
    ("min_effect", "threshold", "verdict"),
    [
        (0.25, 0.25, "inconclusive"),  # min_effect dominates; mean exactly at it
        (0.2499, 0.2499, "favors-a"),  # just above the threshold
        (0.2501, 0.2501, "inconclusive"),  # just below the threshold
        (0.2, 0.2, "favors-a"),  # min_effect (0.2) dominates k·se (0.1443)
        (0.1, 2 * math.sqrt(1 / 192), "favors-a"),  # k·se (0.1443) dominates 0.1
    ],
)
def test_min_effect_and_k_se_thresholds(min_effect, threshold, verdict):
    report = _success_verdict(min_effect)
    success = report.metrics["task_success"]
    assert success.mean == 0.25
    assert success.se == pytest.approx(math.sqrt(1 / 192), rel=1e-15)
    assert success.threshold == pytest.approx(threshold, rel=1e-15)
    assert success.verdict == verdict
    assert report.relation == ("favors-a" if verdict == "favors-a" else "inconclusive")


def test_favors_b_when_b_is_better():
    # Swapped sides of the previous case: mean = −0.25 < −0.2.
    a = candidate("a", {"task_success": SUCCESS_B})
    b = candidate("b", {"task_success": SUCCESS_A})
    report = compare(a, b, spec(("task_success", "maximize", 0.2)), SUITE)
    assert report.metrics["task_success"].mean == -0.25
    assert report.metrics["task_success"].verdict == "favors-b"
    assert report.relation == "favors-b"


def test_two_replicates_are_always_inconclusive():
    # d = (1, 1): mean 1, se 0 — any rule would call it, but R = 2 < 3.
    a = candidate("a", {"task_success": (1.0, 1.0)}, seeds=(101, 102))
    b = candidate("b", {"task_success": (0.0, 0.0)}, seeds=(101, 102))
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    success = report.metrics["task_success"]
    assert (success.verdict, success.reason) == ("inconclusive", "too-few-replicates")
    assert success.mean == 1.0
    assert success.threshold is None
    assert report.relation == "inconclusive"


def test_trade_off_when_objectives_favour_different_sides():
    # Success: d = (0.25, 0.25, 0.25), se 0, threshold max(0.05, 0) = 0.05 → favors-a.
    # Tokens (minimize): A = (1200, 1300, 1250), B = 1000 each; d = B − A =
    # (−200, −300, −250), mean −250; deviations (50, −50, 0), ss = 5000,
    # se = sqrt(5000/6) ≈ 28.8675, k·se ≈ 57.735 > 50 → threshold 57.735,
    # −250 < −57.735 → favors-b.
    a = candidate("a", {"task_success": (0.75,) * 3, "total_tokens": (1200.0, 1300.0, 1250.0)})
    b = candidate("b", {"task_success": (0.5,) * 3, "total_tokens": (1000.0,) * 3})
    report = compare(
        a,
        b,
        spec(("task_success", "maximize", 0.05), ("total_tokens", "minimize", 50.0)),
        SUITE,
    )
    assert report.metrics["task_success"].verdict == "favors-a"
    assert report.metrics["task_success"].threshold == 0.05
    tokens = report.metrics["total_tokens"]
    assert tokens.mean == -250.0
    assert tokens.threshold == pytest.approx(2 * math.sqrt(5000 / 6), rel=1e-15)
    assert tokens.verdict == "favors-b"
    assert report.relation == "trade-off"
    assert report.claim == "exploratory"
    assert report.method == "paired-difference/v1"


def test_every_failed_condition_is_listed_and_nothing_is_called():
    seeds_b_digest = {102: "sha256:assignment-other"}
    a = candidate(
        "a",
        {"task_success": SUCCESS_A},
        suite_digest="sha256:" + "6" * 64,  # C1
        evaluator_fingerprint="sha256:outcome-v2",  # C3
    )
    b = CandidateRuns(
        name="b",
        harness_fingerprint="sha256:harness-b",
        replicates=tuple(
            replicate(
                seed,
                {"task_success": value},
                assignment_digest=seeds_b_digest.get(seed),  # C2 on seed 102
                facets={"model": {"id": "sim", "temperature": 0.7}},  # C4
            )
            for seed, value in zip(SEEDS, SUCCESS_B, strict=True)
        ),
    )
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    failures = report.comparability.failures
    assert [(f.condition, f.reason) for f in failures] == [
        ("C1", "suite-differs"),
        ("C2", "assignment-differs"),
        ("C3", "evaluator-differs"),
        ("C4", "facets-differ"),
    ]
    c1, c2, c3, c4 = (f.differences for f in failures)
    assert (c1[0].item, c1[0].a, c1[0].b, c1[0].suite) == (
        "suite_digest",
        ("sha256:" + "6" * 64,),
        (SUITE_DIGEST,),
        SUITE_DIGEST,
    )
    assert [(d.item, d.a, d.b) for d in c2] == [
        ("seed 102 assignment_digest", ("sha256:assignment-102",), ("sha256:assignment-other",))
    ]
    assert [(d.item, d.a, d.b) for d in c3] == [
        ("evaluator harness-outcome", ("sha256:outcome-v2",), ("sha256:outcome-v1",))
    ]
    assert [(d.item, d.a, d.b) for d in c4] == [("facets.model.temperature", (0.0,), (0.7,))]
    assert not report.comparability.comparable
    assert report.comparability.comparison_key is None
    assert report.relation == "not-comparable"
    success = report.metrics["task_success"]
    assert (success.verdict, success.reason) == ("not-compared", "not-comparable")
    assert success.differences == ()
    # Metrics are still summarized.
    assert success.a.mean == 0.75
    assert success.b.mean == 0.5
    assert report.restricted.task_changes_by_seed == ()


def test_suite_argument_that_differs_from_both_sides_fails_c1():
    a = candidate("a", {"task_success": SUCCESS_A})
    b = candidate("b", {"task_success": SUCCESS_B})
    other = SimpleNamespace(name="arith-tools", digest="sha256:" + "7" * 64)
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), other)
    (failure,) = report.comparability.failures
    assert failure.condition == "C1"
    assert failure.differences[0].suite == "sha256:" + "7" * 64
    assert report.relation == "not-comparable"


def test_a_side_that_disagrees_with_itself_fails_c4():
    a = candidate("a", {"task_success": SUCCESS_A})
    drifted = a.replicates[2].model_copy(update={"facets": {"model": {"id": "sim-2"}}})
    a = a.model_copy(update={"replicates": (*a.replicates[:2], drifted)})
    b = candidate("b", {"task_success": SUCCESS_B})
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    (failure,) = report.comparability.failures
    assert failure.condition == "C4"
    by_item = {d.item: d for d in failure.differences}
    assert by_item["facets.model.id"].a == ("sim", "sim-2")
    assert by_item["facets.model.id"].b == ("sim",)
    # None: replicate 103 of A does not declare a temperature.
    assert by_item["facets.model.temperature"].a == (0.0, None)


def test_comparable_report_has_a_comparison_key_over_what_was_held_equal():
    a = candidate("a", {"task_success": SUCCESS_A})
    b = candidate("b", {"task_success": SUCCESS_B})
    key = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE).comparability
    assert key.comparable and key.failures == ()
    assert key.comparison_key.startswith("sha256:")
    # Same cohort, different candidates' values: same key.
    c = candidate("c", {"task_success": SUCCESS_B})
    again = compare(a, c, spec(("task_success", "maximize", 0.0)), SUITE).comparability
    assert again.comparison_key == key.comparison_key


@pytest.mark.parametrize(
    ("seeds_a", "seeds_b"),
    [
        ((101, 102, 103), (101, 102, 104)),  # different seed sets
        ((101, 102, 103), (101, 102)),  # a seed missing on one side
        ((101, 101, 102), (101, 101, 102)),  # a duplicated seed on a side
    ],
)
def test_unpaired_design_is_refused(seeds_a, seeds_b):
    a = candidate("a", {"task_success": (0.5,) * len(seeds_a)}, seeds=seeds_a)
    b = candidate("b", {"task_success": (0.5,) * len(seeds_b)}, seeds=seeds_b)
    with pytest.raises(ComparisonError) as refused:
        compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    assert refused.value.reason == "unpaired-design"


# model_time, minimized: A = (10, 8, 10), B = (12, 12, 12): d = B − A = (2, 4, 2),
# mean 8/3, deviations (−2/3, 4/3, −2/3), ss = 24/9 = 8/3, se = sqrt((8/3)/6) = 2/3,
# threshold = max(0.5, 4/3) = 4/3 < 8/3 → favors-a.
def _timing_report(env_a, env_b):
    a = candidate(
        "a", {"model_time": (10.0, 8.0, 10.0), "turns": (3.0, 3.0, 3.0)}, timing_environment=env_a
    )
    b = candidate(
        "b", {"model_time": (12.0, 12.0, 12.0), "turns": (2.0, 2.0, 2.0)}, timing_environment=env_b
    )
    objectives = (("model_time", "minimize", 0.5), ("turns", "maximize", 0.5))
    return compare(a, b, spec(*objectives), SUITE)


def test_time_metrics_are_compared_under_one_timing_environment():
    report = _timing_report("ci-runner-1", "ci-runner-1")
    time = report.metrics["model_time"]
    assert time.time_metric
    assert report.comparability.timing.status == "same"
    assert report.comparability.timing.environment == "ci-runner-1"
    assert time.mean == pytest.approx(8 / 3, rel=1e-15)
    assert time.se == pytest.approx(2 / 3, rel=1e-15)
    assert time.verdict == "favors-a"
    assert report.relation == "favors-a"


def test_time_metrics_are_not_compared_across_two_timing_environments():
    report = _timing_report("ci-runner-1", "laptop")
    time = report.metrics["model_time"]
    assert (time.verdict, time.reason) == ("not-compared", "timing-environment-differs")
    assert time.differences == ()
    assert report.comparability.timing.a == ("ci-runner-1",)
    assert report.comparability.timing.b == ("laptop",)
    # Only time is held back: the conditions hold and turns are compared (d = 1, se 0).
    assert report.comparability.comparable
    assert report.metrics["turns"].verdict == "favors-a"
    assert report.relation == "favors-a"


def test_time_metrics_are_not_compared_without_a_declared_timing_environment():
    report = _timing_report("ci-runner-1", None)
    time = report.metrics["model_time"]
    assert (time.verdict, time.reason) == ("not-compared", "timing-environment-undeclared")


def test_summarize_one_replicate_gives_unknown_uncertainty_not_zero():
    single = candidate(
        "a", {"task_success": (0.75,)}, seeds=(101,), judge={"value": 3.0, "spread": None}
    )
    summary = summarize(single)
    assert summary.method == "replicate-mean/v1"
    success = summary.metrics["task_success"]
    assert success.mean == 0.75
    assert success.sd is None
    assert success.execution_se is None
    quality = summary.metrics["quality"]
    assert quality.judge
    assert quality.judge_spread is None


def test_summarize_reports_execution_se_and_judge_spread_separately():
    # task_success (0.5, 0.75, 1.0): mean 0.75, ss = 0.125, sd = sqrt(0.125/2) = 0.25,
    # se = sqrt(0.125/6) = 0.25/sqrt(3). Judge spreads (0.5, 0.25, 0.75): mean 0.5.
    replicates = tuple(
        replicate(seed, {"task_success": value}, judge={"value": value * 4, "spread": spread})
        for seed, value, spread in zip(SEEDS, (0.5, 0.75, 1.0), (0.5, 0.25, 0.75), strict=True)
    )
    runs = CandidateRuns(name="a", harness_fingerprint="sha256:h", replicates=replicates)
    summary = summarize(runs)
    success = summary.metrics["task_success"]
    assert (success.mean, success.sd) == (0.75, 0.25)
    assert success.execution_se == pytest.approx(0.25 / math.sqrt(3), rel=1e-15)
    assert not success.judge and success.judge_spread is None
    quality = summary.metrics["quality"]
    assert quality.judge and quality.judge_spread == 0.5
    assert quality.execution_se == pytest.approx(1 / math.sqrt(3), rel=1e-15)
    assert summary.seeds == SEEDS


def test_absent_replicate_makes_summary_absent_with_reasons():
    reasons = {
        101: {},
        102: {"no-attested-result": 2},
        103: {"no-attested-result": 1, "not-applicable": 1},
    }
    values = {101: 0.5, 102: None, 103: None}
    replicates = tuple(
        ReplicateRuns(
            seed=seed,
            suite_digest=SUITE_DIGEST,
            assignment_digest=f"sha256:assignment-{seed}",
            evaluations=(
                EvaluationResult(
                    evaluator="harness-outcome",
                    evaluator_fingerprint="sha256:outcome-v1",
                    determinism="DETERMINISTIC",
                    subject_digest="sha256:s",
                    suite_digest=SUITE_DIGEST,
                    assignment_digest=f"sha256:assignment-{seed}",
                    seed=seed,
                    metrics=(metric("task_success", values[seed], absent_reasons=reasons[seed]),),
                ),
            ),
            facets={"model": {"id": "sim", "temperature": 0.0}},
            timing_environment="ci-runner-1",
        )
        for seed in SEEDS
    )
    absent = CandidateRuns(name="a", harness_fingerprint="sha256:h", replicates=replicates)
    success = summarize(absent).metrics["task_success"]
    assert success.mean is None and success.sd is None and success.execution_se is None
    assert success.absent_reasons == {"no-attested-result": 3, "not-applicable": 1}
    assert [run.value for run in success.runs] == [0.5, None, None]
    # In a comparison the objective is inconclusive, never imputed.
    b = candidate("b", {"task_success": SUCCESS_B})
    report = compare(absent, b, spec(("task_success", "maximize", 0.0)), SUITE)
    compared = report.metrics["task_success"]
    assert (compared.verdict, compared.reason) == ("inconclusive", "absent")
    assert compared.mean is None
    assert report.relation == "inconclusive"


def test_descriptive_parts_never_change_the_verdict():
    # The tokens case: d = (1, 4, 1), mean 2, se 1, sd sqrt(3), df 2.
    # t_{0.975, 2} = 0.95·sqrt(2/(1 − 0.95²)) = 4.3026527297 (closed form at df 2):
    # interval 2 ± 4.30265, which spans 0. Coverage of ±2·se at df 2:
    # 2/sqrt(2 + 4) = 0.8164966. Correlation of A (100, 96, 100) with B (101, 100,
    # 101): deviations (4/3, −8/3, 4/3) and (1/3, −2/3, 1/3) are proportional → 1.
    # Power: at a true difference of k·se the test mean > k·se alone has power
    # nct.sf(2, df 2, nc = k·se·sqrt(3)/sd = 2) = 0.5795 (scipy), the whole answer
    # with min_effect 0; the bar mean > 0.5 removes the draws with a tiny sd and a
    # mean below 0.5, so with min_effect 0.5 it is a little lower (0.5784).
    # Issue 30: the figures are computed at the 80% upper confidence bound of σ,
    # sd·sqrt(df/q) with q the 20% quantile of chi-square(2) = −2·ln(0.8) (closed form
    # at df 2), so the noncentrality at k·se is 2·sqrt(3)/σ_u = sqrt(2q) = 0.9448.
    q = -2.0 * math.log(0.8)
    report = _tokens_report(k=2.0, min_effect=0.5)
    tokens = report.metrics["total_tokens"]
    descriptive = tokens.descriptive
    assert descriptive.label == "descriptive"
    t = 0.95 * math.sqrt(2 / (1 - 0.95**2))
    assert descriptive.mean_interval.low == pytest.approx(2 - t, rel=1e-12)
    assert descriptive.mean_interval.high == pytest.approx(2 + t, rel=1e-12)
    assert descriptive.threshold_coverage == pytest.approx(2 / math.sqrt(6), rel=1e-12)
    assert descriptive.interval_spans_zero
    assert descriptive.correlation == pytest.approx(1.0, rel=1e-12)
    power = descriptive.power
    assert power.k_se == 2.0
    assert power.sd == pytest.approx(math.sqrt(3), rel=1e-15)
    assert power.sd_upper == pytest.approx(math.sqrt(3) * math.sqrt(2 / q), rel=1e-12)
    assert power.sd_level == 0.8 and power.rough
    unfloored = _tokens_report(k=2.0).metrics["total_tokens"].descriptive.power
    at_upper = stats.nct.sf(2.0, 2, math.sqrt(2 * q))
    assert unfloored.power_at_k_se == pytest.approx(at_upper, rel=1e-9)
    assert power.power_at_k_se < at_upper
    assert unfloored.power_at_min_effect is None and unfloored.planning_effect is None
    assert power.power_at_min_effect < 0.5
    assert power.planning_effect == 1.0
    assert power.replicates_for_power >= 3
    assert tokens.verdict == "inconclusive"


def _observations(outcomes: dict[str, float]) -> tuple[TaskObservation, ...]:
    return tuple(
        TaskObservation(task_id=task, position=i, value=value)
        for i, (task, value) in enumerate(sorted(outcomes.items()))
    )


def _task_candidate(name: str, per_seed: dict[int, dict[str, float]]) -> CandidateRuns:
    replicates = tuple(
        replicate(
            seed,
            {"task_success": sum(outcomes.values()) / len(outcomes)},
            task_observations={"task_success": _observations(outcomes)},
            n_tasks=len(outcomes),
        )
        for seed, outcomes in per_seed.items()
    )
    return CandidateRuns(name=name, harness_fingerprint=f"sha256:h-{name}", replicates=replicates)


# Two tasks run under three seeds. A solves t1 always and t2 once (seed 101); B
# solves t1 on seeds 101 and 102 and t2 on seed 102.
TASKS_A = {101: {"t1": 1.0, "t2": 1.0}, 102: {"t1": 1.0, "t2": 0.0}, 103: {"t1": 1.0, "t2": 0.0}}
TASKS_B = {101: {"t1": 1.0, "t2": 0.0}, 102: {"t1": 1.0, "t2": 1.0}, 103: {"t1": 0.0, "t2": 0.0}}


def test_task_level_view_pass_hat_k_and_restricted_task_changes():
    a, b = _task_candidate("a", TASKS_A), _task_candidate("b", TASKS_B)
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    descriptive = report.metrics["task_success"].descriptive
    # (seed, task) differences A − B: t1: (0, 0, 1), t2: (1, −1, 0); n = 6, mean 1/6.
    # deviations: t1 (−1/6, −1/6, 5/6), t2 (5/6, −7/6, −1/6); ss = (1+1+25+25+49+1)/36
    # = 102/36; SE_CLT² = ss/(6·5) = 102/1080. Cluster sums: t1 3/6, t2 −3/6;
    # cross terms: t1 (1/2)² − 27/36 = −18/36, t2 (1/2)² − 75/36 = −66/36;
    # total −84/36, /n² = −84/1296. SE² = 102/1080 − 84/1296 = 0.0944444 − 0.0648148
    # = 0.0296296 → SE = 0.1721326.
    view = descriptive.task_view
    assert (view.n_observations, view.n_tasks, view.n_seeds) == (6, 2, 3)
    assert view.mean_difference == pytest.approx(1 / 6, rel=1e-12)
    assert view.clustered_se == pytest.approx(math.sqrt(102 / 1080 - 84 / 1296), rel=1e-12)
    assert view.independent_se == pytest.approx(math.sqrt(102 / 1080), rel=1e-12)
    # pass^k of A: t1 n=3 c=3, t2 n=3 c=1. pass^1 = (1 + 1/3)/2 = 2/3,
    # pass^2 = (1 + 0)/2 = 1/2, pass^3 = 1/2. B: t1 c=2, t2 c=1: pass^1 = (2/3+1/3)/2
    # = 1/2, pass^2 = (1/3 + 0)/2 = 1/6, pass^3 = 0.
    assert [(p.k, p.value) for p in descriptive.pass_hat_k_a] == [
        (1, pytest.approx(2 / 3)),
        (2, 0.5),
        (3, 0.5),
    ]
    assert [(p.k, p.value) for p in descriptive.pass_hat_k_b] == [
        (1, 0.5),
        (2, pytest.approx(1 / 6)),
        (3, 0.0),
    ]
    # Wilson on every run (n = 2): each run is 1/2 or 2/2 solved.
    assert len(descriptive.wilson) == 6
    restricted = report.restricted
    assert restricted.label == "restricted"
    assert [(c.seed, c.improvements, c.regressions) for c in restricted.task_changes_by_seed] == [
        (101, ("t2",), ()),
        (102, (), ("t2",)),
        (103, ("t1",), ()),
    ]
    assert [
        (c.task_id, c.paired_seeds, c.improvements, c.regressions) for c in restricted.task_changes
    ] == [("t1", 3, 1, 0), ("t2", 3, 1, 1)]
    per_task = {d.task_id: d for d in restricted.task_differences["task_success"]}
    assert per_task["t1"].differences == (0.0, 0.0, 1.0)
    assert per_task["t1"].mean_difference == pytest.approx(1 / 3)
    assert per_task["t2"].mean_difference == 0.0


def test_absent_task_observation_is_counted_not_imputed():
    a, b = _task_candidate("a", TASKS_A), _task_candidate("b", TASKS_B)
    absent = (
        TaskObservation(task_id="t1", position=0, absence="no-attested-result"),
        TaskObservation(task_id="t2", position=1, value=0.0),
    )
    patched = a.replicates[2].model_copy(update={"task_observations": {"task_success": absent}})
    a = a.model_copy(update={"replicates": (*a.replicates[:2], patched)})
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    descriptive = report.metrics["task_success"].descriptive
    assert descriptive.task_view.mean_difference is None
    assert descriptive.task_view.absent_reasons == {"no-attested-result": 1}
    assert descriptive.pass_hat_k_a is None
    assert "task_success" not in report.restricted.task_differences


def test_released_view_drops_restricted_content_under_aggregate_disclosure():
    a, b = _task_candidate("a", TASKS_A), _task_candidate("b", TASKS_B)
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    assert report.view == "full" and report.restricted is not None
    released = report.released()
    assert released.view == "released"
    assert released.restricted is None
    assert released.relation == report.relation
    assert "t1" not in json.dumps(released.model_dump(mode="json"))
    assert released.released() is released


def test_released_view_keeps_restricted_content_under_per_task_disclosure():
    a, b = _task_candidate("a", TASKS_A), _task_candidate("b", TASKS_B)
    per_task = spec(("task_success", "maximize", 0.0), disclosure="per-task")
    released = compare(a, b, per_task, SUITE).released()
    assert released.view == "released"
    assert released.restricted.task_changes_by_seed[0].improvements == ("t2",)


def test_released_view_withholds_successful_tasks_slices_and_single_task_values():
    columns = {"task_success": SUCCESS_A, "total_tokens@successful-tasks": (10.0, 11.0, 12.0)}
    a = candidate("a", columns)
    b = candidate("b", {**columns, "task_success": SUCCESS_B})
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    released = report.released()
    assert released.withheld == ("total_tokens@successful-tasks",)
    assert set(released.metrics) == {"task_success"}
    # A reference-derived run value over a single task is withheld too.
    one_task = candidate("a", {"task_success": (1.0, 0.0, 1.0)}, n_tasks=1)
    other = candidate("b", {"task_success": (0.0, 0.0, 1.0)}, n_tasks=1)
    single = compare(one_task, other, spec(("task_success", "maximize", 0.0)), SUITE)
    assert single.released().withheld == ("task_success",)
    per_task = spec(("task_success", "maximize", 0.0), disclosure="per-task")
    assert compare(one_task, other, per_task, SUITE).released().withheld == ()


def test_config_diff_lists_dotted_paths():
    a = {"loop": {"max_turns": 8, "retries": {"model": 2}}, "tools": ["calc"], "name": "x"}
    b = {"loop": {"max_turns": 12, "retries": {"model": 2}}, "tools": ["calc", "search"], "k": 1}
    assert config_diff(a, b) == [
        ConfigChange(path="k", change="added", b=1),
        ConfigChange(path="loop.max_turns", change="changed", a=8, b=12),
        ConfigChange(path="name", change="removed", a="x"),
        ConfigChange(path="tools", change="changed", a=["calc"], b=["calc", "search"]),
    ]
    assert config_diff(a, a) == []


def test_report_carries_config_diff_and_seed_only_flag():
    a = candidate("a", {"task_success": SUCCESS_A}, config={"loop": {"max_turns": 8}})
    b = candidate("b", {"task_success": SUCCESS_B}, config={"loop": {"max_turns": 12}})
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    assert [change.path for change in report.config_diff] == ["loop.max_turns"]
    assert not report.seed_only_difference
    same = {"loop": {"max_turns": 8}}
    a2 = candidate("a", {"task_success": SUCCESS_A}, config=same)
    b2 = candidate("b", {"task_success": SUCCESS_B}, config=same)
    a2 = a2.model_copy(update={"harness_fingerprint": "sha256:same"})
    b2 = b2.model_copy(update={"harness_fingerprint": "sha256:same"})
    itself = compare(a2, b2, spec(("task_success", "maximize", 0.0)), SUITE)
    assert itself.config_diff == ()
    assert itself.seed_only_difference


def test_non_objective_metrics_are_reported_without_a_verdict():
    a = candidate("a", {"task_success": SUCCESS_A, "turns": (3.0, 4.0, 5.0)})
    b = candidate("b", {"task_success": SUCCESS_B, "turns": (3.0, 3.0, 3.0)})
    report = compare(a, b, spec(("task_success", "maximize", 0.0)), SUITE)
    turns = report.metrics["turns"]
    assert (turns.verdict, turns.reason) == ("not-compared", "not-an-objective")
    assert turns.mean == 1.0  # (0 + 1 + 2)/3, A − B
    assert turns.threshold is None


def test_objective_on_a_metric_nobody_measured_is_refused():
    a = candidate("a", {"task_success": SUCCESS_A})
    b = candidate("b", {"task_success": SUCCESS_B})
    with pytest.raises(ComparisonError) as refused:
        compare(a, b, spec(("task_sucess", "maximize", 0.0)), SUITE)
    assert refused.value.reason == "unknown-metric"


def test_replicate_that_contradicts_its_evaluations_is_refused():
    good = replicate(101, {"task_success": 0.5})
    with pytest.raises(ComparisonError) as refused:
        ReplicateRuns(
            seed=102,
            suite_digest=SUITE_DIGEST,
            assignment_digest=good.assignment_digest,
            evaluations=good.evaluations,
        )
    assert refused.value.reason == "replicate-mismatch"


def test_non_finite_run_value_is_refused():
    with pytest.raises(ComparisonError) as refused:
        replicate(101, {"total_tokens": float("inf")})
    assert refused.value.reason == "non-finite"


def test_report_is_frozen_deterministic_json():
    a = candidate("a", {"task_success": SUCCESS_A, "total_tokens": TOKENS_A})
    b = candidate("b", {"task_success": SUCCESS_B, "total_tokens": TOKENS_B})
    objectives = spec(("task_success", "maximize", 0.05), ("total_tokens", "minimize", 50.0))
    first = compare(a, b, objectives, SUITE).model_dump(mode="json")
    second = compare(a, b, objectives, SUITE).model_dump(mode="json")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    report = compare(a, b, objectives, SUITE)
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        report.relation = "favors-b"  # type: ignore[misc]


# --- the specification's "Comparing two candidates" block ------------------------


@pytest.fixture(name="a")
def _baseline() -> CandidateRuns:
    return candidate(
        "baseline",
        {"task_success": (0.5, 0.625, 0.5), "total_tokens": (1500.0, 1520.0, 1480.0)},
    )


@pytest.fixture(name="b")
def _variant() -> CandidateRuns:
    return candidate(
        "variant",
        {"task_success": (0.375, 0.5, 0.375), "total_tokens": (1600.0, 1700.0, 1650.0)},
    )


@pytest.fixture(name="suite")
def _suite() -> SimpleNamespace:
    # A stand-in BenchmarkSuite: compare() reads only .name and .digest.
    return SUITE


def test_spec_comparing_two_candidates_block_runs_as_written(a, b, suite):
    from xaytune.core.harness_comparison import (
        CandidateRuns,
        ComparisonSpec,
        ObjectiveMetric,
        ReplicateRuns,
        compare,
    )

    report = compare(a, b, ComparisonSpec(objectives=(
        ObjectiveMetric(metric="task_success", direction="maximize", min_effect=0.05),
        ObjectiveMetric(metric="total_tokens", direction="minimize", min_effect=50),
    )), suite)  # fmt: skip
    # The block's four inspection lines, as written (bare expressions):
    report.comparability  # C1–C4: every failed condition, and the comparison key  # noqa: B018
    report.metrics  # per metric: both summaries, paired differences, verdict  # noqa: B018
    report.relation  # favors-a, favors-b, trade-off, inconclusive, not-comparable  # noqa: B018
    report.claim  # always "exploratory"  # noqa: B018

    assert CandidateRuns and ReplicateRuns
    # Success d = 0.125 on every seed: se 0, threshold 0.05 → favors-a.
    # Tokens d = B − A = (100, 180, 170): mean 150, deviations (−50, 30, 20),
    # ss = 3800, se = sqrt(3800/6) ≈ 25.166, threshold max(50, 50.332) = 50.332 → favors-a.
    assert report.comparability.comparable
    assert report.metrics["task_success"].verdict == "favors-a"
    assert report.metrics["total_tokens"].threshold == pytest.approx(2 * math.sqrt(3800 / 6))
    assert report.metrics["total_tokens"].verdict == "favors-a"
    assert report.relation == "favors-a"
    assert report.claim == "exploratory"
