"""Helpers shared by the compile/run tests: a suite, bound specs, a scripted model.

Imported by name (pytest puts ``tests/harness`` on ``sys.path``, as the directory has
no ``__init__.py``); it is not a conftest, so fixtures stay in the test files.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from xaytune.core.canonical import sha256_digest
from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.core.errors import EvidenceError
from xaytune.core.harness_evaluation import bind_task
from xaytune.harness import (
    AgentExecutionSpec,
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
    TrajectoryRecordingSpec,
)
from xaytune.harness.evidence import HarnessEvidenceStore
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.trajectory import WRITER, verify_chain
from xaytune.models import ModelIdentity, ModelReply, ModelRequest, ToolCall, Usage
from xaytune.suites import build_suite
from xaytune.suites.arith_generator import generate_arith_tools

SEED = 101


def make_source(root: Path, count: int = 24) -> SuiteSource:
    """An arith-tools suite of the first ``count`` generated tasks, pinned under ``root``."""
    tasks, references = generate_arith_tools()
    return build_suite(
        root, name="arith-tools", version="1", tasks=tasks[:count], references=references[:count]
    )


class Bench:
    """One replicate's wiring: an assignment over ``source`` and a store under ``root``."""

    def __init__(self, source: SuiteSource, root: Path, *, count: int = 4, seed: int = SEED):
        self.source = source
        self.suite = source.suite
        self.seed = seed
        self.sampling = SeededSample(count=count)
        self.assignment = record_assignment(self.suite, self.sampling, seed=seed)
        self.store = HarnessEvidenceStore(root)
        self.compiler = HarnessCompiler()

    def spec(
        self,
        harness: Harness,
        position: int = 0,
        *,
        tools: Iterable[str] = ("calculator",),
        content: HarnessContent | None = None,
        replicate: int = 0,
        model: ModelIdentity | None = None,
    ) -> AgentExecutionSpec:
        """The task-bound, recording spec of the task at ``position``."""
        task, binding = bind_task(self.suite, self.assignment, self.assignment.task_ids[position])
        return self.compiler.compile(
            harness,
            HarnessCompilationContext(
                task=task,
                seed=self.seed,
                replicate=replicate,
                authorized_tools=frozenset(tools),
                content=content or HarnessContent(),
                output_uri=str(self.store.task_output(binding.position)),
                trajectory=TrajectoryRecordingSpec(writer=WRITER),
                task_binding=binding,
                suite=self.suite,
                model=model,
            ),
        )

    def specs(self, harness: Harness, **kwargs: Any) -> list[AgentExecutionSpec]:
        return [self.spec(harness, i, **kwargs) for i in range(len(self.assignment.task_ids))]


# -- a scripted model ---------------------------------------------------------------

SCRIPTED = ModelIdentity(provider="test", model="scripted", revision="1")
Step = Any  # ModelReply | BaseException | Callable[[ModelRequest], ModelReply | Awaitable]


def reply(
    text: str | None = None, calls: Iterable[ToolCall] = (), usage: tuple[int, int] = (10, 5)
) -> ModelReply:
    calls = tuple(calls)
    return ModelReply(
        text=text,
        tool_calls=calls,
        usage=Usage(input_tokens=usage[0], output_tokens=usage[1]),
        finish_reason="tool_calls" if calls else "stop",
    )


def call(name: str, arguments: str | dict[str, Any], call_id: str = "c1") -> ToolCall:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id=call_id, name=name, arguments=raw)


def calc(expression: str, call_id: str = "c1") -> ToolCall:
    return call("calculator", {"expression": expression}, call_id)


class ScriptedModel:
    """Plays ``steps`` in order, one per call; records every request.

    A step is a :class:`ModelReply`, an exception to raise, or a callable of the
    request returning either (or an awaitable of a reply). When the script runs
    out, ``default`` is played (a callable or reply), else the call fails loudly.
    """

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        default: Step | None = None,
        delay_s: float = 0.0,
        identity: ModelIdentity = SCRIPTED,
    ) -> None:
        self.steps = list(steps)
        self.default = default
        self.delay_s = delay_s
        self._identity = identity
        self.requests: list[ModelRequest] = []

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.steps:
            step = self.steps.pop(0)
        elif self.default is not None:
            step = self.default
        else:
            raise AssertionError(f"script exhausted at call {len(self.requests)}")
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            step = step(request)
            if inspect.isawaitable(step):
                step = await step
            if isinstance(step, BaseException):
                raise step
        assert isinstance(step, ModelReply)
        return step


def loop_forever(name: str = "calculator") -> Callable[[ModelRequest], ModelReply]:
    """A step that always asks for one more tool call."""
    counter = iter(range(1, 10_000))

    def step(request: ModelRequest) -> ModelReply:
        n = next(counter)
        if name == "calculator":
            return reply(calls=[calc(f"{n} + 1", f"c{n}")])
        return reply(calls=[call(name, "{}", f"c{n}")])

    return step


# -- reading the store --------------------------------------------------------------


def attempt_files(root: Path) -> list[Path]:
    """Every attempt file under a store root, in (position, attempt) order."""
    return sorted((root / "tasks").glob("*/*.jsonl"))


def read_attempt(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Verify an attempt's chain from its record against its seal; (seal, events)."""
    parts = AttemptParts.of(path.read_bytes(), str(path))
    assert parts.seal is not None, f"{path} is open"
    seal = json.loads(parts.seal)
    data = b"".join(parts.events)
    genesis = sha256_digest(parts.record)
    facts = verify_chain(data, genesis=genesis, where=str(path), allow_torn_tail=seal["recovered"])
    chain = seal["trajectory"]
    assert (facts.head, facts.count, facts.bytes) == (
        chain["head"],
        chain["events"],
        chain["bytes"],
    )
    assert seal["attempt_record"] == genesis
    assert json.loads(parts.record)["attribution"]["spec_fingerprint"] == sha256_digest(
        parts.spec[:-1]
    )
    events = [json.loads(line) for line in data[: facts.bytes].splitlines()]
    assert [event["seq"] for event in events] == list(range(len(events)))
    return seal, events


def refused(action: Callable[[], object], reason: str) -> EvidenceError:
    """Run ``action``; it must raise EvidenceError with ``reason``, in one line."""
    with pytest.raises(EvidenceError) as caught:
        action()
    assert caught.value.reason == reason, str(caught.value)
    assert "\n" not in str(caught.value)
    return caught.value
