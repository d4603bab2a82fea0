"""What a declared method other than paired-difference/v1, and the looks at a tree,
add to a comparison report. Re-exported by :mod:`xaytune.comparison.report`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from xaytune.comparison.methods import Method

__all__ = ["Look", "Looks", "MethodDetail"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class MethodDetail(BaseModel):
    """How a declared method other than paired-difference/v1 decided one objective
    (xaytune.comparison.methods): the verdict of the metric is this method's.

    task-paired/v1: the mean (seed, task) difference, its se clustered by task, the t
    critical value on ``n_clusters − 1`` df and ``threshold = max(min_effect, q·se)``.
    sequential-paired/v1: the declared ``bound``, each side's largest wealth so far,
    the seed count at which it first reached ``threshold = 2/α`` (None: not yet), and
    Wald's figure for the seeds to a verdict at a true 2·min_effect.
    """

    model_config = _FROZEN

    method: Method
    alpha: float
    n_observations: int
    n_seeds: int
    mean: float
    threshold: float | None
    n_clusters: int | None = None
    clustered_se: float | None = None
    critical: float | None = None
    bound: float | None = None
    wealth_a: float | None = None
    wealth_b: float | None = None
    crossed_a: int | None = None
    crossed_b: int | None = None
    expected_seeds: float | None = None


class Look(BaseModel):
    """One earlier look at the tree (or this one, last): how many seeds it saw, under
    which method, and the relation it wrote."""

    model_config = _FROZEN

    look: int
    seeds: int
    method: Method
    relation: str


class Looks(BaseModel):
    """Every look at the tree up to this comparison, when there was more than one
    (xaytune.experiment.tree.looks records them, hash-chained). ``optional_stopping``: the seeds
    grew between looks under the fixed paired-difference/v1 rule, whose A/A rate holds
    for one look only."""

    model_config = _FROZEN

    count: int
    looks: tuple[Look, ...]
    optional_stopping: bool
