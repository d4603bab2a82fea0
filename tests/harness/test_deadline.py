"""The attempt deadline (Harness.attempt_timeout_s): a hanging attempt is sealed partial."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _fixtures_run import Bench, ScriptedModel, calc, call, make_source, read_attempt, reply

from xaytune.harness import Harness, HarnessRunner
from xaytune.harness.evidence import assemble_evidence
from xaytune.harness.runner import ATTEMPT_TIMEOUT
from xaytune.harness.spec import ATTEMPT_TIMEOUT_S
from xaytune.harness.toolbox import Toolbox
from xaytune.models import ModelRequest

TOOLS = frozenset({"calculator"})
CALC = Harness(
    name="calc",
    system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    return make_source(tmp_path_factory.mktemp("deadline") / "suite", count=4)


@pytest.fixture
def bench(source, tmp_path: Path) -> Bench:
    return Bench(source, tmp_path / "store", count=1)


async def _hang(request: ModelRequest):
    await asyncio.Event().wait()  # never answers


def test_the_default_deadline_keeps_the_declaration_and_fingerprint() -> None:
    assert CALC.attempt_timeout_s == ATTEMPT_TIMEOUT_S == 600.0
    assert "attempt_timeout_s" not in CALC.model_dump(mode="json")
    explicit = CALC.model_copy(update={"attempt_timeout_s": ATTEMPT_TIMEOUT_S})
    assert explicit.model_dump(mode="json") == CALC.model_dump(mode="json")
    other = Harness.model_validate({**CALC.model_dump(mode="json"), "attempt_timeout_s": 5})
    assert other.model_dump(mode="json")["attempt_timeout_s"] == 5.0


@pytest.mark.parametrize("bad", [0, -1, 10**9])
def test_a_deadline_out_of_bounds_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="attempt_timeout_s"):
        Harness.model_validate({**CALC.model_dump(mode="json"), "attempt_timeout_s": bad})


def test_a_hanging_model_call_is_sealed_partial_and_retried(bench: Bench, source) -> None:
    harness = CALC.model_copy(update={"attempt_timeout_s": 0.2, "attempts_per_task": 2})
    spec = bench.spec(harness)
    # First attempt: one tool turn (its spend must be kept), then a call that never answers.
    model = ScriptedModel([reply(calls=[calc("2 * 3")], usage=(12, 7)), _hang, _hang])
    task_run = asyncio.run(
        HarnessRunner().run_task(
            spec, model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
        )
    )
    first, second = task_run.attempts
    assert (first.status, first.outcome) == ("partial", None)
    assert first.error.startswith(f"{ATTEMPT_TIMEOUT}:")
    assert first.spend.turns == 1 and first.spend.tool_calls == 1
    assert first.spend.input_tokens == 12 and first.spend.output_tokens == 7  # the reply's usage
    seal, events = read_attempt(first.path)
    assert seal["status"] == "partial"
    assert events[-2]["type"] == "timed-out"
    assert events[-2]["v"] == {"reason": ATTEMPT_TIMEOUT, "deadline_s": 0.2}
    assert second.status == "partial" and second.error.startswith(f"{ATTEMPT_TIMEOUT}:")
    evidence = assemble_evidence(
        [spec], bench.suite, bench.sampling, bench.assignment, source, bench.store
    )
    [entry] = evidence.entries
    assert entry.status == "no-attested-result" and entry.attested is None
    assert [a.status for a in entry.attempts] == ["partial", "partial"]


class Hanging:
    name = "hanging"
    description = "Never answers."
    version = "1"
    parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012

    async def invoke(self, arguments: dict[str, Any]) -> str:
        await asyncio.Event().wait()
        return "unreachable"


def test_a_hanging_tool_is_stopped_by_the_attempt_deadline(bench: Bench) -> None:
    # The tool's own timeout (60 s) is far off: only the attempt deadline can stop it.
    harness = CALC.model_copy(update={"tools": ("calculator", "hanging"), "attempt_timeout_s": 0.2})
    tools = TOOLS | {"hanging"}
    spec = bench.spec(harness, tools=tools)
    model = ScriptedModel([reply(calls=[call("hanging", "{}")]), reply("ANSWER: 0")])
    result = HarnessRunner().run(
        spec,
        model=model,
        toolbox=Toolbox.default().register(Hanging()),
        authorized_tools=tools,
    )
    assert (result.status, result.outcome) == ("partial", None)
    assert result.error.startswith(f"{ATTEMPT_TIMEOUT}:")
    assert result.spend.turns == 1  # the model turn that asked for the tool is kept
    seal, events = read_attempt(result.path)
    assert seal["status"] == "partial"
    assert events[-2]["v"]["reason"] == ATTEMPT_TIMEOUT
