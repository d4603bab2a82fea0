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
run's own R (:func:`difference_for_power`). ``σ`` is the observed sd of the
per-seed differences: at small R itself a rough estimate.

scipy (``special``, ``integrate``, ``optimize``: ~0.6 s) is imported on first use.
"""

from __future__ import annotations

import math

from xaytune.core._comparison_report import Power

__all__ = [
    "POWER_TARGET",
    "REPLICATES_CAP",
    "difference_for_power",
    "power_of",
    "replicates_for_power",
    "rule_power",
]

POWER_TARGET = 0.8
REPLICATES_CAP = 100_000


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
    """The power figures of one objective at R = ``r``, taking the observed ``sd`` of
    the per-seed differences as the true one; None without a spread (``sd`` 0)."""
    if not sd or se is None or r < 3:
        return None
    k_se = k * se
    planning = 2.0 * min_effect if min_effect > 0 else None
    return Power(
        sd=sd,
        k_se=k_se,
        power_at_k_se=rule_power(k_se, sd, r, k, min_effect),
        power_at_min_effect=rule_power(min_effect, sd, r, k, min_effect) if planning else None,
        difference_for_power=difference_for_power(sd, r, k, min_effect),
        planning_effect=planning,
        replicates_for_power=(
            replicates_for_power(planning, sd, k, min_effect) if planning else None
        ),
    )
