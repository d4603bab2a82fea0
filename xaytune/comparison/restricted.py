"""The restricted part of a comparison report: per-task, reference-derived facts
(spec: Disclosure — per-task reference-derived scores go to the restricted report).
Re-exported by :mod:`xaytune.comparison.report`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RestrictedComparison", "SeedTaskChanges", "TaskChangeCount", "TaskDifference"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class TaskDifference(BaseModel):
    """One task's oriented differences across the seeds that ran it."""

    model_config = _FROZEN

    task_id: str
    seeds: tuple[int, ...]
    differences: tuple[float, ...]
    mean_difference: float


class SeedTaskChanges(BaseModel):
    """Under one seed: tasks A solved and B did not, and the reverse."""

    model_config = _FROZEN

    seed: int
    improvements: tuple[str, ...]
    regressions: tuple[str, ...]


class TaskChangeCount(BaseModel):
    """Aggregated over seeds: how often a task was an improvement or a regression."""

    model_config = _FROZEN

    task_id: str
    paired_seeds: int
    improvements: int
    regressions: int


class RestrictedComparison(BaseModel):
    """RESTRICTED: per-task, reference-derived facts (released only per-task).

    Which tasks A solved and B did not (and the reverse), and the per-task
    differences of every metric with task observations.
    """

    model_config = _FROZEN

    label: Literal["restricted"] = "restricted"
    task_changes_by_seed: tuple[SeedTaskChanges, ...] = ()
    task_changes: tuple[TaskChangeCount, ...] = ()
    task_differences: dict[str, tuple[TaskDifference, ...]] = Field(default_factory=dict)
