"""Task-level material of a comparison, read from replicates' task observations.

Descriptive: the task-clustered paired view, Wilson intervals of task_success and
pass^k. Restricted: per-task differences and which tasks each side solved (spec:
Disclosure — per-task reference-derived scores go to the restricted report).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from xaytune.comparison import stats as stats
from xaytune.comparison.report import (
    PassHatK,
    RunInterval,
    SeedTaskChanges,
    TaskChangeCount,
    TaskDifference,
    TaskPairedView,
)
from xaytune.core.domain.measurement import TaskObservation

if TYPE_CHECKING:
    from xaytune.comparison.records import ReplicateRuns

__all__ = [
    "TASK_SUCCESS",
    "oriented_task_differences",
    "pass_hat_k_of",
    "task_changes",
    "task_view",
    "wilson_runs",
]

TASK_SUCCESS = "task_success"

Orient = Callable[[float, float], float]
Paired = Mapping[int, tuple["ReplicateRuns", "ReplicateRuns"]]


def _observations(replicate: ReplicateRuns, key: str) -> dict[str, TaskObservation] | None:
    observations = replicate.task_observations.get(key)
    if observations is None:
        return None
    return {observation.task_id: observation for observation in observations}


def _paired_observations(
    paired: Paired, key: str
) -> list[tuple[int, TaskObservation, TaskObservation]] | None:
    """(seed, A's, B's) per task, or None unless every seed pairs the same tasks."""
    rows = []
    for seed in sorted(paired):
        replicate_a, replicate_b = paired[seed]
        by_task_a, by_task_b = _observations(replicate_a, key), _observations(replicate_b, key)
        if by_task_a is None or by_task_b is None or set(by_task_a) != set(by_task_b):
            return None
        rows.extend((seed, by_task_a[task], by_task_b[task]) for task in sorted(by_task_a))
    return rows


def oriented_task_differences(
    paired: Paired, key: str, orient: Orient
) -> tuple[list[tuple[int, str, float]] | None, dict[str, int]]:
    """The oriented (seed, task id, difference) of metric ``key``, seeds ascending and
    tasks in id order, and the absences counted by reason (then no differences: an
    absent observation is never imputed). None when a seed has no task observations
    of ``key`` or its sides observed different tasks."""
    rows = _paired_observations(paired, key)
    if rows is None:
        return None, {}
    absent: dict[str, int] = {}
    for _, observation_a, observation_b in rows:
        for observation in (observation_a, observation_b):
            if observation.absence is not None:
                absent[observation.absence] = absent.get(observation.absence, 0) + 1
    if absent:
        return [], dict(sorted(absent.items()))
    return [
        (seed, oa.task_id, orient(oa.value, ob.value))  # type: ignore[arg-type]
        for seed, oa, ob in rows
    ], {}


def task_view(
    paired: Paired, key: str, orient: Orient
) -> tuple[TaskPairedView | None, tuple[TaskDifference, ...]]:
    """The clustered paired view of metric ``key`` and its per-task differences.

    Observations are (seed, task) differences, clustered by task id (Miller 2024).
    An absent observation on either side is counted, never imputed: the view then
    has no values and there are no per-task differences.
    """
    rows = _paired_observations(paired, key)
    if not rows:
        return None, ()
    absent: dict[str, int] = {}
    for _, observation_a, observation_b in rows:
        for observation in (observation_a, observation_b):
            if observation.absence is not None:
                absent[observation.absence] = absent.get(observation.absence, 0) + 1
    tasks = sorted({observation_a.task_id for _, observation_a, _ in rows})
    shape = {"n_observations": len(rows), "n_tasks": len(tasks), "n_seeds": len(paired)}
    if absent:
        view = TaskPairedView(
            **shape,
            mean_difference=None,
            clustered_se=None,
            independent_se=None,
            absent_reasons=dict(sorted(absent.items())),
        )
        return view, ()
    observed = [
        (seed, oa.task_id, orient(oa.value, ob.value))  # type: ignore[arg-type]
        for seed, oa, ob in rows
    ]
    differences = [difference for _, _, difference in observed]
    view = TaskPairedView(
        **shape,
        mean_difference=stats.mean(differences),
        clustered_se=stats.clustered_standard_error([(t, d) for _, t, d in observed]),
        independent_se=stats.standard_error(differences),
    )
    # One pass groups the (seed, difference) pairs by task, in seed order.
    by_task: dict[str, list[tuple[int, float]]] = {}
    for seed, task, difference in observed:
        by_task.setdefault(task, []).append((seed, difference))
    per_task = []
    for task in tasks:
        mine = by_task[task]
        values = [d for _, d in mine]
        per_task.append(
            TaskDifference(
                task_id=task,
                seeds=tuple(seed for seed, _ in mine),
                differences=tuple(values),
                mean_difference=stats.mean(values),
            )
        )
    return view, tuple(per_task)


def _binary(value: float | None) -> bool | None:
    if value == 1.0:
        return True
    if value == 0.0:
        return False
    return None


def wilson_runs(paired: Paired) -> tuple[RunInterval, ...]:
    """Wilson 95% interval of every run's task_success (runs with a value only)."""
    intervals = []
    for seed in sorted(paired):
        for side, replicate in zip(("a", "b"), paired[seed], strict=True):
            found = replicate.metric(TASK_SUCCESS)
            if found is None or found[0].value is None or found[0].n_tasks < 1:
                continue
            result = found[0]
            successes = round(result.value * result.n_tasks)
            if abs(result.value * result.n_tasks - successes) > 1e-9:
                continue  # not a proportion of successes: no binomial interval
            low, high = stats.wilson_interval(successes, result.n_tasks)
            intervals.append(
                RunInterval(
                    side=side, seed=seed, successes=successes, n=result.n_tasks, low=low, high=high
                )
            )
    return tuple(intervals)


def pass_hat_k_of(replicates: list[ReplicateRuns]) -> tuple[PassHatK, ...] | None:
    """pass^k of one side from task_success observations across its seeds.

    None when a replicate has no task_success observations, or one is absent or
    not 0/1 (an absence is never counted as a failure).
    """
    trials: dict[str, list[bool]] = {}
    for replicate in replicates:
        observations = replicate.task_observations.get(TASK_SUCCESS)
        if observations is None:
            return None
        for observation in observations:
            outcome = _binary(observation.value)
            if outcome is None:
                return None
            trials.setdefault(observation.task_id, []).append(outcome)
    if not trials:
        return None
    return tuple(PassHatK(k=k, value=value) for k, value in stats.pass_hat_k(trials))


def task_changes(paired: Paired) -> tuple[tuple[SeedTaskChanges, ...], tuple[TaskChangeCount, ...]]:
    """Per seed and aggregated: tasks A solved and B did not (improvements) and the
    reverse (regressions). Only tasks with a 0/1 value on both sides are paired."""
    by_seed = []
    counts: dict[str, list[int]] = {}  # task -> [paired seeds, improvements, regressions]
    for seed in sorted(paired):
        replicate_a, replicate_b = paired[seed]
        by_task_a = _observations(replicate_a, TASK_SUCCESS)
        by_task_b = _observations(replicate_b, TASK_SUCCESS)
        if by_task_a is None or by_task_b is None:
            continue
        improvements, regressions = [], []
        for task in sorted(set(by_task_a) & set(by_task_b)):
            solved_a, solved_b = _binary(by_task_a[task].value), _binary(by_task_b[task].value)
            if solved_a is None or solved_b is None:
                continue
            count = counts.setdefault(task, [0, 0, 0])
            count[0] += 1
            if solved_a and not solved_b:
                improvements.append(task)
                count[1] += 1
            elif solved_b and not solved_a:
                regressions.append(task)
                count[2] += 1
        by_seed.append(
            SeedTaskChanges(
                seed=seed, improvements=tuple(improvements), regressions=tuple(regressions)
            )
        )
    aggregated = tuple(
        TaskChangeCount(task_id=task, paired_seeds=n, improvements=up, regressions=down)
        for task, (n, up, down) in sorted(counts.items())
    )
    return tuple(by_seed), aggregated
