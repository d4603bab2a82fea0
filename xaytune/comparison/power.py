"""How often paired-difference/v1 calls a difference that is there (power).
Descriptive only: nothing here changes a verdict.

The model: the per-seed oriented differences ``d_1..d_R`` are independent draws from
``N(δ, σ²)``, ``δ >= 0``; the rule favours A when ``mean(d) > max(min_effect, k·se)``
with ``se = sd(d)/√R``. :func:`rule_power` is that probability, exactly, for the
whole threshold. Because the rule needs ``mean > min_effect`` and ``mean`` is
centred on ``δ``, a true difference of exactly ``min_effect`` is called less than
half of the time at any R: 80% power exists only for true differences above
``min_effect``. So the report plans replicates for ``2·min_effect``
(:func:`power_of`), and gives the true difference called 80% of the time at the
run's own R (:func:`difference_for_power`).

Planning that holds (issue 30). ``σ`` is unknown; the observed sd ``S`` of R per-seed
differences is a rough estimate at small R (at R = 3 it is below the true σ 63% of
the time), and plugging it in states a difference "called 80% of the time" whose real
power is below 80% in most reports. Every figure here is computed at the one-sided
``SPREAD_LEVEL`` (80%) upper confidence bound of σ instead (:func:`spread_upper`):

    σ_u = S·√((R − 1) / χ²_{R−1, 1−level})

(``(R − 1)S²/σ²`` is chi-square with ``R − 1`` degrees of freedom for normal
differences, so ``P(σ_u >= σ) = level`` exactly). The rule's power falls as σ grows
for any true difference above min_effect (both ``Z + (δ − min_effect)√R/σ`` and
``Z + δ√R/σ − k·s`` shrink), so the difference called 80% of the time and the
replicates for 80% power both grow with σ: whenever ``σ_u >= σ`` (80% of reports)
the stated difference really is called at least 80% of the time and the stated
replicates really give at least 80% power. Measured through compare() in
benchmarks/iteration.py. Below ``ROUGH_BELOW`` (5) replicates the figures are
labelled rough on every surface (``Power.rough``): σ_u is then up to 2.2·S (R = 3).

scipy (``special``, ``integrate``, ``optimize``: ~0.6 s) is imported on first use.
"""

from __future__ import annotations

import math

from xaytune.comparison.report import Power

__all__ = [
    "POWER_TARGET",
    "REPLICATES_CAP",
    "ROUGH_BELOW",
    "SPREAD_LEVEL",
    "difference_for_power",
    "power_of",
    "replicates_for_power",
    "rule_power",
    "spread_upper",
]

POWER_TARGET = 0.8
REPLICATES_CAP = 100_000
# One-sided confidence level of the upper bound of σ the planning figures use.
SPREAD_LEVEL = 0.8
# Below this many replicates the planning figures are labelled rough.
ROUGH_BELOW = 5


def spread_upper(sd: float, r: int, level: float = SPREAD_LEVEL) -> float:
    """The one-sided ``level`` upper confidence bound of σ from the sample sd ``sd``
    of ``r`` normal values: ``sd·√((r − 1)/q)`` with ``q`` the ``1 − level`` quantile
    of chi-square with ``r − 1`` degrees of freedom (``r >= 2``)."""
    from scipy import special

    nu = r - 1
    # chdtri(ν, p) is the chi-square quantile with upper tail p: here the lower 1 − level.
    return sd * math.sqrt(nu / float(special.chdtri(nu, level)))


def rule_power(effect: float, sd: float, r: int, k: float, min_effect: float) -> float:
    """P(the rule favours the better side) when the per-seed differences are
    ``N(effect, sd²)`` (``effect >= 0``, ``sd > 0``, ``r >= 3``).

    With ``c = effect·√R/σ``, ``a = min_effect·√R/σ``, ``s = S/σ`` (distributed as
    ``χ_{R−1}/√(R−1)``) and ``Z`` standard normal, the rule's event is
    ``Z + c > max(a, k·s)``. Split at ``s₀ = a/k``:

        P = Φ̄(a − c)·F(s₀) + ∫_{s₀}^∞ Φ̄(k·s − c) f(s) ds
          = Φ̄(a − c)·F(s₀) + nct.sf(k, R − 1, c) − ∫_0^{s₀} Φ̄(k·s − c) f(s) ds

    where ``nct.sf(k, R − 1, c) = P(T' > k)`` is the noncentral-t power of the
    one-sided test ``mean > k·se`` alone (the whole answer when ``min_effect = 0``)
    and the last integral is over a finite range (scipy ``quad``).
    """
    from scipy import integrate, special

    nu = r - 1
    c = effect * math.sqrt(r) / sd
    a = min_effect * math.sqrt(r) / sd
    # nct.sf(k, ν, c) through scipy.special (the same Boost code, without the
    # distribution machinery's per-call overhead).
    below_k = float(special.nctdtr(nu, c, k))
    if not math.isfinite(below_k):
        # Beyond Boost's range (a noncentrality of ~1e6 and more: a spread tiny next to
        # the effect), T' is Z + c over a chi factor: it is below k never when c is far
        # above k, always when c is far below.
        below_k = 0.0 if c > k else 1.0
    power = 1.0 - below_k
    if a == 0.0:
        return power
    s0 = a / k
    # Past the far tail of s the integrand is 0: keep quad on the mass.
    upper = min(s0, math.sqrt(2.0 * float(special.gammainccinv(nu / 2.0, 1e-15)) / nu))
    below, _ = integrate.quad(
        lambda s: _normal_sf(k * s - c) * _scaled_chi_pdf(s, nu), 0.0, upper, limit=200
    )
    chi_cdf = float(special.gammainc(nu / 2.0, nu * s0 * s0 / 2.0))
    power += _normal_sf(a - c) * chi_cdf - below
    return min(1.0, max(0.0, power))


def _normal_sf(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def _scaled_chi_pdf(s: float, nu: int) -> float:
    """Density of ``s = S/σ``: ``ν s²`` is chi-square with ``ν`` degrees of freedom,
    so ``f(s) = 2 ν s · χ²_ν.pdf(ν s²)`` (written in logs; scalar math is fast)."""
    if s <= 0.0:
        return 0.0
    w = nu * s * s
    log_density = (
        math.log(2.0 * nu * s)
        + (nu / 2.0 - 1.0) * math.log(w)
        - w / 2.0
        - (nu / 2.0) * math.log(2.0)
        - math.lgamma(nu / 2.0)
    )
    return math.exp(log_density)


_MAX_DOUBLINGS = 200


def difference_for_power(
    sd: float, r: int, k: float, min_effect: float, target: float = POWER_TARGET
) -> float:
    """The true difference the rule calls with probability ``target`` at R = ``r``
    (always above ``min_effect``, where the power is below one half)."""
    low = min_effect
    high = max(min_effect, sd / math.sqrt(r)) * 2.0
    for _ in range(_MAX_DOUBLINGS):  # bounded: the power reaches 1 as the effect grows
        if rule_power(high, sd, r, k, min_effect) >= target:
            break
        low, high = high, high * 2.0
    else:
        return high
    from scipy import optimize

    return float(
        optimize.brentq(
            lambda effect: rule_power(effect, sd, r, k, min_effect) - target,
            low,
            high,
            xtol=1e-12 * high,
        )
    )


def replicates_for_power(
    effect: float, sd: float, k: float, min_effect: float, target: float = POWER_TARGET
) -> int | None:
    """Smallest R >= 3 at which the rule calls a true difference of ``effect`` with
    probability >= ``target``; None when ``effect <= min_effect`` (never reached) or
    beyond ``REPLICATES_CAP``. Searched by doubling then bisection: the power grows
    with R for a fixed ``effect > min_effect`` (both bars of the threshold fall)."""
    if effect <= min_effect:
        return None

    def enough(r: int) -> bool:
        return rule_power(effect, sd, r, k, min_effect) >= target

    if enough(3):
        return 3
    low, high = 3, 6
    while not enough(high):
        if high >= REPLICATES_CAP:
            return None
        low, high = high, min(REPLICATES_CAP, high * 2)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def power_of(
    r: int, sd: float | None, se: float | None, k: float, min_effect: float
) -> Power | None:
    """The power figures of one objective at R = ``r``, computed at the
    ``SPREAD_LEVEL`` upper confidence bound of the spread of the per-seed differences
    (:func:`spread_upper` of the observed ``sd``); None without a spread (``sd`` 0)."""
    if not sd or se is None or r < 3:
        return None
    k_se = k * se
    upper = spread_upper(sd, r)
    planning = 2.0 * min_effect if min_effect > 0 else None
    return Power(
        sd=sd,
        sd_upper=upper,
        sd_level=SPREAD_LEVEL,
        rough=r < ROUGH_BELOW,
        k_se=k_se,
        power_at_k_se=rule_power(k_se, upper, r, k, min_effect),
        power_at_min_effect=rule_power(min_effect, upper, r, k, min_effect) if planning else None,
        difference_for_power=difference_for_power(upper, r, k, min_effect),
        planning_effect=planning,
        replicates_for_power=(
            replicates_for_power(planning, upper, k, min_effect) if planning else None
        ),
    )
