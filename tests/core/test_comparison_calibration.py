"""A/A calibration and power of paired-difference/v1, against closed forms, brute
force and independent simulation.

The bars check (issue 20, Done-when) runs simulated A/A comparisons through the
real compare(): both sides are the same harness, so every side the rule names is a
false positive, and the measured share must sit within 2 percentage points of what
the report says.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as scipy_stats

from xaytune.comparison import calibration, power, stats
from xaytune.core.harness_comparison import compare

BOTH = (("task_success", "maximize", 0.0), ("total_tokens", "minimize", 0.0))


# --- formulas -------------------------------------------------------------------


def test_t_aa_rate_closed_form_at_three_replicates():
    # df = 2: P(T > t) = 1/2 − t/(2 sqrt(2 + t²)), so 2·P(T > 2) = 1 − 2/sqrt(6).
    assert calibration.t_aa_rate(2.0, 3) == pytest.approx(1 - 2 / math.sqrt(6), rel=1e-12)
    assert round(calibration.t_aa_rate(2.0, 5), 4) == 0.1161
    assert round(calibration.t_aa_rate(2.0, 10), 4) == 0.0766
    # Fewer than three replicates: the rule never names a side.
    assert calibration.t_aa_rate(2.0, 2) == 0.0


def test_relation_rates_independent_and_bounds():
    # Two independent objectives at R = 3: 1 − (2/sqrt(6))² = 1 − 4/6 = 1/3.
    p = 1 - 2 / math.sqrt(6)
    independent, low, high = calibration.relation_aa_rates([p, p])
    assert independent == pytest.approx(1 / 3, rel=1e-12)
    assert (low, high) == (p, pytest.approx(2 * p))
    assert calibration.relation_aa_rates([0.6, 0.7])[2] == 1.0  # the union bound caps at 1
    assert calibration.relation_aa_rates([]) == (0.0, 0.0, 0.0)


def _brute_force_lattice(n: int, p: Fraction, r: int, k: Fraction, floor: Fraction) -> Fraction:
    """Every (X, Y) per seed with exact binomial probabilities; decided by the rule
    on the exact differences (X − Y)/n."""
    pmf = {x: math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)}
    per_seed = [(Fraction(x - y, n), pmf[x] * pmf[y]) for x in pmf for y in pmf]
    named = Fraction(0)
    for seeds in itertools.product(per_seed, repeat=r):
        differences = [d for d, _ in seeds]
        if stats.paired_rule(differences, floor, k) in ("favors-a", "favors-b"):
            named += math.prod(w for _, w in seeds)
    return named


@pytest.mark.parametrize(
    ("n", "p", "r", "k", "min_effect"),
    [(2, 0.5, 3, 2.0, 0.0), (3, 0.3, 3, 1.5, 0.0), (3, 0.5, 3, 2.0, 0.25), (2, 0.5, 4, 2.0, 0.0)],
)
def test_lattice_aa_rate_matches_brute_force_enumeration(n, p, r, k, min_effect):
    expected = _brute_force_lattice(
        n, Fraction(str(p)), r, Fraction(str(k)), Fraction(str(min_effect))
    )
    assert calibration.lattice_aa_rate(n, p, r, k, min_effect) == pytest.approx(
        float(expected), abs=1e-12
    )


def test_lattice_aa_rate_on_twenty_tasks_is_below_normal_theory_at_three_replicates():
    # At R = 3 the t tail comes from draws with a tiny sd, which success counts on 20
    # tasks make rare: 13.5% at a 70% success rate (14.1% at 50%, 9.8% at 90%).
    t_rate = calibration.t_aa_rate(2.0, 3)
    for p, expected in ((0.5, 0.1408), (0.7, 0.1352), (0.9, 0.0979)):
        rate = calibration.lattice_aa_rate(20, p, 3, 2.0, 0.0)
        assert round(rate, 4) == expected and rate < t_rate - 0.04
    assert calibration.lattice_aa_rate(20, 1.0, 3, 2.0, 0.0) == 0.0  # nothing varies
    assert calibration.lattice_aa_rate(20, 0.7, 5, 2.0, 0.0) is None  # normal theory


# --- the bars check: simulated A/A comparisons through compare() -----------------


def _aa_comparison(runs, rng: np.random.Generator, r: int, n: int = 20, p: float = 0.7):
    """One A/A comparison: both sides draw success counts Binomial(n, p) and per-task
    tokens round(lognormal(6.5, 0.6)) (run value: the mean over n tasks)."""
    columns = []
    for _ in "ab":
        success = rng.binomial(n, p, r) / n
        tokens = np.rint(rng.lognormal(6.5, 0.6, (r, n))).mean(axis=1)
        columns.append({"task_success": success.tolist(), "total_tokens": tokens.tolist()})
    a = runs.candidate("a", columns[0], n_tasks=n)
    b = runs.candidate("b", columns[1], n_tasks=n)
    return compare(a, b, runs.spec(*BOTH), runs.suite)


@pytest.mark.parametrize(("r", "seed"), [(3, 20263), (5, 20265)])
def test_reported_aa_rates_match_the_rate_measured_through_compare(runs, r, seed):
    """1,500 A/A comparisons per R (about 4 s each), not 200: at these rates 200
    comparisons give a binomial SE of sqrt(0.18·0.82/200) ≈ 2.7 points, too coarse
    for a 2-point check; 1,500 give ≈ 1.0 point at R = 3 (0.8 at R = 5), so a model
    off by 4 points — normal theory for task_success on 20 tasks at R = 3 — fails.

    task_success is reported on the binomial lattice (R = 3; the pooled success
    rate of each comparison), total_tokens by normal theory (2·P(T_{R−1} > 2)).
    The seed is fixed: the check is deterministic.
    """
    rng = np.random.default_rng(seed)
    trials = 1_500
    named = np.zeros(2)
    relation = 0
    reported = np.zeros(3)
    for _ in range(trials):
        report = _aa_comparison(runs, rng, r)
        sides = [report.metrics[m].verdict != "inconclusive" for m, _, _ in BOTH]
        named += sides
        relation += report.relation != "inconclusive"
        cal = report.calibration
        reported += [
            cal.objective("task_success").rate,
            cal.objective("total_tokens").rate,
            cal.relation_rate_independent,
        ]
    measured = np.append(named, relation) / trials
    reported /= trials
    assert report.calibration.objective("total_tokens").model == "student-t"
    expected_model = "binomial-lattice" if r == 3 else "student-t"
    assert report.calibration.objective("task_success").model == expected_model
    assert np.all(np.abs(measured - reported) <= 0.02), (measured, reported)
    if r == 3:
        # Normal theory alone would have been 4 points off for task_success.
        assert measured[0] < calibration.t_aa_rate(2.0, 3) - 0.03


# --- measured by the library's simulation -------------------------------------------


def _three_seeds(runs, calibrate: bool, shift: float = 0.0):
    a = runs.candidate(
        "a", {"task_success": [0.6, 0.75, 0.7], "total_tokens": [900.0, 1010.0, 950.0]}
    )
    b = runs.candidate(
        "b",
        {"task_success": [0.65, 0.6, 0.75], "total_tokens": [950.0 + shift, 980.0, 1000.0]},
    )
    return compare(a, b, runs.spec(*BOTH, calibrate=calibrate), runs.suite)


def test_measured_calibration_is_deterministic_and_only_on_request(runs):
    plain = _three_seeds(runs, calibrate=False)
    assert plain.calibration.measured is None
    assert all(o.measured is None for o in plain.calibration.objectives)
    first, second = _three_seeds(runs, calibrate=True), _three_seeds(runs, calibrate=True)
    assert first.calibration == second.calibration
    measured = first.calibration.measured
    assert measured.method == "normal-aa/v1" and measured.draws == 2_000
    # Another record, another stream.
    other = _three_seeds(runs, calibrate=True, shift=1.0).calibration.measured
    assert other.seed_digest != measured.seed_digest
    # Verdicts never move with calibration.
    assert {k: m.verdict for k, m in plain.metrics.items()} == {
        k: m.verdict for k, m in first.metrics.items()
    }


def test_measured_rate_of_a_continuous_objective_is_normal_theory(runs):
    # With min_effect 0, each simulated objective is normal and the rule's A/A rate
    # is 2·P(T_2 > 2) = 18.35% whatever the spread: within 3 Monte Carlo SE
    # (sqrt(0.18·0.82/2000) = 0.86 points) of it.
    tokens = _three_seeds(runs, calibrate=True).calibration.objective("total_tokens")
    assert abs(tokens.measured - calibration.t_aa_rate(2.0, 3)) < 3 * 0.0086


def test_calibration_of_a_report_that_is_not_comparable_or_too_short(runs):
    a = runs.candidate("a", {"task_success": [0.5, 0.6]})
    b = runs.candidate("b", {"task_success": [0.6, 0.5]})
    short = compare(a, b, runs.spec(BOTH[0]), runs.suite).calibration
    assert short.t_rate == 0.0 and short.relation_rate_independent == 0.0
    assert [o.rate for o in short.objectives] == [0.0]
    drifted = b.model_copy(
        update={"replicates": tuple(r.model_copy(update={"facets": {}}) for r in b.replicates)}
    )
    assert compare(a, drifted, runs.spec(BOTH[0]), runs.suite).calibration is None


# --- power ----------------------------------------------------------------------


def test_rule_power_matches_an_independent_simulation():
    # δ = 0.1, σ = 0.115, R = 3, k = 2, min_effect 0.05 (the quickstart's
    # task_success): 400,000 direct draws of the rule, SE ≈ 0.08 points.
    rng = np.random.default_rng(7)
    d = rng.normal(0.1, 0.115, size=(400_000, 3))
    mean, se = d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(3)
    simulated = float(np.mean(mean > np.maximum(0.05, 2 * se)))
    assert power.rule_power(0.1, 0.115, 3, 2.0, 0.05) == pytest.approx(simulated, abs=0.004)


def test_rule_power_without_min_effect_is_the_noncentral_t():
    for r, effect in ((3, 0.2), (10, 0.05)):
        nc = effect * math.sqrt(r) / 0.1
        assert power.rule_power(effect, 0.1, r, 2.0, 0.0) == pytest.approx(
            scipy_stats.nct.sf(2.0, r - 1, nc), rel=1e-9
        )


def test_a_true_difference_of_exactly_min_effect_is_called_under_half_the_time():
    for r in (3, 10, 100, 10_000):
        assert power.rule_power(0.05, 0.1, r, 2.0, 0.05) < 0.5
    assert power.rule_power(0.05, 0.1, 10_000, 2.0, 0.05) > 0.49
    assert power.replicates_for_power(0.05, 0.1, 2.0, 0.05) is None


def test_difference_and_replicates_for_eighty_percent_power():
    delta = power.difference_for_power(0.115, 3, 2.0, 0.05)
    assert power.rule_power(delta, 0.115, 3, 2.0, 0.05) == pytest.approx(0.8, abs=1e-9)
    r = power.replicates_for_power(0.1, 0.115, 2.0, 0.05)
    assert power.rule_power(0.1, 0.115, r, 2.0, 0.05) >= 0.8
    assert power.rule_power(0.1, 0.115, r - 1, 2.0, 0.05) < 0.8


def test_a_withheld_objective_shows_nothing_through_the_calibration(runs):
    # task_success over a single task is withheld under aggregate disclosure: its
    # pooled success rate (the lattice model) and its spread (the simulation) would
    # show through the released calibration, so it keeps to normal theory.
    a = runs.candidate("a", {"task_success": [1.0, 0.0, 1.0]}, n_tasks=1)
    b = runs.candidate("b", {"task_success": [0.0, 0.0, 1.0]}, n_tasks=1)
    aggregate = compare(a, b, runs.spec(BOTH[0], calibrate=True), runs.suite).released()
    assert aggregate.withheld == ("task_success",)
    (hidden,) = aggregate.calibration.objectives
    assert (hidden.model, hidden.success_rate, hidden.measured) == ("student-t", None, None)
    assert aggregate.calibration.measured is None
    spec = runs.spec(BOTH[0], calibrate=True, disclosure="per-task")
    (shown,) = compare(a, b, spec, runs.suite).released().calibration.objectives
    assert shown.model == "binomial-lattice" and shown.success_rate == 0.5
    assert shown.measured is not None
