"""The lattice A/A rate's binomial pmf is scipy.stats.binom.pmf, bit for bit.

``_comparison_calibration`` evaluates the Boost ufunc behind ``binom.pmf`` directly so a
run need not import ``scipy.stats`` (~0.5 s); the reports' figures must not move by a
single bit, so the independent method here is scipy.stats itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from xaytune.comparison import calibration

RATES = (0.0, 1.0, 0.5, 1 / 3, 0.7833333333333333, 1e-12, 1.0 - 1e-12, 0.999)


@pytest.mark.parametrize("n", [1, 2, 3, 20, 37, 100, 1000])
@pytest.mark.parametrize("rate", RATES)
def test_binomial_pmf_is_scipy_stats_bit_for_bit(n, rate):
    ours = calibration._binomial_pmf(n, rate)
    theirs = scipy_stats.binom.pmf(np.arange(n + 1), n, rate)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert ours.tobytes() == theirs.tobytes()


def _outcome(pmf, n: int, rate: float) -> bytes | str:
    """The pmf's bytes, or the error it raises (Boost overflows on subnormal rates)."""
    try:
        return pmf(n, rate).tobytes()
    except ArithmeticError as error:
        return type(error).__name__


@given(st.integers(1, 400), st.floats(0.0, 1.0))
def test_binomial_pmf_matches_scipy_stats_on_any_rate(n, rate):
    theirs = _outcome(lambda n, p: scipy_stats.binom.pmf(np.arange(n + 1), n, p), n, rate)
    assert _outcome(calibration._binomial_pmf, n, rate) == theirs


def test_lattice_rate_is_unchanged_by_the_direct_pmf(monkeypatch):
    # The quickstart's figure (20 tasks, pooled rate 0.783, R = 3, k = 2, min_effect
    # 0.05), computed once with the distribution object itself.
    args = (20, 0.7833333333333333, 3, 2.0, 0.05)
    calibration.lattice_aa_rate.cache_clear()
    direct = calibration.lattice_aa_rate(*args)
    monkeypatch.setattr(
        calibration,
        "_binomial_pmf",
        lambda n, p: scipy_stats.binom.pmf(np.arange(n + 1), n, p),
    )
    calibration.lattice_aa_rate.cache_clear()
    try:
        assert calibration.lattice_aa_rate(*args) == direct
    finally:
        calibration.lattice_aa_rate.cache_clear()
