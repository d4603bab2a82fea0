"""Fixtures for the evidence layer: a small pinned suite and verified 20-task runs.

Every run is executed once per session into ``tmp_path_factory`` (a template) and
copied per test with :func:`shutil.copytree`, so each test mutates its own store
and the templates stay untouched.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from xaytune.core.domain.benchmark import (
    BenchmarkSuite,
    SeededSample,
    SuiteSource,
    TaskAssignment,
    record_assignment,
)
from xaytune.core.harness_evaluation import bind_task
from xaytune.harness import (
    AgentExecutionSpec,
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
    HarnessRunner,
    TaskRun,
    Toolbox,
    TrajectoryRecordingSpec,
)
from xaytune.harness.evidence import (
    HarnessRunEvidence,
    assemble_evidence,
    verify_run_evidence,
)
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.harness.evidence.trajectory import WRITER
from xaytune.models.protocol import Model, ModelIdentity, ModelReply, ModelRequest
from xaytune.models.simulated import SimulatedModel
from xaytune.suites import build_suite
from xaytune.suites.arith_generator import generate_arith_tools

SEED = 101
OTHER_SEED = 102
SUITE_TASKS = 30
RUN_TASKS = 20
TOOLS = frozenset({"calculator"})
CALC = Harness(
    name="calc",
    system_prompt="Use the calculator tool for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)
CALC_TERSE = Harness(
    name="calc-terse",
    system_prompt="Use the calculator tool. Reply with ANSWER: <number> at the end.",
    tools=("calculator",),
)
#: The position whose only attempt crashes (sealed partial) in ``partial_run``.
PARTIAL_POSITION = 2


def user_question(request: ModelRequest) -> str:
    """The task question of a request (the rendered user message)."""
    return next(m.content or "" for m in request.messages if m.role == "user")


class CrashingModel:
    """Wraps a model; raises RuntimeError on the ``on_call``-th call for one question."""

    def __init__(self, inner: Model, question: str, *, on_call: int = 2) -> None:
        self.inner = inner
        self.question = question
        self.on_call = on_call
        self.calls = 0

    @property
    def identity(self) -> ModelIdentity:
        return self.inner.identity

    async def complete(self, request: ModelRequest) -> ModelReply:
        if user_question(request) == self.question:
            self.calls += 1
            if self.calls == self.on_call:
                raise RuntimeError("simulated crash inside the model adapter")
        return await self.inner.complete(request)


@dataclass(frozen=True)
class Run:
    """One replicate: its suite, sampling, assignment, harness, store and evidence."""

    source: SuiteSource
    harness: Harness
    seed: int
    store: HarnessEvidenceStore
    evidence: HarnessRunEvidence | None = None

    @property
    def suite(self) -> BenchmarkSuite:
        return self.source.suite

    @property
    def sampling(self) -> SeededSample:
        return SeededSample(count=RUN_TASKS)

    @property
    def assignment(self) -> TaskAssignment:
        return record_assignment(self.suite, self.sampling, seed=self.seed)

    def specs(self, store: HarnessEvidenceStore | None = None) -> list[AgentExecutionSpec]:
        """The task-bound specs of this run, writing into ``store`` (default: own)."""
        store = store or self.store
        compiler = HarnessCompiler()
        assignment = self.assignment
        specs = []
        for task_id in assignment.task_ids:
            task, binding = bind_task(self.suite, assignment, task_id)
            specs.append(
                compiler.compile(
                    self.harness,
                    HarnessCompilationContext(
                        task=task,
                        seed=self.seed,
                        replicate=0,
                        authorized_tools=TOOLS,
                        content=HarnessContent(),
                        output_uri=str(store.task_output(binding.position)),
                        trajectory=TrajectoryRecordingSpec(writer=WRITER),
                        task_binding=binding,
                        suite=self.suite,
                    ),
                )
            )
        return specs

    def question(self, position: int) -> str:
        task = self.suite.task(self.assignment.task_ids[position])
        return str(task.input["question"])

    def execute(
        self, model: Model, *, resume: bool = False, concurrency: int = 16
    ) -> list[TaskRun]:
        """``HarnessRunner().run_many`` over every spec of the run."""
        return asyncio.run(
            HarnessRunner().run_many(
                self.specs(),
                model=model,
                toolbox=Toolbox.default(),
                authorized_tools=TOOLS,
                resume=resume,
                concurrency=concurrency,
            )
        )

    def assemble(self, specs: list[AgentExecutionSpec] | None = None) -> HarnessRunEvidence:
        return assemble_evidence(
            self.specs() if specs is None else specs,
            self.suite,
            self.sampling,
            self.assignment,
            self.source,
            self.store,
        )

    def verify(self, evidence: HarnessRunEvidence | None = None) -> None:
        evidence = self.evidence if evidence is None else evidence
        assert evidence is not None
        verify_run_evidence(evidence, self.suite, self.source, self.store)

    def attempt_file(self, position: int, number: int = 1) -> Path:
        return self.store.attempt_file(position, number)

    def copy_to(self, root: Path) -> Run:
        """A copy of the whole store tree at ``root`` (the evidence is path-free)."""
        shutil.copytree(self.store.root, root)
        return replace(self, store=HarnessEvidenceStore(root))


@pytest.fixture(scope="session")
def suite_source(tmp_path_factory: pytest.TempPathFactory) -> SuiteSource:
    tasks, references = generate_arith_tools()
    return build_suite(
        tmp_path_factory.mktemp("suite") / "arith-tools",
        name="arith-tools",
        version="1",
        tasks=tasks[:SUITE_TASKS],
        references=references[:SUITE_TASKS],
    )


def _executed(
    root: Path,
    source: SuiteSource,
    *,
    harness: Harness = CALC,
    seed: int = SEED,
    model: Callable[[Run], Model] | None = None,
) -> Run:
    run = Run(source=source, harness=harness, seed=seed, store=HarnessEvidenceStore(root))
    run.execute(SimulatedModel(seed=seed) if model is None else model(run))
    return replace(run, evidence=run.assemble())


@pytest.fixture(scope="session")
def _verified_template(tmp_path_factory: pytest.TempPathFactory, suite_source: SuiteSource) -> Run:
    return _executed(tmp_path_factory.mktemp("verified") / "seed-101", suite_source)


@pytest.fixture(scope="session")
def _partial_template(tmp_path_factory: pytest.TempPathFactory, suite_source: SuiteSource) -> Run:
    def crashing(run: Run) -> Model:
        return CrashingModel(SimulatedModel(seed=SEED), run.question(PARTIAL_POSITION))

    return _executed(tmp_path_factory.mktemp("partial") / "seed-101", suite_source, model=crashing)


@pytest.fixture(scope="session")
def foreign_runs(tmp_path_factory: pytest.TempPathFactory, suite_source: SuiteSource) -> dict:
    """Two other verified runs: another seed (same harness), another harness (same seed)."""
    return {
        "other-seed": _executed(
            tmp_path_factory.mktemp("foreign") / "seed-102", suite_source, seed=OTHER_SEED
        ),
        "other-harness": _executed(
            tmp_path_factory.mktemp("foreign") / "terse-101", suite_source, harness=CALC_TERSE
        ),
    }


@pytest.fixture
def verified_copies(tmp_path: Path, _verified_template: Run) -> Callable[[], Run]:
    """Make fresh copies of the verified 20-task run (one per call)."""
    made = iter(range(1_000))
    return lambda: _verified_template.copy_to(tmp_path / f"verified-{next(made)}")


@pytest.fixture
def verified_run(verified_copies: Callable[[], Run]) -> Run:
    """A verified 20-task run (every task attested with one attempt), this test's own."""
    return verified_copies()


@pytest.fixture
def partial_copies(tmp_path: Path, _partial_template: Run) -> Callable[[], Run]:
    made = iter(range(1_000))
    return lambda: _partial_template.copy_to(tmp_path / f"partial-{next(made)}")


@pytest.fixture
def partial_run(partial_copies: Callable[[], Run]) -> Run:
    """A verified 20-task run whose task at PARTIAL_POSITION crashed (sealed partial)."""
    return partial_copies()


@pytest.fixture
def partial_position() -> int:
    return PARTIAL_POSITION
