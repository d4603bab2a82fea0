"""bind_task: one assigned task, its binding, and the three refusals."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.core.errors import SuiteError
from xaytune.core.harness_evaluation import TaskBinding, bind_task

IDS = ["a1", "a2", "a3", "a4", "a5", "a6"]


def _refusal(*args: Any) -> str:
    with pytest.raises(SuiteError) as caught:
        bind_task(*args)
    assert "\n" not in str(caught.value)
    return caught.value.reason


def test_every_assigned_task_binds_to_its_position(build: Callable[..., Path]):
    # The loop of the specification's "Running one replicate", over a suite on disk.
    suite = SuiteSource(build()).suite
    assignment = record_assignment(suite, SeededSample(count=3), seed=101)
    for position, task_id in enumerate(assignment.task_ids):
        task, binding = bind_task(suite, assignment, task_id)
        assert task == suite.task(task_id)
        assert binding == TaskBinding(
            suite_digest=suite.digest,
            assignment_digest=assignment.digest,
            task_id=task_id,
            position=position,
            seed=101,
        )


def test_binding_is_deterministic_and_frozen(suites: Any):
    suite = suites.memory(IDS)
    assignment = record_assignment(suite, SeededSample(), seed=-7)
    first = bind_task(suite, assignment, assignment.task_ids[2])
    assert bind_task(suite, assignment, assignment.task_ids[2]) == first
    _, binding = first
    assert (binding.position, binding.seed) == (2, -7)
    with pytest.raises(ValueError):
        binding.position = 0  # type: ignore[misc]
    with pytest.raises(ValueError):
        TaskBinding(**binding.model_dump(), extra="x")


def test_a_task_outside_the_assignment_is_refused(suites: Any):
    suite = suites.memory(IDS)
    assignment = record_assignment(suite, SeededSample(count=2), seed=3)
    unassigned = next(task_id for task_id in IDS if task_id not in assignment.task_ids)
    assert _refusal(suite, assignment, unassigned) == "task-not-assigned"
    assert _refusal(suite, assignment, "not-in-the-suite") == "task-not-assigned"
    assert _refusal(suite, assignment, "../a1") == "task-not-assigned"


def test_an_assignment_of_another_suite_is_refused(suites: Any):
    # Same task ids, another digest (another version of the suite): another cohort.
    suite = suites.memory(IDS, digest="sha256:" + "1" * 64)
    other = suites.memory(IDS, digest="sha256:" + "2" * 64)
    assignment = record_assignment(other, SeededSample(), seed=1)
    for task_id in assignment.task_ids:
        assert _refusal(suite, assignment, task_id) == "suite-mismatch"


def test_an_assignment_of_another_built_suite_is_refused(build: Callable[..., Path]):
    version_1 = SuiteSource(build(version="1")).suite
    version_2 = SuiteSource(build(version="2")).suite
    assignment = record_assignment(version_2, SeededSample(), seed=1)
    assert _refusal(version_1, assignment, assignment.task_ids[0]) == "suite-mismatch"


def test_a_task_with_attachments_is_refused(suites: Any):
    suite = suites.memory(IDS, attachments=["a4"])
    assignment = record_assignment(suite, SeededSample(), seed=11)
    assert _refusal(suite, assignment, "a4") == "task-has-attachments"
    for task_id in (t for t in assignment.task_ids if t != "a4"):
        task, _ = bind_task(suite, assignment, task_id)
        assert task.attachments == ()


def test_a_built_task_with_attachments_is_refused(build: Callable[..., Path], suites: Any):
    tasks = suites.task_records()
    tasks[0] = {**tasks[0], "attachments": [{"name": "table.csv"}]}
    suite = SuiteSource(build(tasks=tasks)).suite
    assignment = record_assignment(suite, SeededSample(), seed=0)
    assert _refusal(suite, assignment, tasks[0]["id"]) == "task-has-attachments"
