"""Deciding one objective under a declared method other than paired-difference/v1.

:func:`decide_by_method` reads the matched task observations of both sides
(:func:`oriented_task_differences`) and applies task-paired/v1 or
sequential-paired/v1 (:mod:`.methods`). It refuses, with a reason word
naming the metric, what the method cannot honestly use: no task observations
(``no-task-observations``) and, under the sequential method, a difference beyond the
declared bound (``out-of-bound``: never clipped). An absent task observation leaves
the objective inconclusive (``absent``), as under the spec's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from xaytune.comparison.methods import (
    SEQUENTIAL_PAIRED,
    TASK_PAIRED,
    expected_seeds,
    sequential_decision,
    task_paired_decision,
)
from xaytune.comparison.report import MethodDetail, Verdict, VerdictReason
from xaytune.comparison.tasks import oriented_task_differences
from xaytune.core.errors import ComparisonError

if TYPE_CHECKING:
    from xaytune.comparison.records import ComparisonSpec, ObjectiveMetric, ReplicateRuns

__all__ = ["decide_by_method"]


def decide_by_method(
    key: str,
    objective: ObjectiveMetric,
    spec: ComparisonSpec,
    paired: Mapping[int, tuple[ReplicateRuns, ReplicateRuns]],
    orient: Callable[[float, float], float],
) -> tuple[Verdict, VerdictReason, MethodDetail | None]:
    """The verdict of objective ``key`` under ``spec.method`` and how it was reached."""
    rows, absent = oriented_task_differences(paired, key, orient)
    if rows is None:
        raise ComparisonError(
            "no-task-observations",
            f"metric {key}: method {spec.method} needs both sides' per-task observations "
            "under every seed, and a replicate has none (or the sides observed other tasks)",
        )
    if absent:
        return "inconclusive", "absent", None
    if spec.method == TASK_PAIRED:
        outcome = task_paired_decision(rows, min_effect=objective.min_effect, alpha=spec.alpha)
        detail = MethodDetail(
            method=TASK_PAIRED,
            alpha=spec.alpha,
            n_observations=outcome.n_observations,
            n_seeds=outcome.n_seeds,
            mean=outcome.mean,
            threshold=outcome.threshold,
            n_clusters=outcome.n_clusters,
            clustered_se=outcome.clustered_se,
            critical=outcome.critical,
        )
        return outcome.verdict, outcome.reason, detail
    assert spec.method == SEQUENTIAL_PAIRED
    bound = spec.bound(key)
    assert bound is not None  # ComparisonSpec refuses an objective without one
    by_seed: dict[int, list[float]] = {}
    for seed, task, difference in rows:
        if abs(difference) > bound:
            raise ComparisonError(
                "out-of-bound",
                f"metric {key}: seed {seed} task {task} differs by {difference}, beyond the "
                f"declared bound {bound} (bounds.{key}); a bound must hold for every task",
            )
        by_seed.setdefault(seed, []).append(difference)
    seeds = [by_seed[seed] for seed in sorted(by_seed)]
    # alpha is the relation's rate: each of the m objectives holds alpha/m (Bonferroni),
    # so "some objective names a side" stays at or below alpha over all looks.
    level = spec.alpha / len(spec.objectives)
    outcome = sequential_decision(seeds, bound=bound, min_effect=objective.min_effect, alpha=level)
    differences = [difference for _, _, difference in rows]
    detail = MethodDetail(
        method=SEQUENTIAL_PAIRED,
        alpha=level,
        n_observations=outcome.n_observations,
        n_seeds=outcome.n_seeds,
        mean=outcome.mean,
        threshold=outcome.threshold,
        bound=bound,
        wealth_a=outcome.wealth_a,
        wealth_b=outcome.wealth_b,
        crossed_a=outcome.crossed_a,
        crossed_b=outcome.crossed_b,
        expected_seeds=expected_seeds(
            differences,
            tasks_per_seed=len(differences) / len(seeds),
            min_effect=objective.min_effect,
            alpha=level,
        ),
    )
    return outcome.verdict, outcome.reason, detail
