"""Descriptive statistics of comparisons, against hand or closed-form values."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.comparison import stats


def test_wilson_interval_seven_of_ten():
    # Wilson (1927); the textbook example 7/10 at 95%: [0.3968, 0.8922].
    low, high = stats.wilson_interval(7, 10)
    assert (round(low, 4), round(high, 4)) == (0.3968, 0.8922)


def test_wilson_interval_edges_stay_inside_unit_interval():
    # 0/10: centre = (z²/2n)/(1 + z²/n) and the half-width equal to it → low 0;
    # high = z²/(n + z²) = 3.8415/13.8415 ≈ 0.2775. 10/10 mirrors it.
    low, high = stats.wilson_interval(0, 10)
    assert low == pytest.approx(0.0, abs=1e-15)
    assert high == pytest.approx(0.2775327998628892, rel=1e-12)
    low, high = stats.wilson_interval(10, 10)
    assert high == pytest.approx(1.0, abs=1e-15)
    assert low == pytest.approx(1 - 0.2775327998628892, rel=1e-12)
    with pytest.raises(ValueError):
        stats.wilson_interval(3, 2)


def test_t_interval_matches_the_closed_form_at_two_degrees_of_freedom():
    # At df = 2 the t CDF is F(t) = 1/2 + t / (2 sqrt(2 + t²)); solving F(t) = 0.975
    # gives t = u·sqrt(2 / (1 − u²)) with u = 0.95: 4.30265272974946385... (40-digit Decimal).
    t = 0.95 * math.sqrt(2 / (1 - 0.95**2))
    low, high = stats.t_interval(2.0, 1.0, df=2)
    assert low == pytest.approx(2.0 - t, rel=1e-12)
    assert high == pytest.approx(2.0 + t, rel=1e-12)
    assert t == pytest.approx(4.302652729749464, rel=1e-15)


def test_t_interval_is_unknown_without_degrees_of_freedom_or_se():
    assert stats.t_interval(1.0, None, df=2) is None
    assert stats.t_interval(1.0, 0.5, df=0) is None


def test_coverage_of_two_se_at_three_replicates():
    # df = 2: coverage = 2F(2) − 1 = 2/sqrt(2 + 4) = 2/sqrt(6) ≈ 0.8165.
    assert stats.t_coverage(2.0, 2) == pytest.approx(2 / math.sqrt(6), rel=1e-12)
    assert round(stats.t_coverage(2.0, 2), 4) == 0.8165
    # df = 1 (Cauchy): coverage = (2/π)·atan(k) = 0.7048 for k = 2.
    assert stats.t_coverage(2.0, 1) == pytest.approx(2 / math.pi * math.atan(2.0), rel=1e-12)
    assert stats.t_coverage(2.0, 0) is None


def test_mean_sd_and_se_are_exact_on_golden_values():
    # (1, 4, 1): mean 2, ss 6, sd = sqrt(6/2) = sqrt(3), se = sqrt(6/6) = 1.
    assert stats.mean([1.0, 4.0, 1.0]) == 2.0
    assert stats.sample_sd([1.0, 4.0, 1.0]) == math.sqrt(3)
    assert stats.standard_error([1.0, 4.0, 1.0]) == 1.0
    # One value: unknown, never zero.
    assert stats.sample_sd([5.0]) is None
    assert stats.standard_error([5.0]) is None


def test_pass_hat_k_small_hand_example():
    # t1: 3/3 solved, t2: 2/3, t3: 0/3 (n = 3 trials each).
    # pass^1 = (1 + 2/3 + 0)/3 = 5/9; pass^2 = (C(3,2)/C(3,2) + C(2,2)/C(3,2) + 0)/3
    # = (1 + 1/3)/3 = 4/9; pass^3 = (1 + 0 + 0)/3 = 1/3.
    outcomes = {
        "t1": [True, True, True],
        "t2": [True, False, True],
        "t3": [False, False, False],
    }
    assert stats.pass_hat_k(outcomes) == ((1, 5 / 9), (2, 4 / 9), (3, 1 / 3))


def test_pass_hat_k_stops_at_the_smallest_trial_count():
    # t1 ran 3 times (2 successes), t2 twice (1): k = 1..2.
    # pass^1 = (2/3 + 1/2)/2 = 7/12; pass^2 = (C(2,2)/C(3,2) + C(1,2)/C(2,2))/2 = 1/6.
    outcomes = {"t1": [True, True, False], "t2": [False, True]}
    assert stats.pass_hat_k(outcomes) == ((1, 7 / 12), (2, 1 / 6))
    assert stats.pass_hat_k({}) == ()


def test_clustered_standard_error_small_hand_example():
    # Cluster t1: (3, 3), t2: (1, 1). n = 4, mean 2, deviations (1, 1, −1, −1), ss 4.
    # SE_CLT² = 4/(4·3) = 1/3. Cross terms: t1 (1+1)² − 2 = 2, t2 (−2)² − 2 = 2;
    # total 4, /n² = 1/4. SE² = 1/3 + 1/4 = 7/12 → SE = sqrt(7/12) ≈ 0.7638,
    # larger than the independent sqrt(1/3) ≈ 0.5774: the clusters are correlated.
    observations = [("t1", 3.0), ("t1", 3.0), ("t2", 1.0), ("t2", 1.0)]
    assert stats.clustered_standard_error(observations) == pytest.approx(
        math.sqrt(7 / 12), rel=1e-15
    )
    values = [value for _, value in observations]
    assert stats.standard_error(values) == pytest.approx(math.sqrt(1 / 3), rel=1e-15)


def test_clustered_standard_error_of_singleton_clusters_is_the_plain_one():
    # With one observation per cluster every cross term is 0: SE = SE_CLT.
    observations = [("t1", 1.0), ("t2", 4.0), ("t3", 1.0)]
    assert stats.clustered_standard_error(observations) == 1.0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("abcde"), st.integers(-50, 50).map(float)),
        min_size=3,
        max_size=30,
    )
)
def test_clustered_standard_error_is_the_cluster_sandwich_with_the_clt_diagonal(observations):
    # Independently, with numpy: the CR0 sandwich variance of a mean is
    # sum over clusters of (sum of residuals)^2 / n^2. Its diagonal (sum e^2 / n^2)
    # is replaced by the unbiased SE_CLT^2 = sum e^2 / (n (n - 1)); the rest is the
    # cross terms, which Miller's estimator adds to SE_CLT^2.
    labels = np.array([label for label, _ in observations])
    values = np.array([value for _, value in observations])
    if len(set(labels.tolist())) < 2:
        assert stats.clustered_standard_error(observations) is None
        return
    n = len(values)
    residuals = values - values.mean()
    sums = np.array([residuals[labels == label].sum() for label in sorted(set(labels))])
    squares = float((residuals**2).sum())
    variance = float((sums**2).sum()) / n**2 - squares / n**2 + squares / (n * (n - 1))
    got = stats.clustered_standard_error(observations)
    if variance < -1e-9:
        assert got is None
    elif variance > 1e-9:
        assert got == pytest.approx(math.sqrt(variance), rel=1e-9)


def test_clustered_standard_error_needs_two_clusters():
    assert stats.clustered_standard_error([("t1", 1.0), ("t1", 2.0)]) is None


def test_pearson_correlation_and_when_it_is_undefined():
    assert stats.pearson([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]) == pytest.approx(1.0)
    assert stats.pearson([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    # (1, 2, 3) vs (1, 3, 2): sxy = 1, sxx = syy = 2 → 0.5.
    assert stats.pearson([1.0, 2.0, 3.0], [1.0, 3.0, 2.0]) == pytest.approx(0.5)
    assert stats.pearson([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) is None
    assert stats.pearson([1.0, 2.0], [2.0, 1.0]) is None


def test_exact_reads_a_float_as_the_decimal_the_records_hold():
    # 0.65 and 0.6 are not binary fractions; as written (repr / RFC 8785 digits)
    # they are 13/20 and 3/5, so their difference is exactly 1/20 = 0.05, where the
    # float subtraction gives 0.05000000000000004.
    assert 0.65 - 0.6 != 0.05
    assert stats.exact(0.65) - stats.exact(0.6) == Fraction(1, 20) == stats.exact(0.05)
    assert stats.exact(1e300) == 10**300
    assert stats.exact(-0.0) == 0


def test_exact_mean_and_variance_of_the_mean():
    # (1, 4, 1): mean 2, ss 6, se² = 6/(3·2) = 1. One value: unknown.
    values = [Fraction(1), Fraction(4), Fraction(1)]
    assert stats.exact_mean(values) == 2
    assert stats.exact_variance_of_mean(values) == 1
    assert stats.exact_variance_of_mean([Fraction(5)]) is None


@pytest.mark.parametrize(
    ("differences", "min_effect", "k", "outcome"),
    [
        # mean 2, se 1: exactly on k·se = 2 → within; k = 1.99 → favors-a.
        ((1, 4, 1), 0, 2, "within-threshold"),
        ((1, 4, 1), 0, Fraction(199, 100), "favors-a"),
        ((-1, -4, -1), 0, Fraction(199, 100), "favors-b"),
        # min_effect dominates: mean 2 is not above 2.
        ((1, 4, 1), 2, 1, "within-threshold"),
        # Constant differences: se = 0. With min_effect 0 no constant wins...
        ((Fraction(1, 10**9),) * 3, 0, 2, "no-variance"),
        ((0, 0, 0), 0, 2, "no-variance"),
        # ...with a positive min_effect the mean must exceed it, strictly.
        ((Fraction(1, 20),) * 3, Fraction(1, 20), 2, "within-threshold"),
        ((Fraction(1, 10),) * 3, Fraction(1, 20), 2, "favors-a"),
    ],
)
def test_paired_rule_decides_exactly(differences, min_effect, k, outcome):
    exact = [Fraction(d) for d in differences]
    assert stats.paired_rule(exact, Fraction(min_effect), Fraction(k)) == outcome


def test_paired_rule_compares_squares_not_rounded_roots():
    # d = (1, 2, 3, 4, 6): mean 16/5, ss = 74/5, se² = 74/(5·20) = 74/100. The tie
    # mean = k·se needs k = sqrt(10.24/0.74) = sqrt(1024/74) = 3.71990..., irrational:
    # its 15-decimal floor is below it (favors-a), one unit more is above it (within),
    # 1e-15 apart, finer than float k·se could tell.
    exact = [Fraction(d) for d in (1, 2, 3, 4, 6)]
    assert stats.exact_variance_of_mean(exact) == Fraction(74, 100)
    tie_k_squared = Fraction(1024, 74)
    below = Fraction(math.isqrt(10**30 * tie_k_squared.numerator // tie_k_squared.denominator))
    assert stats.paired_rule(exact, Fraction(0), below / 10**15) == "favors-a"
    assert stats.paired_rule(exact, Fraction(0), (below + 1) / 10**15) == "within-threshold"


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda n: st.dictionaries(
            st.text(min_size=1, max_size=3),
            st.lists(st.booleans(), min_size=n, max_size=n + 2),
            min_size=1,
            max_size=12,
        )
    )
)
def test_pass_hat_k_is_the_mean_over_tasks_of_the_exact_ratio(outcomes):
    # Independent: the definition, task by task, in exact fractions.
    n_min = min(len(trials) for trials in outcomes.values())
    expected = tuple(
        (
            k,
            float(
                sum(
                    Fraction(math.comb(sum(trials), k), math.comb(len(trials), k))
                    for trials in outcomes.values()
                )
                / len(outcomes)
            ),
        )
        for k in range(1, n_min + 1)
    )
    assert stats.pass_hat_k(outcomes) == expected
