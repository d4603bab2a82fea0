"""Several challengers against one baseline: how often at least one names a side when
all are the same harness (the family-wise A/A rate). Descriptive only: nothing here
changes a verdict.

Why not a formula. One challenger's A/A rate is known (exactly on a task lattice,
:func:`xaytune.comparison.calibration.lattice_aa_rate`; by normal theory
otherwise). With m challengers the naive ``1 − (1 − p)^m`` is wrong: every challenger
is compared with the SAME baseline runs, so the baseline's noise is common to all m
comparisons (two challengers' per-seed differences correlate 0.5) and the events
"challenger j names a side" are positively dependent. :func:`family_aa_rate` models
that structure directly: one baseline run and m challenger runs per seed, every run
independent from the same distribution (identical harnesses), each challenger decided
by the spec's rule against the shared baseline; enumerated exactly or simulated.

- task_success on n tasks (every run a count of successes over the same n tasks):
  each run is Binomial(n, p̂) with p̂ the success rate pooled over all runs, decided
  exactly on the lattice (min_effect included). Where the lattice is small enough
  (R = 3 up to about 20 tasks: ``EXACT_PAIRS``) the figure is exact, by enumeration
  (:func:`_lattice_exact`); beyond, simulated.
- Any other objective (simulated): each run is Normal(0, σ̂²), σ̂ the pooled sd of the
  sides' runs across seeds made unbiased (xaytune.experiment.summary), with its min_effect;
  with min_effect 0 the rate does not depend on σ̂ (the rule is scale-free).
- Objectives are independent of each other (the family figure "any challenger, any
  objective" is then ``1 − Π(1 − P_o)`` over the per-objective figures, exactly;
  whatever their dependence, it lies between the largest per-objective figure and the
  sum of them, both reported).

Deterministic: the generator (PCG64's raw stream, stable across numpy versions) is
seeded from the sha256 digest of every input (method, m, R, k, trials, and each
objective's model and parameters), recorded with the trial count, so the same inputs
give the same figures and ``xaytune.verify`` recomputes them. The Monte Carlo standard
error of a rate p over T trials is ``√(p(1 − p)/T)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from xaytune.comparison.calibration import _binomial_pmf, _names_side, _normals
from xaytune.comparison.stats import exact
from xaytune.core.canonical import fingerprint

__all__ = [
    "EXACT_PAIRS",
    "FAMILY_METHOD",
    "FAMILY_TRIALS",
    "FamilyObjective",
    "FamilyRate",
    "family_aa_rate",
    "independent_family_rate",
]

FAMILY_METHOD = "shared-baseline-aa/v1"
FAMILY_TRIALS = 20_000

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class FamilyObjective(BaseModel):
    """One objective's A/A model: a task lattice (``n_tasks``, ``success_rate``) or a
    normal run spread ``sd`` (None or 0: no spread was observed)."""

    model_config = _FROZEN

    metric: str
    min_effect: float = Field(ge=0)
    model: Literal["binomial-lattice", "normal"]
    n_tasks: int | None = Field(default=None, ge=1)
    success_rate: float | None = Field(default=None, ge=0, le=1)
    sd: float | None = Field(default=None, ge=0)


class FamilyRate(BaseModel):
    """The family-wise A/A figures of m challengers sharing one baseline."""

    model_config = _FROZEN

    method: str = FAMILY_METHOD
    challengers: int
    replicates: int
    k: float
    trials: int
    seed_digest: str
    objectives: tuple[FamilyObjective, ...]
    # Per objective: P(at least one challenger names a side on it).
    per_objective: dict[str, float]
    # P(at least one challenger names a side on at least one objective), objectives
    # independent; and its range whatever their dependence.
    any_objective: float
    any_objective_low: float
    any_objective_high: float
    # P(one given challenger names a side on at least one objective).
    one_challenger: float
    # The objectives whose figures are exact on their task lattice (the rest simulated).
    exact_objectives: tuple[str, ...] = ()

    def mc_se(self, rate: float) -> float:
        """The Monte Carlo standard error of ``rate`` over this many trials."""
        return math.sqrt(rate * (1.0 - rate) / self.trials)


def _uniforms(stream: np.random.PCG64, shape: tuple[int, ...]) -> np.ndarray:
    bits = stream.random_raw(math.prod(shape))
    return (((bits >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53).reshape(shape)


def _named(objective: FamilyObjective, runs: np.ndarray, r: int, k: float) -> np.ndarray:
    """trials × m: challenger j names a side. ``runs`` is trials × (1 + m) × R, the
    baseline first (counts of successes on a lattice, else values)."""
    differences = runs[:, 1:, :] - runs[:, :1, :]
    if objective.model == "binomial-lattice":
        total = differences.sum(axis=2).astype(object)
        squares = (differences * differences).sum(axis=2).astype(object)
        floor = exact(objective.min_effect) * objective.n_tasks
        return _names_side(total, squares, r, k, floor).astype(bool)
    centre = differences.mean(axis=2)
    se = np.sqrt(differences.var(axis=2, ddof=1) / r)
    floor = objective.min_effect
    return (np.abs(centre) > np.maximum(floor, k * se)) & ((se > 0) | (floor > 0))


def _runs(
    objective: FamilyObjective, stream: np.random.PCG64, shape: tuple[int, int, int]
) -> np.ndarray:
    if objective.model == "binomial-lattice":
        cdf = np.cumsum(_binomial_pmf(objective.n_tasks, objective.success_rate))
        # Inverse CDF of the binomial: the number of successes of each run.
        return np.minimum(
            np.searchsorted(cdf, _uniforms(stream, shape), side="right"), objective.n_tasks
        ).astype(np.int64)
    sd = objective.sd or 0.0
    if sd == 0.0 and objective.min_effect == 0.0:
        sd = 1.0  # scale-free: any spread gives the same decisions
    return _normals(stream, shape) * sd


# The most (baseline multiset, challenger vector) pairs the exact lattice enumeration
# decides (about half a second): R = 3 up to about 20 tasks; beyond, it is simulated.
EXACT_PAIRS = 20_000_000
_SMALL = 2**24  # exact integer rule in int64 when k² and min_effect are this simple


def _lattice_exact(objective: FamilyObjective, r: int, k: float, m: int):
    """(P(at least one of m challengers names a side), P(one does)) on the task
    lattice, exactly: given the baseline's R runs the challengers are independent, so
    ``Σ_a P(a)·(1 − (1 − q(a))^m)`` with ``q(a)`` the chance one challenger names a
    side against ``a``, summed over every challenger outcome. ``q`` depends on ``a``
    only through its multiset (the rule is symmetric in the seeds), so the baselines
    are enumerated as multisets. None when that is more than ``EXACT_PAIRS`` pairs or
    k and min_effect are not small fractions (then it is simulated). Run outcomes with
    probability below 1e-15 are dropped (a bias below 1e-12)."""
    n = objective.n_tasks
    k_squared, floor = exact(k) ** 2, exact(objective.min_effect) * n
    if max(k_squared.numerator, k_squared.denominator, floor.numerator, floor.denominator) > (
        _SMALL
    ):
        return None
    pmf = _binomial_pmf(n, objective.success_rate)
    support = np.flatnonzero(pmf > 1e-15)
    size = support.size
    if size**r * math.comb(size + r - 1, r) > EXACT_PAIRS:
        return None
    values, weights = support.astype(np.int64), pmf[support]
    grid = np.array(list(itertools.product(range(size), repeat=r)), dtype=np.int64)
    challenger, challenger_weight = values[grid], weights[grid].prod(axis=1)
    any_named = one_named = 0.0
    for combo in itertools.combinations_with_replacement(range(size), r):
        orderings = math.factorial(r) // math.prod(
            math.factorial(combo.count(i)) for i in set(combo)
        )
        weight = orderings * math.prod(float(weights[i]) for i in combo)
        d = challenger - values[list(combo)]
        named = _names_side(d.sum(axis=1), (d * d).sum(axis=1), r, k, floor)
        q = float(challenger_weight[named.astype(bool)].sum())
        any_named += weight * (1.0 - (1.0 - q) ** m)
        one_named += weight * q
    return min(1.0, any_named), min(1.0, one_named)


def family_aa_rate(
    *,
    challengers: int,
    replicates: int,
    k: float,
    objectives: Sequence[FamilyObjective],
    trials: int = FAMILY_TRIALS,
) -> FamilyRate:
    """The family-wise A/A figures of ``challengers`` identical challengers compared
    with one shared identical baseline over ``replicates`` seeds (see the module
    docstring for the model). All 0 below three replicates (the rule is then always
    inconclusive) or without objectives."""
    objectives = tuple(objectives)
    digest = fingerprint(
        {
            "method": FAMILY_METHOD,
            "challengers": challengers,
            "replicates": replicates,
            "k": k,
            "trials": trials,
            "objectives": [o.model_dump() for o in objectives],
        }
    )
    r, m = replicates, challengers
    if r < 3 or not objectives:
        zero = {o.metric: 0.0 for o in objectives}
        return FamilyRate(
            challengers=m, replicates=r, k=k, trials=trials, seed_digest=digest,
            objectives=objectives, per_objective=zero, any_objective=0.0,
            any_objective_low=0.0, any_objective_high=0.0, one_challenger=0.0,
        )  # fmt: skip
    stream = np.random.PCG64(int(digest.removeprefix("sha256:"), 16))
    per_objective, one, exact_objectives = {}, {}, []
    for objective in objectives:
        found = None
        if objective.model == "binomial-lattice":
            found = _lattice_exact(objective, r, k, m)
        if found is not None:
            exact_objectives.append(objective.metric)
            per_objective[objective.metric], one[objective.metric] = found
            continue
        named = _named(objective, _runs(objective, stream, (trials, 1 + m, r)), r, k)
        per_objective[objective.metric] = float(named.any(axis=1).mean())
        one[objective.metric] = float(named[:, 0].mean())
    rates = list(per_objective.values())
    return FamilyRate(
        challengers=m,
        replicates=r,
        k=k,
        trials=trials,
        seed_digest=digest,
        objectives=objectives,
        per_objective=per_objective,
        # Objectives independent: no challenger names a side on any objective exactly
        # when none does on each, events of independent data, so the product holds.
        any_objective=independent_family_rate(rates),
        any_objective_low=max(rates),
        any_objective_high=min(1.0, sum(rates)),
        one_challenger=independent_family_rate(list(one.values())),
        exact_objectives=tuple(exact_objectives),
    )


def independent_family_rate(rates: Sequence[float]) -> float:
    """``1 − Π(1 − p_i)``: the chance at least one of several INDEPENDENT comparisons
    names a side (several models: each model's comparison has its own baseline runs)."""
    return 1.0 - math.prod(1.0 - rate for rate in rates)
