"""Shared fixtures: small suites built in tmp_path, real runs with the real runner and
store, test-local models for outcomes SimulatedModel cannot reach, and a call
counter for judge models."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.harness import (
    Harness,
    HarnessRunner,
    Toolbox,
    compile_replicate,
)
from xaytune.harness.evidence import HarnessRunEvidence, assemble_evidence
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.journal import JOURNAL_NAME
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.models import (
    ContextOverflowError,
    ModelError,
    ModelIdentity,
    ModelReply,
    ModelRequest,
    ToolCall,
    TransientModelError,
    Usage,
)
from xaytune.suites import build_suite

PLAIN = Harness(
    name="plain", system_prompt="Work it out. End with ANSWER: <number>.", model_retries=1
)


def make_suite(
    root: Path, items: Sequence[tuple[str, str, str]], name: str = "mini"
) -> SuiteSource:
    """A pinned suite of (task id, question, reference answer)."""
    return build_suite(
        root,
        name=name,
        version="1",
        tasks=[
            {"id": tid, "input": {"question": q}, "attachments": [], "metadata": {}}
            for tid, q, _ in items
        ],
        references=[{"id": tid, "answer": answer} for tid, _, answer in items],
    )


class ScriptedModel:
    """Replies by the question's first word (a test-local model, not a simulator):

    ``say:<text>:<in>:<out>`` -> text ``ANSWER: <text>`` with that usage;
    ``prose:<in>:<out>`` -> text with no ANSWER marker (nothing extracted);
    ``error`` -> ModelError (model-error); ``transient`` -> TransientModelError forever;
    ``overflow`` -> ContextOverflowError; ``crash`` -> RuntimeError while ``crashing``
    (the runner seals the attempt partial); after ``crashing = False`` it says ``7``;
    ``flaky`` -> per question, call 1 a calculator call (usage 50/5), call 2 a crash,
    call 3 the calculator call again, call 4 ``ANSWER: 2`` (usage 60/6).
    """

    def __init__(self) -> None:
        self.crashing = True
        self.calls = 0
        self.seen: dict[str, int] = {}

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(provider="test", model="scripted", revision="1")

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        question = next(m.content for m in request.messages if m.role == "user") or ""
        word, *args = question.split(":")
        if word == "say":
            text, tokens_in, tokens_out = args
            return _reply(f"ANSWER: {text}", int(tokens_in), int(tokens_out))
        if word == "prose":
            return _reply("I am not sure.", int(args[0]), int(args[1]))
        if word == "error":
            # A refusal of this one request (a 400): an outcome. model-auth would be the
            # endpoint's (definitive: the attempt ends partial and the run stops).
            raise ModelError("model-error", "scripted: HTTP 400, bad request")
        if word == "transient":
            raise TransientModelError("scripted: try again")
        if word == "overflow":
            raise ContextOverflowError("scripted: too long")
        if word == "flaky":
            count = self.seen[question] = self.seen.get(question, 0) + 1
            if count == 2:
                raise RuntimeError("scripted crash mid-attempt")
            if count in (1, 3):
                call = ToolCall(
                    id=f"c{count}", name="calculator", arguments='{"expression": "1 + 1"}'
                )
                return ModelReply(
                    text=None,
                    tool_calls=(call,),
                    usage=Usage(input_tokens=50, output_tokens=5),
                    finish_reason="tool_calls",
                )
            return _reply("ANSWER: 2", 60, 6)
        if word == "crash":
            if self.crashing:
                raise RuntimeError("scripted crash")
            return _reply("ANSWER: 7", 30, 3)
        raise AssertionError(f"unscripted question {question!r}")


def _reply(text: str, tokens_in: int, tokens_out: int) -> ModelReply:
    return ModelReply(
        text=text,
        tool_calls=(),
        usage=Usage(input_tokens=tokens_in, output_tokens=tokens_out),
        finish_reason="stop",
    )


class CountingModel:
    """Wraps a model and counts every request it receives (judge egress checks)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[ModelRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay_s = 0.0

    @property
    def identity(self) -> ModelIdentity:
        return self.inner.identity

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return await self.inner.complete(request)
        finally:
            self.in_flight -= 1


class SpySource(SuiteSource):
    """A SuiteSource that counts reference reads."""

    reads = 0

    def reference(self, task_id: str):  # type: ignore[override]
        self.reads += 1
        return super().reference(task_id)


@dataclass
class Run:
    source: SuiteSource
    store: HarnessEvidenceStore
    evidence: HarnessRunEvidence
    specs: list[Any]


def run_suite(
    source: SuiteSource,
    root: Path,
    model: Any,
    *,
    harness: Harness = PLAIN,
    seed: int = 101,
    count: int | None = None,
    cancelled: Sequence[str] = (),
    tools: frozenset[str] = frozenset(),
    before_assembly: Callable[[list[Any], HarnessEvidenceStore], None] | None = None,
) -> Run:
    """Compile and run every assigned task with the real runner and store; tasks in
    ``cancelled`` run with the host's cancel token already set. Then assemble."""
    suite = source.suite
    store = HarnessEvidenceStore(root, durability="none")
    sampling = SeededSample(count=count)
    assignment = record_assignment(suite, sampling, seed=seed)
    runner = HarnessRunner(durability="none")
    specs = compile_replicate(
        harness, suite=suite, assignment=assignment, store=store, authorized_tools=tools
    )
    toolbox = Toolbox.default()
    normal = [s for s in specs if s.task_id not in cancelled]
    stopped = [s for s in specs if s.task_id in cancelled]
    cancel = asyncio.Event()
    cancel.set()
    for batch, token in ((normal, None), (stopped, cancel)):
        if batch:
            asyncio.run(
                runner.run_many(
                    batch, model=model, toolbox=toolbox, authorized_tools=tools, cancel=token
                )
            )
    if before_assembly is not None:
        before_assembly(specs, store)
    evidence = assemble_evidence(specs, suite, sampling, assignment, source, store)
    return Run(source, store, evidence, specs)


_counter = itertools.count()


@pytest.fixture
def fresh(tmp_path: Path) -> Callable[[str], Path]:
    """A new, not-yet-existing directory under tmp_path."""

    def make(label: str) -> Path:
        return tmp_path / f"{label}-{next(_counter)}"

    return make


def reopen_and_resume(model: ScriptedModel) -> Callable[..., None]:
    """A ``before_assembly`` hook: the run's one attempt loses its end event and seal
    (a crash before its commit), then the run is resumed with the model no longer
    crashing, so the task is recovered partial and attempted again."""

    def hook(specs, store):
        (spec,) = specs
        attempt = store.attempts(0)[0].path
        parts = AttemptParts.of(attempt.read_bytes(), str(attempt))
        assert parts.seal is not None and parts.events
        attempt.write_bytes(dataclasses.replace(parts, seal=None, events=parts.events[:-1]).join())
        (store.root / JOURNAL_NAME).unlink()  # the crash came before its seal was committed
        model.crashing = False
        asyncio.run(
            HarnessRunner(durability="none").run_many(
                [spec], model=model, toolbox=Toolbox.default(), authorized_tools=(), resume=True
            )
        )

    return hook


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers above, for tests (conftest modules are not imported by name)."""
    return SimpleNamespace(
        PLAIN=PLAIN,
        make_suite=make_suite,
        run_suite=run_suite,
        reopen_and_resume=reopen_and_resume,
        ScriptedModel=ScriptedModel,
        CountingModel=CountingModel,
        SpySource=SpySource,
    )
