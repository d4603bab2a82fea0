"""Small pinned suites for the core tests: built on disk, or held in memory.

Shared through fixtures only: ``import conftest`` is ambiguous when several test
directories have one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from xaytune.core.domain.benchmark import Attachment, BenchmarkSuite, Task
from xaytune.suites import build_suite

# Answers no task, id or digest could contain by chance, so "the answer string does
# not appear in X" is a real check of leakage.
ANSWERS = {
    "t01": "ANSWER-alpha-secret",
    "t02": "ANSWER-bravo-secret",
    "t03": "ANSWER-charlie-secret",
    "t04": "ANSWER-delta-secret",
}


class SuiteFactory:
    """Records and suites for tests; ``answers`` is the default task id -> answer map."""

    answers = ANSWERS

    @staticmethod
    def task_records(answers: dict[str, str] = ANSWERS) -> list[dict[str, Any]]:
        """One public record per answer: an id and a question."""
        return [
            {"id": task_id, "input": {"question": f"What is {task_id}?"}} for task_id in answers
        ]

    @staticmethod
    def reference_records(answers: dict[str, str] = ANSWERS) -> list[dict[str, Any]]:
        return [{"id": task_id, "answer": answer} for task_id, answer in answers.items()]

    @staticmethod
    def memory(
        task_ids: Sequence[str],
        *,
        digest: str = "sha256:" + "ab" * 32,
        attachments: Sequence[str] = (),
        name: str = "memory",
    ) -> BenchmarkSuite:
        """A suite that never touched the disk; ``attachments`` names tasks that declare one."""
        return BenchmarkSuite(
            name=name,
            version="1",
            digest=digest,
            tasks=tuple(
                Task(
                    id=task_id,
                    input={"question": task_id},
                    attachments=(Attachment(name="data.csv"),) if task_id in attachments else (),
                )
                for task_id in task_ids
            ),
        )


@pytest.fixture(scope="session")
def suites() -> SuiteFactory:
    return SuiteFactory()


@pytest.fixture
def build(tmp_path: Path) -> Callable[..., Path]:
    """Build a suite under tmp_path and return its directory (one directory per call)."""
    made: list[Path] = []

    def _build(
        name: str = "tiny",
        version: str = "1",
        tasks: Sequence[dict[str, Any]] | None = None,
        references: Sequence[dict[str, Any]] | None = None,
    ) -> Path:
        out = tmp_path / f"suite-{len(made)}"
        build_suite(
            out,
            name=name,
            version=version,
            tasks=SuiteFactory.task_records() if tasks is None else tasks,
            references=SuiteFactory.reference_records() if references is None else references,
        )
        made.append(out)
        return out

    return _build
