"""Issue 30, part 1: the family-wise A/A rate of several challengers sharing one
baseline, planning at an upper confidence bound of the spread, and the small fixes
(se = 0 marker, "≤" on the relation's A/A, the calibrate=true caveat).

Every expected figure is computed here by another method than the code under test:
a brute-force enumeration, a closed form, or a plain Monte Carlo of the rule with
numpy's own generator.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from tests.core.test_harness_comparison import SUITE, candidate, spec
from xaytune.comparison.power import difference_for_power, power_of, spread_upper
from xaytune.core.harness_comparison import (
    FamilyObjective,
    compare,
    family_aa_rate,
    independent_family_rate,
)
from xaytune.report._markdown import render_markdown
from xaytune.report._words import (
    SE_ZERO_MARK,
    calibrate_caveat,
    power_cell,
    power_text,
    relation_bound,
    verdict_text,
)


def _names_side(d: tuple[int, ...], k: float, floor: Fraction) -> bool:
    """The spec's rule on integer differences, written out plainly."""
    r = len(d)
    mean = Fraction(sum(d), r)
    ss = sum((Fraction(x) - mean) ** 2 for x in d)
    se_squared = ss / (r * (r - 1))
    if se_squared == 0 and floor == 0:
        return False
    # |mean| > max(floor, k·se) ⇔ |mean| > floor and mean² > k²·se² (k = 2 exact).
    return abs(mean) > floor and mean * mean > Fraction(k) ** 2 * se_squared


def _brute_family(n: int, p: float, r: int, m: int, k: float, floor: Fraction) -> float:
    """P(at least one of m challengers names a side) with one SHARED baseline, every
    run Binomial(n, p) per seed, by enumerating every baseline and challenger outcome."""
    pmf = [math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)]
    runs = list(itertools.product(range(n + 1), repeat=r))
    weight = {run: math.prod(pmf[x] for x in run) for run in runs}
    total = 0.0
    for base in runs:
        # Given the baseline, the challengers are independent: P(one names a side).
        q = sum(
            weight[b]
            for b in runs
            if _names_side(tuple(x - y for x, y in zip(b, base, strict=True)), k, floor)
        )
        total += weight[base] * (1.0 - (1.0 - q) ** m)
    return total


def test_family_rate_on_a_lattice_is_the_brute_force_enumeration():
    # n = 4 tasks at 50%, R = 3, k = 2, min_effect 0 and 0.25 (one task; exact in
    # binary): small enough for the exact enumeration, which must agree with the plain
    # brute force over every baseline and challenger outcome to rounding.
    for min_effect, floor in ((0.0, Fraction(0)), (0.25, Fraction(1))):
        objective = FamilyObjective(
            metric="task_success",
            min_effect=min_effect,
            model="binomial-lattice",
            n_tasks=4,
            success_rate=0.5,
        )
        for m in (1, 2, 3):
            family = family_aa_rate(challengers=m, replicates=3, k=2.0, objectives=[objective])
            assert family.exact_objectives == ("task_success",)
            expected = _brute_family(4, 0.5, 3, m, 2.0, floor)
            assert family.per_objective["task_success"] == pytest.approx(expected, abs=1e-12)
            assert family.any_objective == pytest.approx(expected, abs=1e-12)
        assert family.one_challenger == pytest.approx(
            _brute_family(4, 0.5, 3, 1, 2.0, floor), abs=1e-12
        )


def test_family_rate_on_a_lattice_beyond_enumeration_is_simulated():
    # A min_effect with a long decimal (0.1234567891: 0.49 of a task) is not enumerated
    # (its fraction is not small): simulated, within 4 Monte Carlo standard errors of
    # the brute force.
    objective = FamilyObjective(
        metric="task_success",
        min_effect=0.1234567891,
        model="binomial-lattice",
        n_tasks=4,
        success_rate=0.5,
    )
    family = family_aa_rate(challengers=2, replicates=3, k=2.0, objectives=[objective])
    assert family.exact_objectives == ()
    expected = _brute_family(4, 0.5, 3, 2, 2.0, Fraction("0.1234567891") * 4)
    se = math.sqrt(expected * (1 - expected) / family.trials)
    assert abs(family.per_objective["task_success"] - expected) < 4 * se


def test_the_shared_baseline_makes_the_family_rate_lower_than_independence():
    # Brute force at n = 3, R = 3: with 3 challengers sharing the baseline, the chance
    # is below 1 − (1 − p)^3 (positively dependent events), which would overstate it.
    p = _brute_family(3, 0.5, 3, 1, 2.0, Fraction(0))
    shared = _brute_family(3, 0.5, 3, 3, 2.0, Fraction(0))
    assert shared < independent_family_rate([p, p, p]) - 0.01
    assert independent_family_rate([p, p, p]) == pytest.approx(1 - (1 - p) ** 3, rel=1e-12)


def test_family_rate_of_a_normal_objective_matches_a_plain_monte_carlo():
    # An independent Monte Carlo: numpy's Generator, baseline shared by 3 challengers,
    # R = 3, k = 2, sd 2 and min_effect 1; 200,000 trials (MC se ~0.1 point).
    rng = np.random.default_rng(20261204)
    trials, m, r, k, sd, floor = 200_000, 3, 3, 2.0, 2.0, 1.0
    base = rng.normal(0, sd, (trials, 1, r))
    challengers = rng.normal(0, sd, (trials, m, r))
    d = challengers - base
    se = d.std(axis=2, ddof=1) / math.sqrt(r)
    named = np.abs(d.mean(axis=2)) > np.maximum(floor, k * se)
    expected = float(named.any(axis=1).mean())
    objective = FamilyObjective(metric="total_tokens", min_effect=floor, model="normal", sd=sd)
    family = family_aa_rate(challengers=m, replicates=r, k=k, objectives=[objective])
    se_both = math.sqrt(expected * (1 - expected) * (1 / trials + 1 / family.trials))
    assert abs(family.per_objective["total_tokens"] - expected) < 4 * se_both


def test_family_rate_is_deterministic_and_recorded():
    objective = FamilyObjective(metric="t", min_effect=0.0, model="normal", sd=1.0)
    one = family_aa_rate(challengers=2, replicates=4, k=2.0, objectives=[objective])
    two = family_aa_rate(challengers=2, replicates=4, k=2.0, objectives=[objective])
    assert one == two
    assert one.seed_digest.startswith("sha256:") and one.trials == 20_000
    other = family_aa_rate(challengers=2, replicates=4, k=2.0, objectives=[objective], trials=999)
    assert other.seed_digest != one.seed_digest and other.trials == 999
    # Below three replicates the rule never names a side: 0, exactly.
    short = family_aa_rate(challengers=5, replicates=2, k=2.0, objectives=[objective])
    assert short.any_objective == 0.0 and short.per_objective == {"t": 0.0}


def test_spread_upper_is_the_chi_square_bound():
    # df 2: chi-square's CDF is 1 − exp(−x/2), so its 20% quantile is −2·ln(0.8).
    q = -2.0 * math.log(0.8)
    assert spread_upper(1.5, 3) == pytest.approx(1.5 * math.sqrt(2 / q), rel=1e-12)
    # It covers σ 80% of the time: a plain Monte Carlo of normal samples of 3.
    rng = np.random.default_rng(7)
    sds = rng.normal(0, 1, (100_000, 3)).std(axis=1, ddof=1)
    covered = np.mean([spread_upper(s, 3) >= 1.0 for s in sds[:20_000]])
    assert abs(covered - 0.8) < 4 * math.sqrt(0.16 / 20_000)


def test_the_stated_difference_has_its_power_when_the_bound_covers_sigma():
    # Choose the observed sd so that the upper bound is exactly σ = 1: the stated
    # difference X must then be called 80% of the time. Checked with a plain Monte
    # Carlo of the rule (R = 3, k = 2, min_effect 0.5), 40,000 draws.
    r, k, floor = 3, 2.0, 0.5
    observed = 1.0 / spread_upper(1.0, r)
    power = power_of(r, observed, observed / math.sqrt(r), k, floor)
    assert power.sd_upper == pytest.approx(1.0, rel=1e-12)
    assert power.difference_for_power == pytest.approx(difference_for_power(1.0, r, k, floor))
    rng = np.random.default_rng(11)
    d = rng.normal(power.difference_for_power, 1.0, (40_000, r))
    se = d.std(axis=1, ddof=1) / math.sqrt(r)
    called = float(np.mean(d.mean(axis=1) > np.maximum(floor, k * se)))
    assert abs(called - 0.8) < 4 * math.sqrt(0.16 / 40_000)


def test_power_is_rough_below_five_replicates_on_every_surface():
    tokens = compare(
        candidate("a", {"total_tokens": (100.0, 96.0, 100.0, 98.0)}, seeds=(1, 2, 3, 4)),
        candidate("b", {"total_tokens": (101.0, 100.0, 101.0, 99.0)}, seeds=(1, 2, 3, 4)),
        spec(("total_tokens", "minimize", 0.5)),
        SUITE,
    ).metrics["total_tokens"]
    assert tokens.descriptive.power.rough
    assert power_cell(tokens).endswith("(rough)")
    assert "rough: R = 4 is below 5" in power_text(tokens)
    five = power_of(5, 1.0, 1.0 / math.sqrt(5), 2.0, 0.5)
    assert not five.rough


def _constant_report():
    # Differences (3, 3, 3): se = 0, mean 3 > min_effect 1: favors a (fewer tokens).
    return compare(
        candidate("a", {"total_tokens": (100.0, 90.0, 95.0)}),
        candidate("b", {"total_tokens": (103.0, 93.0, 98.0)}),
        spec(("total_tokens", "minimize", 1.0)),
        SUITE,
    )


def test_a_verdict_named_with_no_spread_carries_its_marker():
    report = _constant_report()
    tokens = report.metrics["total_tokens"]
    assert (tokens.se, tokens.verdict) == (0.0, "favors-a")
    assert verdict_text(tokens) == f"favors-a {SE_ZERO_MARK}"
    assert SE_ZERO_MARK in render_markdown(report.released(), {})
    from xaytune.report import comparison_view, render_html, report_page

    page = render_html(report_page((comparison_view(report.released(), {}),)))
    assert SE_ZERO_MARK in page


def test_the_relation_aa_is_an_upper_bound_with_a_positive_min_effect():
    # total_tokens is student-t with min_effect 1 > 0: its rate is an upper bound.
    report = _constant_report()
    assert relation_bound(report) == "≤ "
    unfloored = compare(
        candidate("a", {"total_tokens": (100.0, 96.0, 100.0)}),
        candidate("b", {"total_tokens": (101.0, 100.0, 101.0)}),
        spec(("total_tokens", "minimize", 0.0)),
        SUITE,
    )
    assert relation_bound(unfloored) == ""


def test_calibrate_true_at_small_r_carries_a_caveat():
    assert "R = 3" in calibrate_caveat(3)
    assert calibrate_caveat(10) == ""
    report = compare(
        candidate("a", {"total_tokens": (100.0, 96.0, 100.0)}),
        candidate("b", {"total_tokens": (101.0, 100.0, 101.0)}),
        spec(("total_tokens", "minimize", 0.0), calibrate=True),
        SUITE,
    )
    assert "Caveat: at R = 3" in render_markdown(report.released(), {})
