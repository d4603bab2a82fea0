"""Agent loops: the built-ins, user loops, and loops that try to cheat the host."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from _fixtures_run import Bench, ScriptedModel, calc, loop_forever, make_source, read_attempt, reply

from xaytune.core.errors import ExecutionError, PluginError
from xaytune.harness import Harness, HarnessRunner
from xaytune.harness.evidence import assemble_evidence
from xaytune.harness.loops import (
    DEFAULT_CHECK_PROMPT,
    DEFAULT_PLAN_PROMPT,
    LoopContext,
    LoopStop,
    resolve_loop,
)
from xaytune.harness.parts import resolve_harness
from xaytune.harness.toolbox import Toolbox
from xaytune.models import Message
from xaytune.plugins import loop as register_loop

TOOLS = frozenset({"calculator"})
CALC = Harness(
    name="calc",
    system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)

# -- user loops (registered by name; this module is their source) -------------------

SEEN: dict[str, Any] = {}


@register_loop(name="test-greedy", version="1")
async def greedy(ctx: LoopContext) -> str | None:
    """Ignores every stop and keeps asking the model: the host must not let it."""
    text = None
    for _ in range(1000):
        try:
            text = (await ctx.generate(list(ctx.messages))).text
        except LoopStop:
            continue
    return text or "ANSWER: 1"


@register_loop(name="test-tool-hog")
async def tool_hog(ctx: LoopContext) -> str | None:
    """Calls the calculator far past the tool-call budget, swallowing the stops."""
    for n in range(50):
        with contextlib.suppress(LoopStop):
            await ctx.call_tool("calculator", {"expression": f"{n} + 1"})
    return "ANSWER: 1"


@register_loop(name="test-leftover")
async def leftover(ctx: LoopContext) -> str | None:
    """Leaves a task behind that calls the model after the loop returned."""

    async def later() -> None:
        await asyncio.sleep(0.01)
        try:
            await ctx.generate(list(ctx.messages))
        except ExecutionError as error:
            SEEN["leftover"] = error.reason

    SEEN["task"] = asyncio.get_running_loop().create_task(later())
    return "ANSWER: 2"


@register_loop(name="test-tamper")
async def tamper(ctx: LoopContext) -> str | None:
    """Looks for the store and tries to write to the context."""
    SEEN["attributes"] = [
        name for name in ("session", "store", "model", "_host") if hasattr(ctx, name)
    ]
    try:
        ctx.spend = None  # type: ignore[misc]
    except AttributeError:
        SEEN["setattr"] = "refused"
    reply_ = await ctx.generate(list(ctx.messages), max_output_tokens=10_000)
    return reply_.text


@register_loop(name="test-number")
async def returns_number(ctx: LoopContext) -> Any:
    await ctx.generate(list(ctx.messages))
    return 42


@register_loop(name="test-repeat")
class Repeat:
    """A class loop with a parameter: asks ``times`` times, answers the last reply."""

    def __init__(self, times: int = 2) -> None:
        self.times = times

    async def __call__(self, ctx: LoopContext) -> str | None:
        text = None
        for _ in range(self.times):
            text = (await ctx.generate(list(ctx.messages), tools=())).text
        return text


def not_a_loop(ctx: LoopContext) -> str:
    return "sync"


# -- fixtures -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    return make_source(tmp_path_factory.mktemp("loops") / "suite", count=24)


@pytest.fixture
def bench(source, tmp_path: Path) -> Bench:
    return Bench(source, tmp_path / "store", count=4)


def run(bench: Bench, harness: Harness, model: Any, *, position: int = 0, toolbox=None):
    spec = bench.spec(harness, position, tools=TOOLS)
    return HarnessRunner().run(
        spec, model=model, toolbox=toolbox or Toolbox.default(), authorized_tools=TOOLS
    )


def with_loop(loop: Any, **update: Any) -> Harness:
    return Harness.model_validate({**CALC.model_dump(mode="json"), "loop": loop, **update})


def kinds(path: Path) -> list[str]:
    return [event["type"] for event in read_attempt(path)[1]]


# -- built-in loops -----------------------------------------------------------------


def test_plan_then_act_plans_without_tools_then_runs_the_tool_loop(bench: Bench) -> None:
    model = ScriptedModel(
        [reply("Plan:\n1. add"), reply(calls=[calc("2 + 3")]), reply("ANSWER: 5")]
    )
    result = run(bench, with_loop("plan-then-act"), model)
    assert result.outcome.terminal == "answer" and result.outcome.answer == "5"
    first, second = model.requests[0], model.requests[1]
    assert first.tools == () and first.messages[-1] == Message("user", DEFAULT_PLAN_PROMPT)
    assert [t.name for t in second.tools] == ["calculator"]
    assert second.messages[3].content == "Plan:\n1. add"
    assert kinds(result.path) == [
        "start", "model_reply", "note", "model_reply", "tool_result", "model_reply", "end",
    ]  # fmt: skip
    assert result.spend.turns == 3 and result.spend.tool_calls == 1


def test_self_check_takes_the_revised_answer(bench: Bench) -> None:
    model = ScriptedModel([reply("ANSWER: 4"), reply("Corrected.\nANSWER: 5")])
    result = run(bench, with_loop("self-check"), model)
    assert result.outcome.answer == "5" and result.spend.turns == 2
    check = model.requests[1].messages
    assert (
        check[-2] == Message("assistant", "ANSWER: 4") and check[-1].content == DEFAULT_CHECK_PROMPT
    )


def test_loop_params_are_harness_fields_and_enter_the_fingerprint(bench: Bench) -> None:
    custom = with_loop({"_target_": "self-check", "check_prompt": "Look again."})
    assert custom.fingerprint != with_loop("self-check").fingerprint
    model = ScriptedModel([reply("ANSWER: 4"), reply("ANSWER: 4")])
    run(bench, custom, model)
    assert model.requests[1].messages[-1].content == "Look again."


def test_class_loop_with_parameters(bench: Bench) -> None:
    model = ScriptedModel([reply("one"), reply("two"), reply("ANSWER: 3")])
    result = run(bench, with_loop({"_target_": "test-repeat", "times": 3}), model)
    assert result.outcome.answer == "3" and len(model.requests) == 3


# -- hostile loops ------------------------------------------------------------------


def test_a_loop_that_ignores_stops_cannot_exceed_max_turns(source, tmp_path: Path) -> None:
    bench = Bench(source, tmp_path / "one", count=1)
    model = ScriptedModel(default=reply("still going"))
    result = run(bench, with_loop("test-greedy", max_turns=3), model)
    assert len(model.requests) == 3  # the 997 other calls never reached the model
    assert result.status == "complete" and result.outcome.terminal == "budget-stop"
    assert result.outcome.answer is None  # the loop's returned "answer" is not taken
    evidence = assemble_evidence(
        [bench.spec(with_loop("test-greedy", max_turns=3), 0, tools=TOOLS)],
        bench.suite,
        bench.sampling,
        bench.assignment,
        bench.source,
        bench.store,
    )
    assert evidence.entries[0].attested.outcome.terminal == "budget-stop"


def test_a_loop_cannot_exceed_the_token_budget(bench: Bench) -> None:
    model = ScriptedModel(default=reply("more", usage=(30, 10)))
    result = run(bench, with_loop("test-greedy", token_budget=100), model)
    assert len(model.requests) == 3  # 40, 80, 120 > 100: stopped after the third
    assert result.outcome.terminal == "budget-stop" and "token budget 100" in result.outcome.detail


def test_a_loop_cannot_exceed_the_tool_call_budget(bench: Bench) -> None:
    result = run(bench, with_loop("test-tool-hog", tool_call_budget=4), ScriptedModel())
    assert result.spend.tool_calls == 4 and result.outcome.terminal == "budget-stop"
    assert kinds(result.path).count("tool_result") == 4


def test_a_call_after_the_loop_returned_reaches_nothing(bench: Bench) -> None:
    model = ScriptedModel(default=reply("late"))

    async def go():
        spec = bench.spec(with_loop("test-leftover"), 0, tools=TOOLS)
        result = (
            await HarnessRunner().run_task(
                spec, model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
            )
        ).last
        await SEEN.pop("task")
        return result

    result = asyncio.run(go())
    assert SEEN.pop("leftover") == "loop-closed" and model.requests == []
    assert result.outcome.answer == "2"
    assert kinds(result.path) == ["start", "end"]


def test_the_context_exposes_no_store_and_refuses_writes(bench: Bench) -> None:
    model = ScriptedModel([reply("ANSWER: 9")])
    result = run(bench, with_loop("test-tamper", max_output_tokens=64), model)
    assert SEEN.pop("attributes") == [] and SEEN.pop("setattr") == "refused"
    assert model.requests[0].max_output_tokens == 64  # a loop may lower it, never raise it
    assert result.outcome.answer == "9"


def test_a_loop_offering_a_tool_it_was_not_granted_crashes_the_attempt(bench: Bench) -> None:
    from xaytune.models import ToolSchema

    @register_loop(name="test-offers-extra")
    async def offers_extra(ctx: LoopContext) -> str | None:
        extra = ToolSchema("shell", "run anything", {"type": "object"})
        return (await ctx.generate(list(ctx.messages), tools=[extra])).text

    model = ScriptedModel([reply("ANSWER: 1")])
    result = run(bench, with_loop("test-offers-extra"), model)
    assert result.status == "partial" and "unauthorized-tool" in result.error
    assert model.requests == []


def test_a_loop_returning_a_non_string_is_a_crash(bench: Bench) -> None:
    result = run(bench, with_loop("test-number"), ScriptedModel([reply("x")]))
    assert result.status == "partial" and "bad-loop-result" in result.error


def test_the_default_loop_is_the_plain_tool_loop(bench: Bench) -> None:
    result = run(
        bench, CALC.model_copy(update={"max_turns": 2}), ScriptedModel(default=loop_forever())
    )
    assert result.outcome.terminal == "budget-stop" and "max turns 2" in result.outcome.detail


# -- resolution and identity --------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "reason"),
    [
        ("no-such-loop", "unknown-part"),
        ("xaytune.harness.no_such_module.loop", "unknown-part"),
        ({"_target_": "self-check", "bogus": 1}, "bad-part-params"),
        ({"_target_": "self-check", "check_prompt": 3}, "bad-part-params"),
        ({"_target_": "test-repeat", "times": "two"}, "bad-part-params"),
        ("test_loops.not_a_loop", "bad-part"),
    ],
)
def test_resolve_loop_refuses(declared: Any, reason: str) -> None:
    with pytest.raises(PluginError) as caught:
        resolve_loop(declared, where="candidates.b.loop")
    assert caught.value.reason == reason
    assert "candidates.b.loop" in str(caught.value) and "\n" not in str(caught.value)


def test_a_loop_by_dotted_path_resolves_with_its_identity() -> None:
    resolved = resolve_loop("test_loops.greedy")
    assert resolved.name == "test-greedy"  # the name it registered
    assert resolved.identity.target == "test_loops.greedy" and resolved.identity.version == "1"
    assert resolved.identity.source_sha256.startswith("sha256:")


def test_resolved_harness_pins_each_part_in_its_fingerprint() -> None:
    plain = resolve_harness(CALC).harness
    checked = resolve_harness(with_loop("self-check")).harness
    assert [(p.kind, p.name) for p in plain.parts] == [
        ("tool", "calculator"),
        ("loop", "tool-loop"),
    ]
    assert plain.fingerprint != CALC.fingerprint != checked.fingerprint != plain.fingerprint


def test_a_run_refuses_a_loop_whose_code_is_not_the_pinned_one(bench: Bench) -> None:
    pinned = resolve_harness(CALC).harness
    forged = [
        p.model_copy(update={"source_sha256": "sha256:" + "0" * 64}) if p.kind == "loop" else p
        for p in pinned.parts
    ]
    harness = Harness.model_validate(
        {**pinned.model_dump(mode="json"), "parts": [p.model_dump() for p in forged]}
    )
    model = ScriptedModel([reply("ANSWER: 1")])
    with pytest.raises(ExecutionError) as caught:
        run(bench, harness, model)
    assert caught.value.reason == "code-mismatch" and "tool-loop" in str(caught.value)
    assert model.requests == []


def test_a_hanging_tool_is_stopped_by_the_harness_timeout_and_counted(bench: Bench) -> None:
    import time as clock

    from _fixtures_run import call

    from xaytune.harness.toolbox import FunctionTool

    def hang(seconds: float) -> str:
        """Sleeps (a tool that hangs)."""
        clock.sleep(seconds)
        return "woke"

    toolbox = Toolbox.default().register(FunctionTool(hang))
    tools = TOOLS | {"hang"}
    harness = Harness.model_validate(
        {**CALC.model_dump(mode="json"), "tools": ["calculator", "hang"], "tool_timeout_s": 0.05}
    )
    model = ScriptedModel([reply(calls=[call("hang", {"seconds": 2})]), reply("ANSWER: 1")])
    spec = bench.spec(harness, 0, tools=tools)
    started = clock.monotonic()
    result = HarnessRunner().run(spec, model=model, toolbox=toolbox, authorized_tools=tools)
    assert clock.monotonic() - started < 1.5  # the run did not wait for the tool
    assert result.outcome.answer == "1"
    assert (result.spend.tool_calls, result.spend.tool_errors) == (1, 1)
    assert "timed out after 0.05 s" in model.requests[1].messages[-1].content
    events = read_attempt(result.path)[1]
    assert events[2]["v"]["error"] == "tool-timeout"


# -- found in review: concurrency, leftovers, swallowed interruptions, spinning ------


@register_loop(name="test-gather")
async def gather_many(ctx: LoopContext) -> str | None:
    """Ten model calls at once (a self-consistency loop): one at a time to the host."""
    replies = await asyncio.gather(
        *(ctx.generate(list(ctx.messages), tools=()) for _ in range(10)), return_exceptions=True
    )
    texts = [r.text for r in replies if not isinstance(r, BaseException)]
    return texts[-1] if texts else None


def test_calls_gathered_at_once_cannot_pass_the_budgets_together(bench: Bench) -> None:
    model = ScriptedModel(default=reply("ANSWER: 1"), delay_s=0.01)
    result = run(bench, with_loop("test-gather", max_turns=3), model)
    assert len(model.requests) == 3 and result.outcome.terminal == "budget-stop"
    assert len({request.sampling_key for request in model.requests}) == 3
    turns = [e["v"]["turn"] for e in read_attempt(result.path)[1] if e["type"] == "model_reply"]
    assert turns == [0, 1, 2]


@register_loop(name="test-in-flight")
async def in_flight(ctx: LoopContext) -> str | None:
    """Returns while one of its model calls is still in flight."""
    SEEN["in-flight"] = asyncio.ensure_future(ctx.generate(list(ctx.messages), tools=()))
    await asyncio.sleep(0)
    return "ANSWER: 1"


def test_a_call_in_flight_when_the_loop_returns_is_recorded_before_the_seal(
    source, tmp_path: Path
) -> None:
    bench = Bench(source, tmp_path / "two", count=2)
    harness = with_loop("test-in-flight")
    specs = [bench.spec(harness, i, tools=TOOLS) for i in range(2)]
    model = ScriptedModel(default=reply("late", usage=(100, 900)), delay_s=0.05)

    async def go():
        runs = await HarnessRunner().run_many(
            specs, model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS, concurrency=1
        )
        await SEEN.pop("in-flight")
        return runs

    runs = asyncio.run(go())
    for task in runs:
        seal, events = read_attempt(task.last.path)
        # The call that was in flight is in the evidence it spent, never in another file.
        assert [e["type"] for e in events] == ["start", "model_reply", "end"]
        assert seal["spend"]["input_tokens"] == 100 and seal["spend"] == task.last.spend.as_dict()
    evidence = assemble_evidence(
        specs, bench.suite, bench.sampling, bench.assignment, bench.source, bench.store
    )
    assert all(entry.attested is not None for entry in evidence.entries)


@register_loop(name="test-swallow-cancel")
async def swallow_cancel(ctx: LoopContext) -> str | None:
    with contextlib.suppress(asyncio.CancelledError):
        await ctx.generate(list(ctx.messages))
    return "ANSWER: 7"


def test_a_loop_that_swallows_an_interruption_is_still_interrupted(bench: Bench) -> None:
    model = ScriptedModel(default=reply("ANSWER: 1"), delay_s=5)
    spec = bench.spec(with_loop("test-swallow-cancel"), 0, tools=TOOLS)

    async def go():
        task = asyncio.ensure_future(
            HarnessRunner().run_task(
                spec, model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
            )
        )
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    (path,) = Path(bench.store.task_output(0)).glob("*.jsonl")
    seal, events = read_attempt(path)
    assert seal["status"] == "partial" and events[-2]["type"] == "interrupted"


@register_loop(name="test-spin")
async def spin(ctx: LoopContext) -> str | None:
    """Swallows every stop and never awaits anything else: would spin forever."""
    while True:
        try:
            await ctx.generate(list(ctx.messages))
        except LoopStop:
            continue


def test_a_loop_that_keeps_calling_after_its_stop_is_abandoned(bench: Bench) -> None:
    model = ScriptedModel(default=reply("x"))
    result = run(bench, with_loop("test-spin", max_turns=1), model)
    assert len(model.requests) == 1
    assert result.outcome.terminal == "budget-stop" and "max turns 1" in result.outcome.detail


@register_loop(name="test-stateful")
class Stateful:
    """Counts its own calls: a fresh instance per attempt always starts at zero."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, ctx: LoopContext) -> str | None:
        self.calls += 1
        return f"ANSWER: {self.calls}"


def test_a_class_loop_gets_a_fresh_instance_for_every_attempt(bench: Bench) -> None:
    answers = [
        run(bench, with_loop("test-stateful"), ScriptedModel(), position=i).outcome.answer
        for i in range(3)
    ]
    assert answers == ["1", "1", "1"]
