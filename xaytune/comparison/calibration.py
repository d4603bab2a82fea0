"""What paired-difference/v1 says when there is nothing to find: the A/A rate, the
share of comparisons of a harness with itself in which the rule names a side.
Descriptive only: nothing here changes a verdict.

Normal theory. With per-seed differences ``d_1..d_R`` independent ``N(0, σ²)``,
``T = mean(d)/se`` follows Student's t with ``R − 1`` degrees of freedom whatever
``σ``, so with ``min_effect = 0`` an objective names a side (``|T| > k``) with
probability exactly ``2·P(T_{R−1} > k)`` (:func:`t_aa_rate`: 0.1835 at R = 3,
k = 2; 0.1161 at R = 5; 0.0766 at R = 10). A positive ``min_effect`` only raises the
threshold: the figure is then an upper bound.

Success rates on few tasks. A run's task_success is ``successes / n``: a lattice.
At R = 3 the t tail comes mostly from draws with a tiny sd, which a lattice makes
rare (and ties with the threshold, decided exactly, common): a harness compared with
itself on 20 tasks at a 70% success rate names a side 13.5% of the time, not 18.4%
(checked through compare() in tests/core/test_comparison_calibration.py). For
task_success at R = 3 or 4, :func:`lattice_aa_rate` gives the exact rate when every
task succeeds independently with the pooled success rate (min_effect included);
tasks of different difficulty shrink the spread on the same lattice and lower it
further. From R = 5 the lattice is within about a point of normal theory.

The relation is not "inconclusive" when at least one objective names a side
(:func:`relation_aa_rates`): ``1 − Π(1 − p_i)`` exactly for independent objectives;
whatever their dependence, between ``max p_i`` and ``min(1, Σ p_i)``.

Measured (``comparison.calibrate``): :func:`measured_aa_rates` decides 2,000
simulated A/A comparisons, normal with the observed covariance of the per-seed
differences across objectives (task_success rounded to its task lattice), with each
objective's min_effect, from a generator seeded by a digest of the comparison, so
the figures are a deterministic function of the records.

scipy (``special``) is imported on first use, never ``scipy.stats`` (:func:`_binomial_pmf`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np

from xaytune.comparison.records import ComparisonSpec, RunValue
from xaytune.comparison.report import (
    AA_METHOD,
    Calibration,
    MeasuredCalibration,
    MetricComparison,
    ObjectiveCalibration,
    withheld_under_aggregate,
)
from xaytune.comparison.stats import exact
from xaytune.core.canonical import fingerprint

__all__ = [
    "AA_DRAWS",
    "AA_MAX_REPLICATES",
    "LATTICE_STATES",
    "calibrate",
    "lattice_aa_rate",
    "lattice_counts",
    "measured_aa_rates",
    "relation_aa_rates",
    "t_aa_rate",
]

AA_DRAWS = 2_000
# The simulation draws R² normals per comparison: beyond this many replicates it is
# not run (normal theory is then close to exact for a continuous objective).
AA_MAX_REPLICATES = 100
# The most (Σd, Σd²) states the exact lattice enumeration forms in one step: R = 3
# up to about 120 tasks, R = 4 up to about 20 (under half a second); beyond, the
# lattice hardly matters.
LATTICE_STATES = 1_000_000
_TASK_SUCCESS = "task_success"


def t_aa_rate(k: float, r: int) -> float:
    """``2·P(T_{R−1} > k)``: how often one objective names a side under A/A with
    normal differences and ``min_effect = 0`` (an upper bound for a positive one); 0
    below three replicates, where the rule is always inconclusive."""
    if r < 3:
        return 0.0
    from scipy import special

    return float(2.0 * special.stdtr(r - 1, -k))  # 2·t.sf(k, R − 1)


def relation_aa_rates(rates: Sequence[float]) -> tuple[float, float, float]:
    """(independent, low, high): the probability that at least one objective names a
    side, when objective i does with probability ``rates[i]``.

    ``1 − Π(1 − p_i)`` holds exactly when the objectives are independent; any
    dependence keeps it within ``[max p_i, min(1, Σ p_i)]``. All 0 without objectives.
    """
    if not rates:
        return 0.0, 0.0, 0.0
    return 1.0 - math.prod(1.0 - rate for rate in rates), max(rates), min(1.0, sum(rates))


def _names_side(total: np.ndarray, squares: np.ndarray, r: int, k: float, floor: Fraction):
    """The rule on integer lattice data, exactly: ``total`` = Σd and ``squares`` = Σd²
    in lattice units, ``floor`` = min_effect in lattice units.

    ``|mean| > floor`` ⇔ ``|Σd|·den > num·R``; ``|mean| > k·se`` ⇔
    ``(Σd)²(R − 1) > k²(R·Σd² − (Σd)²)``; no spread with floor 0 names nothing.
    """
    k_squared = exact(k) ** 2
    spread = r * squares - total * total  # R·Σ(d − mean)², an integer >= 0
    above_floor = np.abs(total) * floor.denominator > floor.numerator * r
    above_noise = k_squared.denominator * total * total * (r - 1) > k_squared.numerator * spread
    named = above_floor & above_noise
    if floor == 0:
        named &= spread != 0
    return named


def _as_exact_integers(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    # Python integers (object arrays): products of k², min_effect and Σd² stay exact.
    return tuple(array.astype(object) for array in arrays)


@functools.lru_cache(maxsize=256)  # a pure function; the auditor recomputes reports
def lattice_aa_rate(
    n: int, success_rate: float, r: int, k: float, min_effect: float
) -> float | None:
    """The exact A/A rate of task_success when, on each of ``r`` seeds, both sides'
    successes are Binomial(``n``, ``success_rate``), decided with ``min_effect``.

    Enumerates the distribution of (Σd, Σd²) over the seeds, d = X − Y in tasks,
    merging equal states; None above R = 4 or when it would exceed
    ``LATTICE_STATES`` (large n), where the lattice hardly matters and
    :func:`t_aa_rate` applies. Differences with probability below 1e-15 are dropped
    (a bias below 1e-12).
    """
    if r < 3:
        return 0.0
    if r > 4:
        return None  # from R = 5 the lattice is within about 1 point of normal theory
    pmf = _binomial_pmf(n, success_rate)
    difference_pmf = np.convolve(pmf, pmf[::-1])  # d = X − Y on −n..n
    support = np.flatnonzero(difference_pmf > 1e-15)
    values = (support - n).astype(np.int64)
    weights = difference_pmf[support]
    total, squares, probability = np.zeros(1, np.int64), np.zeros(1, np.int64), np.ones(1)
    for _ in range(r):
        if total.size * values.size > LATTICE_STATES:
            return None
        total = (total[:, None] + values[None, :]).ravel()
        squares = (squares[:, None] + values[None, :] ** 2).ravel()
        probability = (probability[:, None] * weights[None, :]).ravel()
        key = (total + r * n) * (r * n * n + 1) + squares
        key, inverse = np.unique(key, return_inverse=True)
        probability = np.bincount(inverse, weights=probability)
        total, squares = key // (r * n * n + 1) - r * n, key % (r * n * n + 1)
    floor = exact(min_effect) * n  # min_effect in tasks
    named = _names_side(*_as_exact_integers(total, squares), r, k, floor).astype(bool)
    return float(probability[named].sum())


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    """``scipy.stats.binom.pmf(range(n + 1), n, p)``, bit for bit, without importing
    ``scipy.stats`` (~0.5 s of a run's start): the Boost ufunc that ``binom.pmf``
    evaluates, clipped to [0, 1] as ``binom.pmf`` clips it (checked against it in
    tests/core/test_comparison_binomial.py). A scipy without that ufunc gets the
    distribution itself."""
    from scipy.special import _ufuncs

    binom_pmf = getattr(_ufuncs, "_binom_pmf", None)
    if binom_pmf is None:
        from scipy import stats

        return stats.binom.pmf(np.arange(n + 1), n, p)
    return np.clip(binom_pmf(np.arange(n + 1), n, p), 0.0, 1.0)


def _normals(stream: np.random.PCG64, shape: tuple[int, ...]) -> np.ndarray:
    """The next standard normals of PCG64's raw stream (stable across numpy
    versions, unlike Generator's samplers), through the inverse normal CDF."""
    bits = stream.random_raw(math.prod(shape))
    uniform = ((bits >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    from scipy import special

    return special.ndtri(uniform).reshape(shape)


def measured_aa_rates(
    differences: Mapping[str, Sequence[float]],
    min_effects: Mapping[str, float],
    lattices: Mapping[str, int | None],
    k: float,
    seed: int,
    draws: int = AA_DRAWS,
) -> tuple[dict[str, float | None], float]:
    """(per objective, relation): the share of ``draws`` simulated A/A comparisons in
    which the rule names a side, and in which at least one objective does.

    Each draw has R seeds of m objectives, ``g·E/√(R − 1)`` per seed, with ``E`` the
    R×m matrix of observed differences centred per objective and ``g`` R standard
    normals: normal, mean 0, with exactly the observed covariance across objectives.
    An objective on a lattice of ``n`` tasks (``lattices``) is rounded to it and
    decided exactly (:func:`_names_side`). An objective with no observed spread is
    never simulated away from 0 (None).
    """
    names = list(differences)
    observed = np.array([differences[name] for name in names], dtype=np.float64).T
    r = observed.shape[0]
    spread = np.ptp(observed, axis=0) > 0
    residuals = observed - observed.mean(axis=0)
    # draws × R × m from one stream, read in chunks of at most 2**20 normals.
    stream, chunk = np.random.PCG64(seed), max(1, 2**20 // (r * r))
    simulated = np.concatenate(
        [
            _normals(stream, (min(chunk, draws - start), r, r)) @ residuals
            for start in range(0, draws, chunk)
        ]
    ) / math.sqrt(r - 1)
    named = np.zeros((draws, len(names)), dtype=bool)
    for i, name in enumerate(names):
        column, n = simulated[:, :, i], lattices.get(name)
        if n is not None:
            tasks = np.rint(column * n).astype(np.int64)
            total, squares = _as_exact_integers(tasks.sum(axis=1), (tasks * tasks).sum(axis=1))
            floor = exact(min_effects[name]) * n
            named[:, i] = _names_side(total, squares, r, k, floor).astype(bool)
            continue
        centre = column.mean(axis=1)
        se = np.sqrt(column.var(axis=1, ddof=1) / r)
        floor = min_effects[name]
        named[:, i] = (np.abs(centre) > np.maximum(floor, k * se)) & ((se > 0) | (floor > 0))
    rates = {
        name: (float(named[:, i].mean()) if spread[i] else None) for i, name in enumerate(names)
    }
    return rates, float(named.any(axis=1).mean())


def lattice_counts(runs: Sequence[RunValue]) -> tuple[int, int] | None:
    """(n tasks, successes in all) when every run's value is a count of successes over
    the same n tasks (a task_success lattice); None otherwise."""
    sizes = {run.n_tasks for run in runs}
    if len(sizes) != 1 or (n := sizes.pop()) < 1:
        return None
    successes = 0
    for run in runs:
        if run.value is None or not 0.0 <= run.value <= 1.0:
            return None
        count = round(run.value * n)
        if abs(run.value * n - count) > 1e-9:
            return None
        successes += count
    return n, successes


def _lattice(metric: MetricComparison) -> tuple[int, float] | None:
    """(n tasks, pooled success rate) when every run of both sides is a count of
    successes over the same n tasks; None otherwise (or for another metric)."""
    if metric.metric != _TASK_SUCCESS:
        return None
    runs = [run for summary in (metric.a, metric.b) for run in summary.runs]
    counts = lattice_counts(runs)
    if counts is None:
        return None
    n, successes = counts
    return n, successes / (n * len(runs))


def _objective(
    metric: MetricComparison, r: int, k: float, t_rate: float, hidden: bool
) -> ObjectiveCalibration:
    lattice = None if hidden else _lattice(metric)
    if lattice is not None and metric.objective is not None:
        n, success_rate = lattice
        rate = lattice_aa_rate(n, success_rate, r, k, metric.objective.min_effect)
        if rate is not None:
            return ObjectiveCalibration(
                metric=metric.metric,
                rate=rate,
                model="binomial-lattice",
                n_tasks=n,
                success_rate=success_rate,
            )
    return ObjectiveCalibration(metric=metric.metric, rate=t_rate, model="student-t")


def calibrate(
    spec: ComparisonSpec, metrics: Mapping[str, MetricComparison], seeds: Sequence[int]
) -> Calibration:
    """The A/A figures of a comparable report: by formula always, measured by
    simulation too when ``spec.calibrate`` (seeded from a digest of the spec and the
    per-seed differences of the objectives the rule decided).

    Under aggregate disclosure an objective the released view withholds keeps to
    normal theory and is not simulated: its pooled success rate or its spread would
    show through the released calibration (spec: Disclosure and references).
    """
    decided = [metrics[o.metric] for o in spec.objectives if metrics[o.metric].differences]
    hidden = {
        metric.metric
        for metric in decided
        if spec.disclosure == "aggregate" and withheld_under_aggregate(metric)
    }
    r, k = len(seeds), spec.k
    t_rate = t_aa_rate(k, r)
    objectives = [_objective(m, r, k, t_rate, m.metric in hidden) for m in decided]
    independent, low, high = relation_aa_rates([objective.rate for objective in objectives])
    simulated = [metric for metric in decided if metric.metric not in hidden]
    measured = None
    if spec.calibrate and simulated and 3 <= r <= AA_MAX_REPLICATES:
        differences = {m.metric: [d.difference for d in m.differences] for m in simulated}
        digest = fingerprint(
            {
                "method": AA_METHOD,
                "spec": spec,
                "differences": {
                    m.metric: [[d.seed, d.difference] for d in m.differences] for m in simulated
                },
            }
        )
        rates, relation = measured_aa_rates(
            differences,
            {o.metric: o.min_effect for o in spec.objectives},
            {o.metric: o.n_tasks for o in objectives if o.model == "binomial-lattice"},
            k,
            int(digest.removeprefix("sha256:"), 16),
        )
        objectives = [o.model_copy(update={"measured": rates.get(o.metric)}) for o in objectives]
        measured = MeasuredCalibration(draws=AA_DRAWS, seed_digest=digest, relation=relation)
    return Calibration(
        replicates=r,
        k=k,
        t_rate=t_rate,
        objectives=tuple(objectives),
        relation_rate_independent=independent,
        relation_rate_low=low,
        relation_rate_high=high,
        measured=measured,
    )
