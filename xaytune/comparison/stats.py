"""Small, exact-as-possible statistics for replicate comparisons.

Pure functions over Python floats. Sums use :func:`math.fsum` so a result does not
depend on the order of the seeds, and a standard error is one square root of one
quotient (``sqrt(ss / (n (n - 1)))``), so hand-computed golden values are exact
whenever that quotient is a perfect square. scipy is used only for the t and normal
quantiles of the descriptive parts (``scipy.special``, imported on first use: importing
this module costs nothing for a command that never compares).

The verdict itself is decided by :func:`paired_rule` in exact rational arithmetic
(:func:`exact` reads each float as the decimal the records hold), so a mean that
sits exactly on ``min_effect`` is decided by the rule, never by float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Literal

__all__ = [
    "RuleOutcome",
    "clustered_standard_error",
    "exact",
    "exact_mean",
    "exact_variance_of_mean",
    "mean",
    "paired_rule",
    "pass_hat_k",
    "pearson",
    "sample_sd",
    "standard_error",
    "t_coverage",
    "t_interval",
    "wilson_interval",
]


def _finite(value: float) -> float:
    """Floats leave their range silently (``1e308 − (−1e308)`` is inf): raise
    instead, so a comparison refuses values it cannot summarize."""
    if not math.isfinite(value):
        raise OverflowError("a statistic is beyond float range")
    return value


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean (correctly rounded sum); ``values`` must not be empty.

    Raises OverflowError when the sum or any statistic below leaves float range.
    """
    return _finite(math.fsum(values) / len(values))


def _squared_deviations(values: Sequence[float]) -> float:
    centre = mean(values)
    return _finite(math.fsum((value - centre) ** 2 for value in values))


def sample_sd(values: Sequence[float]) -> float | None:
    """Sample standard deviation (ddof 1); None with fewer than two values (unknown)."""
    n = len(values)
    if n < 2:
        return None
    return math.sqrt(_squared_deviations(values) / (n - 1))


def standard_error(values: Sequence[float]) -> float | None:
    """``sd / sqrt(n)`` computed as ``sqrt(ss / (n (n - 1)))``; None below two values.

    One replicate says nothing about the spread: unknown (None), never zero.
    """
    n = len(values)
    if n < 2:
        return None
    return math.sqrt(_squared_deviations(values) / (n * (n - 1)))


def t_interval(
    centre: float, se: float | None, df: int, level: float = 0.95
) -> tuple[float, float] | None:
    """Two-sided t interval ``centre ± t_{(1+level)/2, df} · se``; None if df < 1."""
    if se is None or df < 1:
        return None
    from scipy import special

    half = float(special.stdtrit(df, (1.0 + level) / 2.0)) * se  # t.ppf, without overhead
    return (_finite(centre - half), _finite(centre + half))


def t_coverage(k: float, df: int) -> float | None:
    """Two-sided coverage of ``±k·se`` under a t distribution with ``df`` degrees.

    This is the confidence the paired rule's threshold actually carries at a given
    replicate count: ``k = 2`` at R = 3 (df 2) is ``2/sqrt(6) ≈ 0.8165``, not 0.95.
    """
    if df < 1:
        return None
    from scipy import special

    return float(2.0 * special.stdtr(df, k) - 1.0)  # 2·t.cdf(k, df) − 1


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation across paired values; None when undefined.

    Undefined below three pairs (two points always correlate ±1) and when either
    side is constant.
    """
    if len(xs) != len(ys) or len(xs) < 3:
        return None
    mx, my = mean(xs), mean(ys)
    sxx = _finite(math.fsum((x - mx) ** 2 for x in xs))
    syy = _finite(math.fsum((y - my) ** 2 for y in ys))
    if sxx == 0.0 or syy == 0.0:
        return None
    sxy = _finite(math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)))
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx) / math.sqrt(syy)))


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n`` (n >= 1)."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"wilson interval needs 0 <= successes <= n, n >= 1: {successes}/{n}")
    from scipy import special

    z = float(special.ndtri((1.0 + level) / 2.0))  # norm.ppf, without overhead
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_hat_k(outcomes: Mapping[str, Sequence[bool]]) -> tuple[tuple[int, float], ...]:
    """pass^k (tau-bench) for k = 1..n_min: the mean over tasks of C(c, k) / C(n, k).

    ``outcomes`` maps a task id to its trials (True = success); n is a task's trial
    count and c its successes; n_min is the smallest n over tasks. Computed with
    fractions so the value is exact before the final conversion.
    """
    if not outcomes:
        return ()
    n_min = min(len(trials) for trials in outcomes.values())
    # How many tasks have n trials and c successes: the sum over tasks is a sum over
    # these few (n, c) groups, still exact.
    groups: dict[tuple[int, int], int] = {}
    for trials in outcomes.values():
        key = (len(trials), sum(1 for trial in trials if trial))
        groups[key] = groups.get(key, 0) + 1
    result = []
    for k in range(1, n_min + 1):
        total = Fraction(0)
        for (n, c), tasks in sorted(groups.items()):
            total += Fraction(tasks * math.comb(c, k), math.comb(n, k))
        result.append((k, float(total / len(outcomes))))
    return tuple(result)


def clustered_standard_error(observations: Sequence[tuple[str, float]]) -> float | None:
    """Cluster-robust standard error of the mean of ``(cluster, value)`` observations.

    Miller (2024), "Adding Error Bars to Evals", eq. for clustered questions:
    ``SE² = SE_CLT² + (1/n²) Σ_c Σ_i Σ_{j≠i} (x_ic − x̄)(x_jc − x̄)`` with
    ``SE_CLT² = Σ (x_i − x̄)² / (n (n − 1))``. The cross term of a cluster is
    ``(Σ_i e_ic)² − Σ_i e_ic²``. None with fewer than two clusters (nothing to
    cluster over) or a negative estimate (possible with strongly anti-correlated
    clusters; reported as unknown rather than clipped to zero).
    """
    n = len(observations)
    clusters: dict[str, list[float]] = {}
    for cluster, value in observations:
        clusters.setdefault(cluster, []).append(value)
    if len(clusters) < 2:
        return None
    centre = mean([value for _, value in observations])
    clt = _squared_deviations([value for _, value in observations]) / (n * (n - 1))
    cross = math.fsum(
        math.fsum(value - centre for value in values) ** 2
        - math.fsum((value - centre) ** 2 for value in values)
        for values in clusters.values()
    )
    variance = _finite(clt + cross / (n * n))
    if variance < 0.0:
        return None
    return math.sqrt(variance)


# --- paired-difference/v1, decided exactly ----------------------------------------

RuleOutcome = Literal["favors-a", "favors-b", "within-threshold", "no-variance"]


def exact(value: float) -> Fraction:
    """``value`` as the records hold it: the shortest decimal that reads back as the
    float (Python's ``repr``; the digits RFC 8785 JSON writes), as an exact fraction.

    So ``0.65 − 0.6`` is exactly ``1/20`` and ``min_effect: 0.05`` is exactly
    ``1/20``, where the binary values would differ from both by rounding error.
    """
    return Fraction(repr(float(value)))


def exact_mean(values: Sequence[Fraction]) -> Fraction:
    """Arithmetic mean in exact arithmetic; ``values`` must not be empty."""
    return sum(values, Fraction(0)) / len(values)


def exact_variance_of_mean(values: Sequence[Fraction]) -> Fraction | None:
    """``se²`` = ``ss / (n (n − 1))`` in exact arithmetic; None below two values."""
    n = len(values)
    if n < 2:
        return None
    centre = exact_mean(values)
    return sum(((value - centre) ** 2 for value in values), Fraction(0)) / (n * (n - 1))


def paired_rule(differences: Sequence[Fraction], min_effect: Fraction, k: Fraction) -> RuleOutcome:
    """paired-difference/v1 on oriented differences (positive favours A), R >= 2.

    A is favoured when ``mean > max(min_effect, k·se)``, B when ``mean < −max(...)``:
    decided exactly, with the square root of ``se`` handled by comparing squares
    (``|mean| > k·se`` ⇔ ``mean² > k²·se²``, both sides non-negative). Strict ">":
    a mean exactly on the threshold is within it. With no spread across seeds
    (``se = 0``) and ``min_effect = 0`` the threshold would be 0 and any constant
    difference, however small, would win: that is "no-variance", never a side.
    """
    variance = exact_variance_of_mean(differences)
    if variance is None:
        raise ValueError("the paired rule needs at least two differences")
    if variance == 0 and min_effect == 0:
        return "no-variance"
    centre = exact_mean(differences)
    size = abs(centre)
    if size > min_effect and size * size > k * k * variance:
        return "favors-a" if centre > 0 else "favors-b"
    return "within-threshold"
