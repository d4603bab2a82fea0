"""Small pinned suites for the core tests: built on disk, or held in memory.

Shared through fixtures only: ``import conftest`` is ambiguous when several test
directories have one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from xaytune.core.domain.benchmark import Attachment, BenchmarkSuite, Task
from xaytune.core.domain.measurement import EvaluationResult, MetricResult, TaskObservation
from xaytune.core.harness_comparison import (
    CandidateRuns,
    ComparisonSpec,
    ObjectiveMetric,
    ReplicateRuns,
)
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


class RunsFactory:
    """Candidates for compare(): one outcome evaluation per seed, built from columns."""

    suite = SimpleNamespace(name="arith-tools", digest="sha256:" + "5" * 64)
    units: ClassVar[dict[str, tuple[str, bool]]] = {
        "task_success": ("proportion", True),
        "total_tokens": ("tokens", False),
    }

    def replicate(
        self,
        name: str,
        seed: int,
        values: dict[str, float],
        *,
        n_tasks: int = 20,
        task_observations: dict[str, tuple[TaskObservation, ...]] | None = None,
    ) -> ReplicateRuns:
        evaluation = EvaluationResult(
            evaluator="harness-outcome",
            evaluator_fingerprint="sha256:outcome-v1",
            determinism="DETERMINISTIC",
            subject_digest=f"sha256:{name}-{seed}",
            suite_digest=self.suite.digest,
            assignment_digest=f"sha256:assignment-{seed}",
            seed=seed,
            metrics=tuple(
                MetricResult(
                    metric=key,
                    unit=self.units[key][0],
                    reference_derived=self.units[key][1],
                    n_tasks=n_tasks,
                    value=float(value),
                )
                for key, value in values.items()
            ),
        )
        return ReplicateRuns(
            seed=seed,
            suite_digest=self.suite.digest,
            assignment_digest=f"sha256:assignment-{seed}",
            evaluations=(evaluation,),
            facets={"model": {"id": "sim"}},
            timing_environment="ci",
            task_observations=task_observations or {},
        )

    def candidate(
        self,
        name: str,
        columns: dict[str, Sequence[float]],
        *,
        seeds: Sequence[int] | None = None,
        n_tasks: int = 20,
        config: dict[str, Any] | None = None,
        fingerprint: str | None = None,
    ) -> CandidateRuns:
        """Metric ``key`` has value ``columns[key][i]`` under the i-th seed (101, 102, ...)."""
        count = len(next(iter(columns.values())))
        seeds = list(seeds) if seeds is not None else [101 + i for i in range(count)]
        replicates = tuple(
            self.replicate(
                name, seed, {key: column[i] for key, column in columns.items()}, n_tasks=n_tasks
            )
            for i, seed in enumerate(seeds)
        )
        return CandidateRuns(
            name=name,
            harness_fingerprint=fingerprint or f"sha256:harness-{name}",
            harness_config=config if config is not None else {"name": name},
            replicates=replicates,
        )

    @staticmethod
    def spec(*objectives: tuple[str, str, float], k: float = 2.0, **kwargs: Any) -> ComparisonSpec:
        return ComparisonSpec(
            objectives=tuple(
                ObjectiveMetric(metric=m, direction=d, min_effect=e) for m, d, e in objectives
            ),
            k=k,
            **kwargs,
        )


@pytest.fixture(scope="session")
def runs() -> RunsFactory:
    return RunsFactory()
