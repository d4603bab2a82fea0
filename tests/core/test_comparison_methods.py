"""task-paired/v1 and sequential-paired/v1: decisions on small data checked against
values computed by hand or by a brute-force computation written here."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from types import SimpleNamespace

import pytest
from pydantic import ValidationError
from scipy import stats as scipy_stats

from xaytune.comparison.methods import BETS as MODULE_BETS
from xaytune.comparison.methods import sequential_wealth
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.measurement import EvaluationResult, MetricResult, TaskObservation
from xaytune.core.errors import ComparisonError
from xaytune.core.harness_comparison import (
    SEQUENTIAL_PAIRED,
    TASK_PAIRED,
    CandidateRuns,
    ComparisonSpec,
    ObjectiveMetric,
    ReplicateRuns,
    compare,
    expected_seeds,
    sequential_decision,
    task_paired_decision,
)

SUITE = SimpleNamespace(name="arith-tools", digest="sha256:" + "5" * 64)
# The ten bets, geometric from 0.05 to 0.9, as the module's docstring states them.
BETS = [
    Fraction(x)
    for x in ["0.05", "0.069", "0.095", "0.131", "0.181", "0.249", "0.343", "0.473", "0.653", "0.9"]
]


def _brute_clustered_se(rows: list[tuple[int, str, float]]) -> float:
    """Miller (2024) by its definition: the CLT variance plus every within-cluster
    cross product of residuals, over all ordered pairs i != j (double loop)."""
    n = len(rows)
    centre = sum(d for *_, d in rows) / n
    clt = sum((d - centre) ** 2 for *_, d in rows) / (n * (n - 1))
    cross = 0.0
    for i, (_, task_i, d_i) in enumerate(rows):
        for j, (_, task_j, d_j) in enumerate(rows):
            if i != j and task_i == task_j:
                cross += (d_i - centre) * (d_j - centre)
    return math.sqrt(clt + cross / (n * n))


# Three seeds, tasks t1..t3 each run under every seed; differences A − B.
ROWS = [
    (101, "t1", 1.0), (101, "t2", 0.0), (101, "t3", 1.0),
    (102, "t1", 1.0), (102, "t2", 0.0), (102, "t3", 0.0),
    (103, "t1", 1.0), (103, "t2", -1.0), (103, "t3", 1.0),
]  # fmt: skip


def test_task_paired_decision_matches_a_brute_force_clustered_se_and_t_quantile():
    outcome = task_paired_decision(ROWS, min_effect=0.05, alpha=0.05)
    # mean = (1+0+1+1+0+0+1−1+1)/9 = 4/9.
    assert outcome.mean == pytest.approx(4 / 9)
    assert outcome.clustered_se == pytest.approx(_brute_clustered_se(ROWS))
    # By hand: residuals t1 (5/9)x3, t2 (−4/9, −4/9, −13/9), t3 (5/9, −4/9, 5/9);
    # ss = 75/81 + 201/81 + 66/81 = 342/81, CLT = 342/81/72; cluster sums 15/9, −21/9,
    # 6/9: cross = Σ (sum² − Σe²) = (225−75 + 441−201 + 36−66)/81 = 360/81, / 81.
    by_hand = math.sqrt(342 / 81 / 72 + 360 / 81 / 81)
    assert outcome.clustered_se == pytest.approx(by_hand)
    # Three clusters: t quantile on 2 df (scipy.stats, not the code's scipy.special).
    critical = float(scipy_stats.t.ppf(0.975, 2))
    assert outcome.critical == pytest.approx(critical)
    assert outcome.threshold == pytest.approx(max(0.05, critical * by_hand))
    # 4/9 = 0.444 against 4.303 × 0.2795 = 1.203: within the threshold.
    assert (outcome.verdict, outcome.reason) == ("inconclusive", "within-threshold")
    assert (outcome.n_observations, outcome.n_clusters, outcome.n_seeds) == (9, 3, 3)


def test_task_paired_decision_favors_b_beyond_the_clustered_threshold():
    # Ten tasks under three seeds: B wins t0..t8 under every seed, t9 ties: every
    # cluster sum is −3 but t9's 0, so the mean is −27/30 = −0.9, far beyond the bar.
    rows = [(s, f"t{j}", -1.0 if j < 9 else 0.0) for s in (1, 2, 3) for j in range(10)]
    outcome = task_paired_decision(rows, min_effect=0.05, alpha=0.05)
    se = _brute_clustered_se(rows)
    critical = float(scipy_stats.t.ppf(0.975, 9))
    assert outcome.mean == pytest.approx(-0.9)
    assert -critical * se > -0.9  # the brute-force bar is crossed
    assert (outcome.verdict, outcome.reason) == ("favors-b", "exceeds-threshold")


def test_task_paired_decision_below_three_seeds_is_inconclusive():
    rows = [(s, f"t{j}", 1.0) for s in (1, 2) for j in range(5)]
    outcome = task_paired_decision(rows, min_effect=0.0, alpha=0.05)
    assert (outcome.verdict, outcome.reason) == ("inconclusive", "too-few-replicates")


def _brute_wealth(scaled: list[Fraction]) -> tuple[list[Fraction], list[Fraction]]:
    """The mixture wealth by its definition, in exact fractions."""
    path_a, path_b = [], []
    for n in range(1, len(scaled) + 1):
        prefix = scaled[:n]
        a = [math.prod((1 + bet * x for x in prefix), start=Fraction(1)) for bet in BETS]
        b = [math.prod((1 - bet * x for x in prefix), start=Fraction(1)) for bet in BETS]
        path_a.append(sum(a) / len(BETS))
        path_b.append(sum(b) / len(BETS))
    return path_a, path_b


def test_sequential_wealth_and_crossing_match_an_exact_brute_force():
    # Two seeds of four tasks, task_success differences; then a third seed of wins.
    seeds = [[1.0, 0.0, 1.0, -1.0], [1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    outcome = sequential_decision(seeds, bound=1.0, min_effect=0.05, alpha=0.05)
    flat = [Fraction(x).limit_denominator() for seed in seeds for x in seed]
    path_a, path_b = _brute_wealth(flat)
    assert outcome.wealth_a == pytest.approx(float(max(path_a)))
    assert outcome.wealth_b == pytest.approx(float(max(path_b)))
    # Threshold 2/α = 40: the first index at which A's exact wealth reaches it, and the
    # seed that holds it (positions 0-3 seed 1, 4-7 seed 2, 8-11 seed 3).
    first = next((i for i, w in enumerate(path_a) if w >= 40), None)
    expected_seed = None if first is None else first // 4 + 1
    assert outcome.crossed_a == expected_seed
    assert outcome.crossed_b is None
    called = expected_seed is not None and sum(flat) / len(flat) > Fraction(1, 20)
    assert outcome.verdict == ("favors-a" if called else "inconclusive")


def test_sequential_decision_needs_the_crossing_by_hand():
    # All wins: A's wealth after n wins is the mean over bets of (1 + λ)^n, computed
    # here term by term; the smallest n reaching 40 decides in which of the 4-task
    # seeds A is first favoured.
    n_first = next(n for n in range(1, 100) if sum((1 + float(b)) ** n for b in BETS) / 10 >= 40)
    seeds = [[1.0] * 4 for _ in range(4)]
    outcome = sequential_decision(seeds, bound=1.0, min_effect=0.05, alpha=0.05)
    assert outcome.crossed_a == math.ceil(n_first / 4)
    assert (outcome.verdict, outcome.reason) == ("favors-a", "exceeds-threshold")
    # One seed of four wins is not enough: (1.9^4 + 1.653^4 + ...) / 10 < 40.
    early = sequential_decision(seeds[:1], bound=1.0, min_effect=0.05, alpha=0.05)
    assert n_first > 4
    assert (early.verdict, early.reason) == ("inconclusive", "within-threshold")


def test_sequential_decision_scales_by_the_declared_bound():
    # Token differences of 100 with bound 200 are the scaled value 1/2 each.
    seeds = [[100.0] * 5 for _ in range(4)]
    outcome = sequential_decision(seeds, bound=200.0, min_effect=50.0, alpha=0.05)
    brute = _brute_wealth([Fraction(1, 2)] * 20)[0]
    assert outcome.wealth_a == pytest.approx(float(max(brute)))


def test_the_bets_are_the_documented_grid_and_a_short_path_matches_hand_arithmetic():
    assert [Fraction(repr(b)) for b in MODULE_BETS] == BETS
    # A win then a loss: A's wealth is (1/G) Σ (1 + λ) = 1 + mean(λ), then
    # (1/G) Σ (1 + λ)(1 − λ) = 1 − mean(λ²); B's is the mirror: 1 − mean(λ), the same
    # 1 − mean(λ²). Sums by hand: Σλ = 3.144, Σλ² = 1.705996 (0.0025 + 0.004761 +
    # 0.009025 + 0.017161 + 0.032761 + 0.062001 + 0.117649 + 0.223729 + 0.426409 + 0.81).
    path_a, path_b = sequential_wealth([1.0, -1.0])
    assert sum(BETS) == Fraction("3.144")
    assert sum(b * b for b in BETS) == Fraction("1.705996")
    assert path_a == pytest.approx([1.3144, 1 - 0.1705996], abs=1e-12)
    assert path_b == pytest.approx([1 - 0.3144, 1 - 0.1705996], abs=1e-12)


def _exact_law(length: int, law: dict[int, Fraction]):
    """Every sequence of ``length`` differences in {−1, 0, 1} with its exact probability
    under independent draws from ``law`` (3^length sequences)."""
    for sequence in itertools.product((-1, 0, 1), repeat=length):
        yield sequence, math.prod((law[x] for x in sequence), start=Fraction(1))


def test_the_wealth_is_a_martingale_under_a_a_and_ville_bounds_its_running_maximum():
    # The premise of the anytime A/A guarantee, checked exactly on the library's own
    # wealth: under an A/A law (a tie half the time, a win or a loss a quarter each)
    # the expected wealth after 8 tasks is 1, and under a law with a negative mean it
    # is at most 1; the probability that the running maximum ever reaches c is at
    # most 1/c (Ville's inequality), enumerated over all 3^8 sequences.
    aa = {-1: Fraction(1, 4), 0: Fraction(1, 2), 1: Fraction(1, 4)}
    worse = {-1: Fraction(3, 10), 0: Fraction(1, 2), 1: Fraction(1, 5)}
    expected_aa = expected_worse = 0.0
    reach = {2.0: Fraction(0), 3.0: Fraction(0)}
    for (sequence, p_aa), (_, p_worse) in zip(_exact_law(8, aa), _exact_law(8, worse), strict=True):
        path_a, _ = sequential_wealth([float(x) for x in sequence])
        expected_aa += float(p_aa) * path_a[-1]
        expected_worse += float(p_worse) * path_a[-1]
        for c in reach:
            if max(path_a) >= c:
                reach[c] += p_aa
    assert expected_aa == pytest.approx(1.0, abs=1e-12)
    assert expected_worse < 1.0
    for c, probability in reach.items():
        assert 0 < probability <= Fraction(1) / Fraction(c)


def test_expected_seeds_is_walds_figure():
    # differences ±1 alternate: sd² = n/(n−1) for n = 4 → 4/3; Δ = 0.1; g = 0.01/(8/3);
    # log(2·10/0.05)/(2 · g) with 2 tasks per seed.
    figure = expected_seeds([1.0, -1.0, 1.0, -1.0], tasks_per_seed=2, min_effect=0.05, alpha=0.05)
    assert figure == pytest.approx(math.log(400) / (2 * (0.01 / (8 / 3))))
    assert expected_seeds([1.0, -1.0], tasks_per_seed=2, min_effect=0.0, alpha=0.05) is None


# --- through compare() ------------------------------------------------------------


def _replicate(seed: int, outcomes: dict[str, float], tokens: dict[str, float]) -> ReplicateRuns:
    common = {
        "subject_digest": f"sha256:subject-{seed}",
        "suite_digest": SUITE.digest,
        "assignment_digest": f"sha256:assignment-{seed}",
        "seed": seed,
    }

    def result(key: str, unit: str, values: dict[str, float]) -> MetricResult:
        return MetricResult(
            metric=key,
            unit=unit,
            reference_derived=key == "task_success",
            slice="all-tasks",
            n_tasks=len(values),
            value=sum(values.values()) / len(values),
        )

    def observations(values: dict[str, float]) -> tuple[TaskObservation, ...]:
        return tuple(
            TaskObservation(task_id=task, position=i, value=value)
            for i, (task, value) in enumerate(sorted(values.items()))
        )

    return ReplicateRuns(
        seed=seed,
        suite_digest=SUITE.digest,
        assignment_digest=f"sha256:assignment-{seed}",
        evaluations=(
            EvaluationResult(
                evaluator="harness-outcome",
                evaluator_fingerprint="sha256:outcome-v1",
                determinism="DETERMINISTIC",
                metrics=(
                    result("task_success", "fraction", outcomes),
                    result("total_tokens", "tokens", tokens),
                ),
                **common,
            ),
        ),
        facets={"model": {"id": "sim"}},
        timing_environment="ci",
        task_observations={
            "task_success": observations(outcomes),
            "total_tokens": observations(tokens),
        },
    )


def _candidates() -> tuple[CandidateRuns, CandidateRuns]:
    # A solves every task of ROWS' first column pattern; differences as in ROWS.
    a_runs, b_runs = [], []
    for seed in (101, 102, 103):
        mine = {task: d for s, task, d in ROWS if s == seed}
        a = {task: 1.0 if d >= 0 else 0.0 for task, d in mine.items()}
        b = {task: a[task] - d for task, d in mine.items()}
        tokens_a = {task: 100.0 for task in mine}
        tokens_b = {task: 130.0 for task in mine}
        a_runs.append(_replicate(seed, a, tokens_a))
        b_runs.append(_replicate(seed, b, tokens_b))
    return (
        CandidateRuns(name="a", harness_fingerprint="sha256:h-a", replicates=tuple(a_runs)),
        CandidateRuns(name="b", harness_fingerprint="sha256:h-b", replicates=tuple(b_runs)),
    )


def _spec(method: str, **extra) -> ComparisonSpec:
    return ComparisonSpec(
        objectives=(
            ObjectiveMetric(metric="task_success", direction="maximize", min_effect=0.05),
            ObjectiveMetric(metric="total_tokens", direction="minimize", min_effect=10),
        ),
        method=method,
        **extra,
    )


def test_compare_under_task_paired_names_its_method_and_decides_by_it():
    a, b = _candidates()
    report = compare(a, b, _spec(TASK_PAIRED), SUITE)
    assert report.method == TASK_PAIRED
    success = report.metrics["task_success"]
    detail = success.method_detail
    assert detail.method == TASK_PAIRED
    assert detail.clustered_se == pytest.approx(_brute_clustered_se(ROWS))
    assert success.verdict == "inconclusive"
    # Tokens: B spends 30 more on every task; no spread: clustered se 0, the bar is
    # min_effect 10, 30 > 10 favours A (minimized).
    tokens = report.metrics["total_tokens"]
    assert (tokens.verdict, tokens.reason) == ("favors-a", "exceeds-threshold")
    assert tokens.method_detail.threshold == 10
    assert report.relation == "favors-a"
    # The spec's rule's A/A figures are not this method's: none are stated.
    assert report.calibration is None
    assert json.loads(canonical_bytes(report))["spec"]["method"] == TASK_PAIRED


def test_compare_under_sequential_refuses_a_difference_beyond_the_bound():
    a, b = _candidates()
    spec = _spec(SEQUENTIAL_PAIRED, bounds={"total_tokens": 20.0})
    with pytest.raises(ComparisonError) as error:
        compare(a, b, spec, SUITE)
    assert error.value.reason == "out-of-bound"


def test_compare_under_sequential_splits_alpha_over_the_objectives():
    a, b = _candidates()
    report = compare(a, b, _spec(SEQUENTIAL_PAIRED, bounds={"total_tokens": 60.0}), SUITE)
    tokens = report.metrics["total_tokens"].method_detail
    assert tokens.alpha == pytest.approx(0.025)
    assert tokens.threshold == pytest.approx(80.0)  # 2 / (0.05 / 2)
    # Nine differences of 30/60 = 1/2: the exact mixture's largest wealth.
    brute = max(_brute_wealth([Fraction(1, 2)] * 9)[0])
    assert tokens.wealth_a == pytest.approx(float(brute))
    called = brute >= 80
    assert report.metrics["total_tokens"].verdict == ("favors-a" if called else "inconclusive")


def test_sequential_needs_a_declared_bound_for_an_unbounded_objective():
    with pytest.raises(ValidationError, match="total_tokens needs a declared bound"):
        _spec(SEQUENTIAL_PAIRED)


def test_the_default_spec_serialises_as_before_methods_existed():
    spec = _spec("paired-difference/v1")
    data = json.loads(canonical_bytes(spec))
    assert set(data) == {"objectives", "k", "disclosure", "calibrate"}
    a, b = _candidates()
    report = json.loads(canonical_bytes(compare(a, b, spec, SUITE)))
    assert report["method"] == "paired-difference/v1"
    assert all("method_detail" not in metric for metric in report["metrics"].values())


def test_a_method_without_task_observations_is_refused():
    a, b = _candidates()
    bare = CandidateRuns(
        name="b",
        harness_fingerprint="sha256:h-b",
        replicates=tuple(r.model_copy(update={"task_observations": {}}) for r in b.replicates),
    )
    with pytest.raises(ComparisonError) as error:
        compare(a, bare, _spec(TASK_PAIRED), SUITE)
    assert error.value.reason == "no-task-observations"


def test_sequential_a_a_rate_over_ten_looks_stays_below_alpha():
    # 400 A/A trials of 10 seeds x 20 tasks, each side solving a task with the task's
    # own probability (0.2..0.8): a look after every seed. Ville's inequality bounds
    # the share of trials in which any look names a side by alpha = 0.05; the
    # generator is seeded from sha256 of this test's name.
    import hashlib

    import numpy as np

    seed = int.from_bytes(hashlib.sha256(b"sequential-aa-ten-looks").digest()[:8], "big")
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.2, 0.8, (400, 10, 20))
    differences = (rng.random(p.shape) < p).astype(float) - (rng.random(p.shape) < p)
    named = 0
    for trial in differences:
        seeds = [list(map(float, seed)) for seed in trial]
        calls = [
            sequential_decision(seeds[:look], bound=1.0, min_effect=0.0, alpha=0.05).verdict
            for look in range(1, 11)
        ]
        named += any(call != "inconclusive" for call in calls)
    assert named / 400 <= 0.05
