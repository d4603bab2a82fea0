"""One attempt: open it in the store, run the loop inside its deadline, seal it.

:func:`run_attempt` is the runner's one step (the outcomes are listed in
``xaytune.harness.runner``): it opens the attempt (:class:`AttemptSession`), builds its
:class:`AttemptFrame`, runs the loop over every user turn inside the attempt's deadline
window, and seals it ``complete`` (an outcome) or ``partial`` (none: a crash, the
deadline, an interruption, an unreachable model), keeping the spend either way. An
interrupted attempt is sealed at once and the interruption raised again; any other
attempt returns its :class:`AttemptResult`.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from xaytune.core.errors import ExecutionError
from xaytune.harness import environment
from xaytune.harness._answer import extract_answer
from xaytune.harness._loop_context import LoopAbandoned, LoopStop, _Host
from xaytune.harness._turns import run_turns
from xaytune.harness._watchdog import AttemptDeadline, AttemptWindow
from xaytune.harness.attempt_frame import AttemptFrame
from xaytune.harness.evidence.attempt import AttemptSession
from xaytune.harness.evidence.store import Outcome, Spend
from xaytune.harness.loops import ResolvedLoop
from xaytune.harness.run_results import AttemptResult
from xaytune.harness.run_session import RunSession, SealsPending
from xaytune.harness.spec import AgentExecutionSpec

__all__ = ["ATTEMPT_TIMEOUT", "crash_part", "run_attempt"]

# The reason word of an attempt stopped at its deadline (Harness.attempt_timeout_s).
ATTEMPT_TIMEOUT = "attempt-timeout"


def crash_part(crash: BaseException) -> str:
    """The part an attempt's crash came from, recorded with it: ``environment`` when
    the exception passed through the environment's code (opening it, its state), else
    ``loop`` (the loop's own code, or what it asked of its context). A tool cannot
    crash an attempt: its exceptions are tool errors the model sees."""
    trace = crash.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == environment.__file__:
            return "environment"
        trace = trace.tb_next
    return "loop"


async def run_attempt(
    spec: AgentExecutionSpec,
    run: RunSession,
    *,
    granted: frozenset[str],
    loop: ResolvedLoop,
    later: SealsPending | None = None,
) -> AttemptResult:
    """Run one attempt of ``spec`` to its seal (see the module docstring).

    ``granted`` are the tools the model may call; ``loop`` the harness's resolved
    loop. Under a group commit (``run.committer``) the seal is committed in a batch:
    given ``later``, its commit is left there for the caller to await.
    """
    committer = run.committer
    # Under a group commit the batch's syncs make each attempt durable; alone, each
    # attempt fsyncs its own files.
    session = AttemptSession(
        spec,
        durable=run.durable and committer is None,
        journal=run.journal_of(spec),
        intent=run.intent,
    )
    session.open(*run.identity)
    deadline = spec.harness.attempt_timeout_s
    frame = AttemptFrame(
        spec=spec,
        session=session,
        spend=Spend(),
        model=run.model,
        toolbox=run.toolbox,
        granted=granted,
        cancel=run.cancel,
        window=AttemptWindow(deadline),
    )
    spend = frame.spend
    outcome: Outcome | None = None
    final_text: str | None = None
    error: str | None = None
    interrupted: BaseException | None = None
    started = time.perf_counter()  # end-to-end wall time, on a monotonic clock
    try:
        # The deadline covers the whole attempt: a loop, model call or tool call that
        # awaits past it is cancelled there; code that holds the event loop gets
        # AttemptDeadline from the watchdog, inside the window only (see the runner's
        # docstring): nothing is raised for this attempt once the window has closed.
        with frame.window:
            async with asyncio.timeout(deadline):
                outcome, final_text = await _run_loop(frame, loop)
    except (TimeoutError, AttemptDeadline):  # the attempt's own deadline
        outcome, final_text = None, None
        error = f"{ATTEMPT_TIMEOUT}: task {spec.task_id} ran past {deadline:g} s"
        session.event("timed-out", {"reason": ATTEMPT_TIMEOUT, "deadline_s": deadline})
    except (asyncio.CancelledError, KeyboardInterrupt) as stop:
        interrupted = stop
        session.event("interrupted", {"by": type(stop).__name__})
    except Exception as crash:  # a crash: no outcome, the spend so far is kept
        error = f"{type(crash).__name__}: {crash}"
        session.event("crashed", {"error": error, "part": crash_part(crash)})
    spend.wall_time_us = int((time.perf_counter() - started) * 1e6)
    try:
        if interrupted is not None or committer is None:
            # An interrupted attempt seals partial at once, without awaiting anything
            # (durably on its own: no group commit will sync it).
            session.durable = run.durable
            seal_digest = session.seal(outcome=outcome, spend=spend)
        else:
            pending = session.prepare_seal(outcome=outcome, spend=spend)
            seal_digest = None
            if pending is not None:
                await run.commit(pending, later=later)
                seal_digest = pending.digest
    finally:
        session.close()
    result = AttemptResult(
        spec_fingerprint=spec.fingerprint,
        task_id=spec.task_id,
        attempt=session.number,
        status="complete" if outcome is not None else "partial",
        outcome=outcome,
        final_text=final_text,
        spend=spend,
        path=None if session.path is None else Path(session.path),
        seal_digest=seal_digest,
        error=error,
    )
    if interrupted is not None:
        raise interrupted
    return result


async def _run_loop(frame: AttemptFrame, loop: ResolvedLoop) -> tuple[Outcome, str | None]:
    """The loop over every user turn; its outcome (a stop, or the extracted answer)."""
    spec = frame.spec
    frame.session.event(
        "start",
        {
            "spec": spec.fingerprint,
            "harness": spec.harness_fingerprint,
            "task_id": spec.task_id,
            "system": spec.system_message,
            "user": spec.user_message,
            "tools": list(spec.tools),
        },
    )
    host = _Host(frame)
    text: object = None
    try:
        try:
            text = await run_turns(loop.run, host)  # once per user turn of the task
        except (LoopStop, LoopAbandoned):
            pass
        except Exception:
            if host.stop is None:  # a loop that fails after a stop keeps the stop
                raise
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError  # the loop swallowed an interruption
        # A call the loop left in flight finishes (and is recorded) before the seal;
        # any call after this one is refused.
        async with host.lock:
            host.closed = True
    finally:
        host.closed = True
    if host.unavailable is not None:  # swallowed by the loop: still no outcome
        raise host.unavailable
    if host.stop is not None:
        return host.stop, host.final_text
    if text is not None and not isinstance(text, str):
        raise ExecutionError(
            "bad-loop-result",
            f"task {spec.task_id}: loop {loop.name} returned {type(text).__name__}, "
            "not text or None",
        )
    answer = extract_answer(spec.harness.answer, text)
    if host.environment is not None:  # an environment task's answer: what the agent did
        answer = host.environment.answer(answer)
    return Outcome(terminal="answer", answer=answer), text
