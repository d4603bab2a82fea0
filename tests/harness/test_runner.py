"""The agent loop: every terminal status, tool misuse, spend, retries, concurrency."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from _fixtures_run import (
    SCRIPTED,
    Bench,
    ScriptedModel,
    attempt_files,
    calc,
    call,
    loop_forever,
    make_source,
    read_attempt,
    reply,
)

from xaytune.core.errors import ExecutionError
from xaytune.harness import Harness, HarnessCompilationContext, HarnessCompiler, HarnessRunner
from xaytune.harness.evidence import assemble_evidence
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.toolbox import Toolbox, ToolError
from xaytune.models import (
    ContextOverflowError,
    ModelError,
    ModelIdentity,
    ModelRequest,
    SimulatedModel,
    TransientModelError,
)

TOOLS = frozenset({"calculator"})
CALC = Harness(
    name="calc",
    system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    return make_source(tmp_path_factory.mktemp("runner") / "suite", count=24)


@pytest.fixture
def bench(source, tmp_path: Path) -> Bench:
    return Bench(source, tmp_path / "store", count=4)


def run(
    bench: Bench,
    harness: Harness,
    model: Any,
    *,
    position: int = 0,
    toolbox: Toolbox | None = None,
    tools: frozenset[str] = TOOLS,
    cancel: asyncio.Event | None = None,
):
    spec = bench.spec(harness, position, tools=tools)
    runner = HarnessRunner()
    return runner.run(
        spec,
        model=model,
        toolbox=toolbox or Toolbox.default(),
        authorized_tools=tools,
        cancel=cancel,
    )


def sealed(result) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The attempt's seal and events, after checking the chain and the result agree."""
    seal, events = read_attempt(result.path)
    assert seal["status"] == result.status
    assert seal["spend"] == result.spend.as_dict()
    assert events[-1]["type"] == "end"
    assert events[-1]["v"] == {
        "status": seal["status"],
        "outcome": seal["outcome"],
        "spend": seal["spend"],
    }
    return seal, events


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


# -- terminal statuses --------------------------------------------------------------


def test_answer(bench: Bench) -> None:
    model = ScriptedModel([reply(calls=[calc("2 + 3")]), reply("So 5.\nANSWER: 5")])
    result = run(bench, CALC, model)
    assert result.status == "complete" and result.attempt == 1
    assert result.outcome.terminal == "answer" and result.outcome.answer == "5"
    assert result.final_text == "So 5.\nANSWER: 5" and result.error is None
    seal, events = sealed(result)
    assert seal["outcome"] == {"terminal": "answer", "answer": "5", "detail": None}
    assert kinds(events) == ["start", "model_reply", "tool_result", "model_reply", "end"]
    assert events[0]["v"]["task_id"] == bench.assignment.task_ids[0]
    assert events[2]["v"]["ok"] is True and events[2]["v"]["content"] == "5"
    assert result.path == Path(bench.store.task_output(0)) / "001.jsonl"


def test_answer_without_marker_is_an_answer_with_none(bench: Bench) -> None:
    result = run(bench, CALC, ScriptedModel([reply("It is five.")]))
    assert result.outcome.terminal == "answer" and result.outcome.answer is None


def test_budget_stop_max_turns(bench: Bench) -> None:
    harness = CALC.model_copy(update={"max_turns": 2})
    result = run(bench, harness, ScriptedModel(default=loop_forever()))
    assert result.status == "complete"
    assert result.outcome.terminal == "budget-stop" and result.outcome.answer is None
    assert "max turns 2" in result.outcome.detail
    assert (result.spend.turns, result.spend.tool_calls) == (2, 2)
    sealed(result)


def test_budget_stop_token_budget(bench: Bench) -> None:
    harness = CALC.model_copy(update={"token_budget": 40})
    result = run(bench, harness, ScriptedModel(default=loop_forever()))
    assert result.outcome.terminal == "budget-stop"
    assert "token budget 40" in result.outcome.detail
    # 15 tokens a turn: 45 > 40 after the third turn, whose tool calls are not run
    assert (result.spend.turns, result.spend.tool_calls) == (3, 2)
    assert result.spend.input_tokens + result.spend.output_tokens == 45
    sealed(result)


def test_budget_stop_tool_call_budget(bench: Bench) -> None:
    harness = CALC.model_copy(update={"tool_call_budget": 1})
    two_calls = reply(calls=[calc("1 + 1", "a"), calc("2 + 2", "b")])
    result = run(bench, harness, ScriptedModel([two_calls], default=loop_forever()))
    assert result.outcome.terminal == "budget-stop"
    assert "tool-call budget 1" in result.outcome.detail
    assert (result.spend.turns, result.spend.tool_calls) == (1, 1)
    _, events = sealed(result)
    assert kinds(events).count("tool_result") == 1


def test_budget_stop_zero_tool_calls(bench: Bench) -> None:
    harness = CALC.model_copy(update={"tool_call_budget": 0})
    result = run(bench, harness, ScriptedModel(default=loop_forever()))
    assert result.outcome.terminal == "budget-stop" and result.spend.tool_calls == 0


def test_context_overflow_by_the_harness_window(bench: Bench) -> None:
    harness = CALC.model_copy(update={"context_window": 30})
    model = ScriptedModel(
        [
            reply(calls=[calc("1 + 1", "a")], usage=(10, 5)),  # context 15 < 30
            reply(calls=[calc("2 + 2", "b")], usage=(25, 5)),  # context 30: stop before next
        ],
        default=loop_forever(),
    )
    result = run(bench, harness, model)
    assert result.status == "complete"
    assert result.outcome.terminal == "context-overflow"
    assert "30" in result.outcome.detail and "window" in result.outcome.detail
    assert result.spend.turns == 2 and result.spend.peak_context_tokens == 30
    assert len(model.requests) == 2  # the turn that would overflow is never sent
    sealed(result)


def test_context_overflow_raised_by_the_model(bench: Bench) -> None:
    harness = CALC.model_copy(update={"model_retries": 3})
    model = ScriptedModel([ContextOverflowError("prompt of 9000 tokens exceeds 8192")])
    result = run(bench, harness, model)
    assert result.outcome.terminal == "context-overflow"
    assert "9000 tokens" in result.outcome.detail
    assert len(model.requests) == 1 and result.spend.retries == 0  # never retried
    assert result.spend.turns == 0
    _, events = sealed(result)
    assert kinds(events) == ["start", "model_error", "end"]
    assert events[1]["v"]["reason"] == "context-overflow"


def test_context_overflow_from_the_simulated_model(bench: Bench) -> None:
    model = SimulatedModel(seed=1, context_window=20)
    result = run(bench, CALC, model)
    assert result.outcome.terminal == "context-overflow"
    assert "exceeds the context window of 20" in result.outcome.detail


def test_model_error(bench: Bench) -> None:
    # A refusal of this one request (not definitive): the task's outcome is model-error.
    model = ScriptedModel([ModelError("model-error", "parameter rejected (400)")])
    result = run(bench, CALC, model)
    assert result.status == "complete"
    assert result.outcome.terminal == "model-error"
    assert "parameter rejected" in result.outcome.detail
    assert len(model.requests) == 1 and result.spend.retries == 0
    _, events = sealed(result)
    assert events[1]["type"] == "model_error" and events[1]["v"]["reason"] == "model-error"


@pytest.mark.parametrize("reason", ["model-auth", "model-unknown", "model-malformed"])
def test_definitive_model_error_leaves_the_attempt_partial(bench: Bench, reason: str) -> None:
    """The endpoint refuses every call alike (issue 29): no outcome, never retried; the
    recorded error starts with the reason word, which the app stops the run with."""
    harness = CALC.model_copy(update={"model_retries": 3})
    model = ScriptedModel([ModelError(reason, "API key rejected (401)")])
    result = run(bench, harness, model)
    assert result.status == "partial" and result.outcome is None
    assert result.error.startswith(f"ModelUnavailable: {reason}: API key rejected (401)")
    assert len(model.requests) == 1 and result.spend.retries == 0
    _, events = sealed(result)
    assert events[1]["type"] == "model_error" and events[1]["v"]["reason"] == reason


def test_transient_errors_beyond_the_retries_leave_the_attempt_partial(bench: Bench) -> None:
    harness = CALC.model_copy(update={"model_retries": 2})
    model = ScriptedModel(default=TransientModelError("503 from upstream"))
    result = run(bench, harness, model)
    # No outcome: the endpoint may be back; a resume runs the task again.
    assert result.status == "partial" and result.outcome is None
    assert result.error.startswith("ModelUnavailable: model-unavailable") and "503" in result.error
    assert len(model.requests) == 3  # one call and model_retries retries
    assert result.spend.retries == 2 and result.spend.turns == 0
    # each retry derives a distinct sampling key for the same turn
    assert len({request.sampling_key for request in model.requests}) == 3
    seal, events = read_attempt(result.path)
    assert seal["status"] == "partial" and seal["spend"] == result.spend.as_dict()
    assert kinds(events) == ["start", "model_error", "model_error", "model_error", "crashed", "end"]


def test_a_loop_that_swallows_an_unreachable_model_still_ends_partial(bench: Bench) -> None:
    from xaytune.harness.loops import LoopContext
    from xaytune.plugins import loop

    @loop(name="test-swallows-unavailable")
    async def swallow(ctx: LoopContext) -> str | None:
        with contextlib.suppress(ExecutionError):
            await ctx.generate(list(ctx.messages))
        return "ANSWER: 1"

    harness = Harness.model_validate(
        {**CALC.model_dump(mode="json"), "loop": "test-swallows-unavailable", "model_retries": 0}
    )
    result = run(bench, harness, ScriptedModel(default=TransientModelError("down")))
    assert result.status == "partial" and "model-unavailable" in result.error


def test_a_transient_error_is_retried_into_the_same_turn(bench: Bench) -> None:
    model = ScriptedModel(
        [TransientModelError("timeout", retries=2), reply("ANSWER: 9")], delay_s=0.001
    )
    result = run(bench, CALC, model)
    assert result.outcome.terminal == "answer" and result.outcome.answer == "9"
    assert model.requests[0].messages == model.requests[1].messages
    # 1 runner retry + 2 transport retries the adapter made before raising
    assert result.spend.retries == 3 and result.spend.turns == 1
    assert result.spend.model_time_us >= 2000  # the failed call's time is spent too
    sealed(result)


def test_adapter_retries_on_a_reply_are_counted(bench: Bench) -> None:
    answered = reply("ANSWER: 1")
    answered = type(answered)(
        text=answered.text,
        tool_calls=(),
        usage=answered.usage,
        finish_reason="stop",
        retries=2,
    )
    result = run(bench, CALC, ScriptedModel([answered]))
    assert result.spend.retries == 2


def test_cancelled_before_the_first_turn(bench: Bench) -> None:
    cancel = asyncio.Event()
    cancel.set()
    model = ScriptedModel()
    result = run(bench, CALC, model, cancel=cancel)
    assert result.status == "complete"
    assert result.outcome.terminal == "cancelled" and result.outcome.answer is None
    assert model.requests == [] and result.spend.turns == 0
    seal, events = sealed(result)
    assert seal["status"] == "complete" and kinds(events) == ["start", "end"]


def test_cancelled_between_turns(bench: Bench) -> None:
    cancel = asyncio.Event()

    def first(request: ModelRequest):
        cancel.set()  # the host cancels while this call is in flight
        return reply(calls=[calc("1 + 2")])

    result = run(bench, CALC, ScriptedModel([first]), cancel=cancel)
    assert result.outcome.terminal == "cancelled"
    assert (result.spend.turns, result.spend.tool_calls) == (1, 1)
    sealed(result)


def test_interruption_seals_partial_and_propagates(bench: Bench) -> None:
    harness = CALC.model_copy(update={"attempts_per_task": 3})
    spec = bench.spec(harness)
    second_call = asyncio.Event()

    async def hang(request: ModelRequest):
        second_call.set()
        await asyncio.Event().wait()  # never answers

    model = ScriptedModel([reply(calls=[calc("2 * 3")], usage=(12, 7)), hang])

    async def main() -> None:
        task = asyncio.create_task(
            HarnessRunner().run_task(
                spec, model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
            )
        )
        await second_call.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    [path] = attempt_files(bench.store.root)  # an interruption is never retried
    seal, events = read_attempt(path)
    assert seal["status"] == "partial" and seal["outcome"] is None
    assert seal["recovered"] is False
    spend = seal["spend"]
    assert (spend["turns"], spend["tool_calls"], spend["input_tokens"]) == (1, 1, 12)
    assert spend["output_tokens"] == 7
    assert kinds(events)[-2:] == ["interrupted", "end"]
    assert events[-2]["v"] == {"by": "CancelledError"}


def test_crash_seals_partial_and_a_second_attempt_is_made(bench: Bench) -> None:
    harness = CALC.model_copy(update={"attempts_per_task": 2})
    spec = bench.spec(harness)
    model = ScriptedModel(
        [reply(calls=[calc("1 + 1")]), RuntimeError("socket exploded"), reply("ANSWER: 2")]
    )
    task_run = asyncio.run(
        HarnessRunner().run_task(
            spec, model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
        )
    )
    first, second = task_run.attempts
    assert (first.attempt, first.status, first.outcome) == (1, "partial", None)
    assert first.error == "RuntimeError: socket exploded"
    assert first.spend.turns == 1 and first.spend.tool_calls == 1  # spend so far kept
    assert (second.attempt, second.status) == (2, "complete")
    assert second.outcome.answer == "2"
    assert [p.name for p in attempt_files(bench.store.root)] == ["001.jsonl", "002.jsonl"]
    seal, events = read_attempt(first.path)
    assert seal["status"] == "partial"
    assert events[-2]["type"] == "crashed"
    assert events[-2]["v"]["error"] == "RuntimeError: socket exploded"
    read_attempt(second.path)


def test_crashes_on_every_attempt_give_no_attested_result(bench: Bench, source) -> None:
    one = Bench(source, bench.store.root.parent / "one", count=1)
    harness = CALC.model_copy(update={"attempts_per_task": 2})
    spec = one.spec(harness)
    model = ScriptedModel(default=RuntimeError("down"))
    result = HarnessRunner().run(
        spec, model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
    )
    assert result.attempt == 2 and result.status == "partial"
    evidence = assemble_evidence([spec], one.suite, one.sampling, one.assignment, source, one.store)
    [entry] = evidence.entries
    assert entry.status == "no-attested-result" and entry.attested is None
    assert [a.status for a in entry.attempts] == ["partial", "partial"]


def test_a_tool_that_raises_is_a_tool_error_the_model_sees(bench: Bench) -> None:
    class Buggy:
        name = "buggy"
        description = "Raises a bug."
        version = "1"
        parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012

        def invoke(self, arguments: dict[str, Any]) -> str:
            raise KeyError("oops")

    tools = TOOLS | {"buggy"}
    harness = CALC.model_copy(update={"tools": ("calculator", "buggy")})
    model = ScriptedModel([reply(calls=[call("buggy", "{}")]), reply("ANSWER: 0")])
    result = run(bench, harness, model, toolbox=Toolbox.default().register(Buggy()), tools=tools)
    assert result.status == "complete" and result.outcome.answer == "0"
    assert (result.spend.turns, result.spend.tool_calls, result.spend.tool_errors) == (2, 1, 1)
    assert model.requests[1].messages[-1].content.startswith("error: KeyError")
    _, events = sealed(result)
    assert events[2]["v"]["error"] == "tool-error" and events[2]["v"]["ok"] is False


# -- tool misuse --------------------------------------------------------------------


class Echo:
    name = "echo"
    description = "Echo the text."
    version = "1"
    parameters: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }

    def invoke(self, arguments: dict[str, Any]) -> str:
        return arguments["text"]


class Refusing:
    name = "refusing"
    description = "Always refuses."
    version = "1"
    parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012

    def invoke(self, arguments: dict[str, Any]) -> str:
        raise ToolError("the index is offline")


@pytest.mark.parametrize(
    ("bad", "error", "says"),
    [
        (call("echo", {"text": "hi"}), "unauthorized-tool", "'echo' is not authorized"),
        (call("ghost", {}), "unauthorized-tool", "'ghost' is not authorized"),
        (call("calculator", "{not json"), "bad-arguments", "not valid JSON"),
        (call("calculator", {"expr": "1"}), "bad-arguments", "missing required key"),
        (calc("1 / 0"), "tool-error", "error: "),
        (call("refusing", {}), "tool-error", "the index is offline"),
    ],
)
def test_tool_misuse_is_shown_to_the_model(bench: Bench, bad: Any, error: str, says: str) -> None:
    # echo is in the toolbox but neither requested nor authorized; ghost exists nowhere
    toolbox = Toolbox.default().register(Echo()).register(Refusing())
    tools = TOOLS | {"refusing"}
    harness = CALC.model_copy(update={"tools": ("calculator", "refusing")})
    model = ScriptedModel([reply(calls=[bad]), reply("ANSWER: 0")])
    result = run(bench, harness, model, toolbox=toolbox, tools=tools)
    assert result.status == "complete" and result.outcome.terminal == "answer"
    assert (result.spend.tool_calls, result.spend.tool_errors) == (1, 1)
    _, events = sealed(result)
    [tool_event] = [e["v"] for e in events if e["type"] == "tool_result"]
    assert tool_event["ok"] is False and tool_event["error"] == error
    assert tool_event["call_id"] == bad.id and tool_event["name"] == bad.name
    assert tool_event["content"].startswith("error: ") and says in tool_event["content"]
    # the model's next request carries the error as the tool's reply
    seen = model.requests[1].messages[-1]
    assert (seen.role, seen.tool_call_id, seen.content) == ("tool", bad.id, tool_event["content"])


def test_a_tool_authorized_but_not_requested_is_refused(bench: Bench) -> None:
    """Only the harness's own tools run: the host authorizing more grants the model none."""
    toolbox = Toolbox.default().register(Echo())
    tools = TOOLS | {"echo"}
    model = ScriptedModel([reply(calls=[call("echo", {"text": "x"})]), reply("ANSWER: 1")])
    result = run(bench, CALC, model, toolbox=toolbox, tools=tools)
    _, events = sealed(result)
    [tool_event] = [e["v"] for e in events if e["type"] == "tool_result"]
    assert tool_event["ok"] is False and tool_event["error"] == "unauthorized-tool"
    assert [schema.name for schema in model.requests[0].tools] == ["calculator"]


def test_misuse_accumulates_and_the_loop_goes_on(bench: Bench) -> None:
    model = ScriptedModel(
        [
            reply(calls=[call("ghost", {}, "a"), calc("2 + 2", "b")]),
            reply(calls=[call("calculator", "[1]", "c")]),
            reply("ANSWER: 4"),
        ]
    )
    result = run(bench, CALC, model)
    assert result.outcome.answer == "4"
    assert (result.spend.tool_calls, result.spend.tool_errors) == (3, 2)
    tool_messages = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content[:6]) for m in tool_messages] == [
        ("a", "error:"),
        ("b", "4"),
    ]


# -- spend ----------------------------------------------------------------------------


class SlowTool:
    name = "slow"
    description = "Sleeps 3 ms."
    version = "1"
    parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012

    def invoke(self, arguments: dict[str, Any]) -> str:
        time.sleep(0.003)
        return "done"


def test_spend_matches_the_hand_count(bench: Bench) -> None:
    tools = frozenset({"slow"})
    harness = CALC.model_copy(update={"tools": ("slow",)})
    model = ScriptedModel(
        [
            reply(calls=[call("slow", {}, "a")], usage=(10, 5)),
            reply(calls=[call("slow", {}, "b"), call("ghost", {}, "c")], usage=(20, 5)),
            reply("ANSWER: 3", usage=(30, 5)),
        ],
        delay_s=0.005,
    )
    toolbox = Toolbox.default().register(SlowTool())
    result = run(bench, harness, model, toolbox=toolbox, tools=tools)
    spend = result.spend
    assert (spend.turns, spend.model_calls, spend.retries) == (3, 3, 0)
    assert (spend.tool_calls, spend.tool_errors) == (3, 1)
    assert (spend.input_tokens, spend.output_tokens) == (60, 15)
    assert spend.peak_context_tokens == 35
    assert 15_000 <= spend.model_time_us < 2_000_000  # 3 calls of >= 5 ms
    assert 6_000 <= spend.tool_time_us < 1_000_000  # 2 runs of >= 3 ms; refusal costs 0
    _, events = sealed(result)
    replies = [e["v"] for e in events if e["type"] == "model_reply"]
    # The scripted replies report no usage details: unknown (null), never 0.
    assert [r["usage"] for r in replies] == [
        {"input": 10, "output": 5, "cached": None, "reasoning": None},
        {"input": 20, "output": 5, "cached": None, "reasoning": None},
        {"input": 30, "output": 5, "cached": None, "reasoning": None},
    ]
    assert (spend.cached_tokens, spend.reasoning_tokens, spend.model_errors) == (None, None, 0)
    assert sum(r["time_us"] for r in replies) == spend.model_time_us
    tool_times = [e["v"]["time_us"] for e in events if e["type"] == "tool_result"]
    assert sum(tool_times) == spend.tool_time_us and tool_times[2] == 0
    # End to end: every call ran inside the attempt, one at a time.
    assert spend.model_time_us + spend.tool_time_us <= spend.wall_time_us < 5_000_000


def test_spend_of_the_simulated_model(bench: Bench) -> None:
    result = run(bench, CALC, SimulatedModel(seed=3))
    spend = result.spend
    _, events = sealed(result)
    replies = [e["v"] for e in events if e["type"] == "model_reply"]
    assert spend.turns == len(replies) >= 1
    assert spend.input_tokens == sum(r["usage"]["input"] for r in replies)
    assert spend.output_tokens == sum(r["usage"]["output"] for r in replies)
    assert spend.tool_calls == spend.turns - 1  # one calculator call per step


# -- run-time checks ------------------------------------------------------------------


def test_run_time_refusals(bench: Bench) -> None:
    runner = HarnessRunner()
    spec = bench.spec(CALC)
    with pytest.raises(ExecutionError) as caught:
        runner.run(spec, model=ScriptedModel(), toolbox=Toolbox.default(), authorized_tools=())
    assert caught.value.reason == "unauthorized-tool"
    with pytest.raises(ExecutionError) as caught:
        runner.run(spec, model=ScriptedModel(), toolbox=Toolbox(), authorized_tools=TOOLS)
    assert caught.value.reason == "unknown-tool"
    pinned = bench.spec(CALC, model=ModelIdentity(provider="p", model="m", revision="r"))
    with pytest.raises(ExecutionError) as caught:
        runner.run(pinned, model=ScriptedModel(), toolbox=Toolbox.default(), authorized_tools=TOOLS)
    assert caught.value.reason == "model-mismatch"
    with pytest.raises(ExecutionError) as caught:
        HarnessRunner(durability="sometimes")
    assert caught.value.reason == "bad-durability"
    assert attempt_files(bench.store.root) == []  # nothing was claimed


def test_a_bound_spec_needs_an_output(bench: Bench) -> None:
    task = bench.suite.task(bench.assignment.task_ids[0])
    context = HarnessCompilationContext(
        task=task,
        seed=bench.seed,
        authorized_tools=TOOLS,
        trajectory=bench.spec(CALC).trajectory,
        task_binding=bench.spec(CALC).binding,
        suite=bench.suite,
    )
    spec = HarnessCompiler().compile(CALC, context)
    with pytest.raises(ExecutionError) as caught:
        HarnessRunner().run(
            spec, model=ScriptedModel(), toolbox=Toolbox.default(), authorized_tools=TOOLS
        )
    assert caught.value.reason == "output-required"


def test_a_pinned_model_runs(bench: Bench) -> None:
    spec = bench.spec(CALC, model=SCRIPTED)
    result = HarnessRunner().run(
        spec,
        model=ScriptedModel([reply("ANSWER: 1")]),
        toolbox=Toolbox.default(),
        authorized_tools=TOOLS,
    )
    assert result.outcome.answer == "1"
    record = json.loads(AttemptParts.of(result.path.read_bytes(), str(result.path)).record)
    assert record["model"] == SCRIPTED.model_dump(mode="json")
    assert record["attribution"]["spec_fingerprint"] == spec.fingerprint


def test_an_unbound_spec_runs_in_memory(bench: Bench) -> None:
    task = bench.suite.tasks[0]
    spec = HarnessCompiler().compile(
        CALC, HarnessCompilationContext(task=task, authorized_tools=TOOLS)
    )
    result = HarnessRunner().run(
        spec,
        model=ScriptedModel([reply("ANSWER: 8")]),
        toolbox=Toolbox.default(),
        authorized_tools=TOOLS,
    )
    assert result.outcome.answer == "8" and result.task_id is None
    assert result.path is None and result.seal_digest is None


def test_a_rerun_adds_an_attempt_and_overwrites_nothing(bench: Bench) -> None:
    first = run(bench, CALC, ScriptedModel([reply("ANSWER: 1")]))
    before = first.path.read_bytes()
    second = run(bench, CALC, ScriptedModel([reply("ANSWER: 2")]))
    assert (first.attempt, second.attempt) == (1, 2)
    assert first.path.read_bytes() == before
    assert second.path.name == "002.jsonl" and second.path.parent == first.path.parent


# -- many tasks ---------------------------------------------------------------------


class InFlight:
    """Answers after a delay that depends on the task; records peak concurrency."""

    identity = SCRIPTED

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.calls = 0

    async def complete(self, request: ModelRequest):
        self.now += 1
        self.calls += 1
        self.peak = max(self.peak, self.now)
        try:
            question = request.messages[1].content or ""
            await asyncio.sleep(0.002 + (len(question) % 7) * 0.002)
            return reply("ANSWER: 1")
        finally:
            self.now -= 1


@pytest.mark.parametrize("limit", [1, 3, 8])
def test_run_many_keeps_order_and_the_concurrency_limit(source, tmp_path: Path, limit: int) -> None:
    bench = Bench(source, tmp_path / "store", count=16)
    specs = bench.specs(CALC)
    model = InFlight()
    seen = []
    runs = asyncio.run(
        HarnessRunner(durability="none").run_many(
            specs,
            model=model,
            toolbox=Toolbox.default(),
            authorized_tools=TOOLS,
            concurrency=limit,
            progress=seen.append,
        )
    )
    assert [r.spec.fingerprint for r in runs] == [s.fingerprint for s in specs]
    assert [r.last.task_id for r in runs] == list(bench.assignment.task_ids)
    assert model.peak == limit and model.calls == 16
    assert sorted(a.task_id for a in seen) == sorted(bench.assignment.task_ids)
    assert all(r.last.status == "complete" and not r.skipped for r in runs)


def test_run_many_refuses_a_bad_limit(bench: Bench) -> None:
    with pytest.raises(ExecutionError) as caught:
        asyncio.run(
            HarnessRunner().run_many(
                [],
                model=ScriptedModel(),
                toolbox=Toolbox.default(),
                authorized_tools=TOOLS,
                concurrency=0,
            )
        )
    assert caught.value.reason == "bad-concurrency"


def test_run_many_resume_skips_completed_tasks(bench: Bench) -> None:
    specs = bench.specs(CALC)
    runner = HarnessRunner(durability="none")
    kwargs = {"toolbox": Toolbox.default(), "authorized_tools": TOOLS}
    asyncio.run(runner.run_many(specs, model=SimulatedModel(seed=1), **kwargs))
    again = asyncio.run(runner.run_many(specs, model=ScriptedModel(), resume=True, **kwargs))
    assert all(r.skipped and r.attempts == () for r in again)
    assert len(attempt_files(bench.store.root)) == len(specs)
    evidence = assemble_evidence(
        specs, bench.suite, bench.sampling, bench.assignment, bench.source, bench.store
    )
    assert [e.status for e in evidence.entries] == ["attested"] * len(specs)


def test_run_many_cancelled_seals_every_in_flight_attempt_partial(source, tmp_path: Path) -> None:
    bench = Bench(source, tmp_path / "store", count=6)
    specs = bench.specs(CALC)

    async def main() -> None:
        model = ScriptedModel(default=lambda request: asyncio.sleep(30))
        many = asyncio.create_task(
            HarnessRunner().run_many(
                specs,
                model=model,
                toolbox=Toolbox.default(),
                authorized_tools=TOOLS,
                concurrency=4,
            )
        )
        while len(model.requests) < 4:
            await asyncio.sleep(0.005)
        many.cancel()
        with pytest.raises(asyncio.CancelledError):
            await many

    asyncio.run(main())
    files = attempt_files(bench.store.root)
    assert len(files) == 4  # the two waiting tasks never claimed an attempt
    for path in files:
        seal, events = read_attempt(path)
        assert seal["status"] == "partial" and events[-2]["type"] == "interrupted"


def test_run_many_stops_with_the_error_of_a_failed_group_commit(
    source, tmp_path: Path, monkeypatch
) -> None:
    from xaytune.harness.evidence import commit as _commit

    def full_disk() -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_commit, "_sync", full_disk)
    bench = Bench(source, tmp_path / "store", count=12)
    seen = []
    with pytest.raises(OSError, match="No space left"):
        asyncio.run(
            HarnessRunner().run_many(
                bench.specs(CALC),
                model=SimulatedModel(seed=1),
                toolbox=Toolbox.default(),
                authorized_tools=TOOLS,
                concurrency=3,
                progress=seen.append,
            )
        )
    assert seen == []  # no attempt is reported before its seal is in place
    # nothing is sealed: every attempt written is open (recovered partial by a resume)
    for path in attempt_files(bench.store.root):
        assert AttemptParts.of(path.read_bytes(), str(path)).seal is None
