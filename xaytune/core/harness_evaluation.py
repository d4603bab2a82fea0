"""Binding one assigned task into execution (spec: Running one replicate)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from xaytune.core.domain.benchmark import BenchmarkSuite, Task, TaskAssignment
from xaytune.core.errors import SuiteError

__all__ = ["TaskBinding", "bind_task"]


class TaskBinding(BaseModel):
    """Which assigned task a run is bound to: suite, assignment, task, position, seed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite_digest: str
    assignment_digest: str
    task_id: str
    position: int
    seed: int


def bind_task(
    suite: BenchmarkSuite, assignment: TaskAssignment, task_id: str
) -> tuple[Task, TaskBinding]:
    """Return the task and its binding; refuse what cannot be bound.

    Refusals: ``suite-mismatch`` (the assignment is from another suite digest),
    ``task-not-assigned`` (the id is not in the assignment) and
    ``task-has-attachments`` (H06 runs no task with attachments).
    """
    if assignment.suite_digest != suite.digest:
        raise SuiteError(
            "suite-mismatch",
            f"assignment seed {assignment.seed} is for suite {assignment.suite_digest}, "
            f"not {suite.name} {suite.digest}",
        )
    position = assignment.position(task_id)
    if position is None:
        raise SuiteError(
            "task-not-assigned",
            f"task {task_id!r} is not in the assignment for seed {assignment.seed}",
        )
    task = suite.task(task_id)
    if task.attachments:
        raise SuiteError(
            "task-has-attachments",
            f"task {task_id!r} declares {len(task.attachments)} attachment(s); H06 refuses them",
        )
    binding = TaskBinding(
        suite_digest=suite.digest,
        assignment_digest=assignment.digest,
        task_id=task_id,
        position=position,
        seed=assignment.seed,
    )
    return task, binding
