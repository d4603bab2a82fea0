"""The watchdog: the attempt deadline and a stop reach code that never awaits.

Code that holds the event loop (a CPU spin, ``time.sleep``, a spin inside ``except
Exception``, a spin in a task of the loop's own, a model adapter blocking in
``complete``) is stopped at its deadline and sealed partial with ``attempt-timeout``
exactly as an attempt that awaits past it (tests/harness/test_deadline.py), and the
run goes on; a loop spinning on event writes still seals a trajectory that verifies. A
SIGINT or :func:`request_stop` gets it KeyboardInterrupt, even after it swallowed its
deadline. Every handler the watchdog installs is restored after the run. The frame
rule (where raising is safe) is checked on real frames of named modules.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fixtures_run import SCRIPTED, SEED, Bench, make_source, read_attempt

from xaytune.harness import AttemptDeadline, Harness, HarnessRunner, request_stop
from xaytune.harness._interruptible import interruptible
from xaytune.harness._watchdog import watched, watching
from xaytune.harness.loops import LoopContext, tool_loop
from xaytune.harness.runner import ATTEMPT_TIMEOUT
from xaytune.harness.toolbox import Toolbox
from xaytune.models import ModelReply, ModelRequest, SimulatedModel
from xaytune.plugins import loop as register_loop

pytestmark = [
    pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals"),
    # pytest-timeout's default (signal) method installs its own SIGALRM handler, which
    # rightly keeps the watchdog off: these tests need the default handler.
    pytest.mark.timeout(120, method="thread"),
    pytest.mark.usefixtures("machine_to_itself"),
]

TOOLS = frozenset({"calculator"})
CALC = Harness(
    name="calc",
    system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)

# Set by the holding loop once it holds the event loop; what it saw of SIGALRM then.
HOLDING = threading.Event()
SWALLOWED = threading.Event()  # the loop caught its AttemptDeadline (and held on)
SEEN: dict[str, Any] = {}


@register_loop(name="test-hold")
async def hold(ctx: LoopContext, *, on: str, how: str = "spin") -> str | None:
    """Holds the event loop for ever on the task whose question contains ``on`` (the
    tool loop on every other task)."""
    question = next(m.content or "" for m in ctx.messages if m.role == "user")
    if on not in question:
        return await tool_loop(ctx)
    SEEN["alarm"] = signal.getsignal(signal.SIGALRM)
    HOLDING.set()
    if how == "spin":
        while True:
            pass
    if how == "sleep":
        time.sleep(3600)
    if how == "swallow":  # a loop whose `except Exception` wraps the spin
        while True:
            try:
                while True:
                    pass
            except Exception:
                continue
    if how == "swallow-deadline":  # catches the deadline itself: only a stop is left
        while True:
            try:
                while True:
                    pass
            except AttemptDeadline:
                SWALLOWED.set()
    if how == "child":  # the spin runs in a task of the loop's own
        await asyncio.gather(_spin())
    if how == "note":  # spins writing events: the watchdog must never tear one
        while True:
            ctx.note("holding")
            sum(range(2000))
    raise AssertionError(how)


async def _spin() -> None:
    while True:
        pass


class BlockingModel:
    """A model adapter whose call blocks the event loop (a synchronous HTTP client)."""

    identity = SCRIPTED

    async def complete(self, request: ModelRequest) -> ModelReply:
        time.sleep(3600)
        raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    made = make_source(tmp_path_factory.mktemp("watchdog") / "suite", count=4)
    # One untimed run first: what a first attempt imports lazily (compiled from source in
    # a fresh clone, while other test workers load the machine) must not count against
    # the 1 s deadlines below, where the tasks that are not held must finish in time.
    warm = Bench(made, tmp_path_factory.mktemp("warm") / "store", count=3)
    assert [run.last.status for run in run_all(warm, CALC)] == ["complete"] * 3
    return made


@pytest.fixture
def bench(source, tmp_path: Path) -> Bench:
    # The watchdog arms only over Python's default SIGALRM and SIGINT handlers. A test run
    # earlier in the same xdist worker may have left others (an in-process CLI run that
    # installed its own): start each test from the defaults, as a fresh process does.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    HOLDING.clear()
    SWALLOWED.clear()
    SEEN.clear()
    return Bench(source, tmp_path / "store", count=3)


def question(bench: Bench, position: int) -> str:
    return str(bench.suite.task(bench.assignment.task_ids[position]).input["question"])


def holding(bench: Bench, how: str, **update: Any) -> Harness:
    loop = {"_target_": "test-hold", "on": question(bench, 0), "how": how}
    return Harness.model_validate({**CALC.model_dump(mode="json"), "loop": loop, **update})


def run_all(bench: Bench, harness: Harness):
    return asyncio.run(
        HarnessRunner().run_many(
            bench.specs(harness),
            model=SimulatedModel(seed=SEED),
            toolbox=Toolbox.default(),
            authorized_tools=TOOLS,
            concurrency=1,  # the other tasks start after the held one: their own deadlines
        )
    )


def handlers() -> tuple[object, object]:
    return signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT)


@pytest.mark.parametrize(
    ("how", "attempts"), [("spin", 2), ("sleep", 1), ("swallow", 1), ("child", 1)]
)
def test_a_loop_holding_the_event_loop_is_sealed_partial_at_its_deadline(
    bench: Bench, how: str, attempts: int
) -> None:
    before = handlers()
    assert before == (signal.SIG_DFL, signal.default_int_handler)
    harness = holding(bench, how, attempt_timeout_s=1, attempts_per_task=attempts)
    held, *others = run_all(bench, harness)
    # Retried like a crash: every attempt of the held task ends at its deadline.
    assert len(held.attempts) == attempts
    for attempt in held.attempts:
        assert (attempt.status, attempt.outcome) == ("partial", None)
        assert attempt.error.startswith(f"{ATTEMPT_TIMEOUT}:")
        seal, events = read_attempt(attempt.path)
        assert seal["status"] == "partial"
        assert events[-2] == {**events[-2], "type": "timed-out"}
        assert events[-2]["v"] == {"reason": ATTEMPT_TIMEOUT, "deadline_s": 1.0}
    # The run went on: the other tasks ran to an answer.
    assert [run.last.status for run in others] == ["complete", "complete"]
    assert [run.last.outcome.terminal for run in others] == ["answer", "answer"]
    # The watchdog was on while the loop held, and its handlers are gone after the run.
    assert SEEN["alarm"] not in (signal.SIG_DFL, signal.SIG_IGN, None)
    assert handlers() == before


def test_a_loop_spinning_on_event_writes_is_stopped_and_its_trajectory_verifies(
    bench: Bench,
) -> None:
    harness = holding(bench, "note", attempt_timeout_s=1)
    held, *_ = run_all(bench, harness)
    [attempt] = held.attempts
    assert attempt.error.startswith(f"{ATTEMPT_TIMEOUT}:")
    seal, events = read_attempt(attempt.path)  # verifies the chain against the seal
    assert seal["status"] == "partial"
    notes = [event for event in events if event["type"] == "note"]
    assert notes, "the loop wrote no event before its deadline"
    assert events[-2]["type"] == "timed-out" and events[-1]["type"] == "end"


def test_a_model_adapter_blocking_the_event_loop_is_stopped_at_the_deadline(
    bench: Bench,
) -> None:
    spec = bench.spec(CALC.model_copy(update={"attempt_timeout_s": 1.0}))
    result = HarnessRunner().run(
        spec, model=BlockingModel(), toolbox=Toolbox.default(), authorized_tools=TOOLS
    )
    assert (result.status, result.outcome) == ("partial", None)
    assert result.error.startswith(f"{ATTEMPT_TIMEOUT}:")
    assert result.spend.turns == 0  # the call never returned
    seal, events = read_attempt(result.path)
    assert seal["status"] == "partial"
    assert [event["type"] for event in events] == ["start", "timed-out", "end"]


def _stop_once_holding(stop: Callable[[], None]) -> threading.Thread:
    def wait_then_stop() -> None:
        if HOLDING.wait(60):
            stop()

    thread = threading.Thread(target=wait_then_stop, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    "stop",
    [
        pytest.param(
            lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT),
            id="sigint",
        ),
        pytest.param(request_stop, id="request_stop"),
    ],
)
def test_a_stop_interrupts_a_loop_holding_the_event_loop(
    bench: Bench, stop: Callable[[], None]
) -> None:
    before = handlers()
    assert before == (signal.SIG_DFL, signal.default_int_handler)
    harness = holding(bench, "spin")  # the default deadline (600 s) is far off
    stopper = _stop_once_holding(stop)
    with pytest.raises(KeyboardInterrupt):
        run_all(bench, harness)
    stopper.join()
    [path] = bench.store.task_output(0).glob("*.jsonl")
    seal, events = read_attempt(path)
    assert seal["status"] == "partial"
    assert events[-2] == {**events[-2], "type": "interrupted"}
    assert events[-2]["v"] == {"by": "KeyboardInterrupt"}
    assert not list(bench.store.task_output(1).glob("*.jsonl"))  # nothing else started
    assert handlers() == before


def test_a_loop_that_swallows_its_deadline_gets_it_once_and_is_still_stopped(
    bench: Bench,
) -> None:
    harness = holding(bench, "swallow-deadline", attempt_timeout_s=1)
    stopper = threading.Thread(target=lambda: SWALLOWED.wait(60) and request_stop())
    stopper.start()
    with pytest.raises(KeyboardInterrupt):
        run_all(bench, harness)
    stopper.join()
    [path] = bench.store.task_output(0).glob("*.jsonl")
    seal, events = read_attempt(path)
    assert seal["status"] == "partial"
    assert events[-2]["v"] == {"by": "KeyboardInterrupt"}
    assert handlers() == (signal.SIG_DFL, signal.default_int_handler)


def test_the_watchdog_stays_off_under_a_programs_own_sigalrm_handler() -> None:
    def own(signum: int, frame: object) -> None:
        raise AssertionError("never sent")

    async def probe() -> tuple[bool, object]:
        with watching() as on:
            return on, signal.getsignal(signal.SIGALRM)

    previous = signal.signal(signal.SIGALRM, own)
    try:
        assert asyncio.run(probe()) == (False, own)
        assert signal.getsignal(signal.SIGALRM) is own
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_nested_blocks_share_one_watchdog_and_the_last_restores_the_handlers() -> None:
    seen: list[tuple[bool, object, object]] = []

    async def probe() -> tuple[object, object]:
        asyncio_sigint = signal.getsignal(signal.SIGINT)  # the asyncio Runner's
        with watching() as outer:
            seen.append((outer, *handlers()))
            with watching() as inner:
                seen.append((inner, *handlers()))
            seen.append((outer, *handlers()))
        return asyncio_sigint, signal.getsignal(signal.SIGINT)

    asyncio_sigint, after = asyncio.run(probe())
    assert after is asyncio_sigint  # restored inside the run: the Runner then resets it
    assert handlers() == (signal.SIG_DFL, signal.default_int_handler)
    assert len({(alarm, sigint) for _, alarm, sigint in seen}) == 1  # one watchdog
    [(on, alarm, sigint)] = set(seen)
    assert on is True
    assert alarm is not signal.SIG_DFL and sigint is not asyncio_sigint  # both chained


# -- where raising is safe ------------------------------------------------------------


def _in_module(module: str, name: str, inner: Callable[[], bool]) -> Callable[[], bool]:
    """A function ``name`` of module ``module`` that returns ``inner()``."""
    namespace: dict[str, Any] = {"__name__": module, "inner": inner}
    exec(f"def {name}():\n    return inner()\n", namespace)
    return namespace[name]


def _here() -> bool:
    return interruptible(sys._getframe(1))  # the frame that called us: "interrupted"


def _caller_of_caller() -> bool:
    return interruptible(sys._getframe(2))


CASES = {
    # user code run by a task: safe
    "user-code": (lambda: _in_module("userparts", "spin", _here)(), True),
    # an evidence writer on the stack, however deep: never
    "evidence-writer": (
        lambda: _in_module(
            "xaytune.harness.evidence.attempt", "event", _in_module("json", "dumps", _here)
        )(),
        False,
    ),
    "canonical-bytes": (
        lambda: _in_module("xaytune.core.canonical", "canonical_bytes", _here)(),
        False,
    ),
    # the host's bookkeeping (spend, events) between the loop and the evidence: never
    "host-bookkeeping": (
        lambda: _in_module("xaytune.harness._loop_context", "_generate", _here)(),
        False,
    ),
    # ... except while it awaits the model adapter's complete (a blocking user adapter)
    "host-awaiting-the-model": (
        lambda: _in_module(
            "xaytune.harness._loop_context",
            "_call_model",
            _in_module("userparts", "complete", _in_module("requests", "post", _here)),
        )(),
        True,
    ),
    # a tool run by the toolbox under the host: safe
    "tool-under-the-host": (
        lambda: _in_module(
            "xaytune.harness._loop_context",
            "_call_tool",
            _in_module("xaytune.harness.toolbox", "acall", _in_module("userparts", "sl", _here)),
        )(),
        True,
    ),
    # the event loop's own code running: never
    "event-loop-code": (
        lambda: _in_module(
            "asyncio.tasks", "step", _in_module("userparts", "f", _caller_of_caller)
        )(),
        False,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_raising_is_safe_only_inside_the_attempts_own_code(case: str) -> None:
    call, expected = CASES[case]

    async def in_a_task() -> bool:
        return call()

    assert asyncio.run(in_a_task()) is expected


def test_the_watched_wrapper_does_not_shield_what_it_runs() -> None:
    @watched
    async def runner_like() -> bool:
        return _in_module("userparts", "spin", _here)()

    assert asyncio.run(runner_like()) is True
