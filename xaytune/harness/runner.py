"""The runner: one attempt runs the harness's agent loop until an outcome.

The loop (``xaytune.harness.loops``; ``tool-loop`` by default) decides what to ask;
every model and tool call it makes goes through its :class:`LoopContext`, which
records the trajectory and enforces the budgets, so the evidence is the runner's.
A task with later user turns runs the loop once per turn (``xaytune.harness._turns``);
a task with an environment gets a fresh one per attempt, and its answer is the record
of the calls made to it (``xaytune.harness.environment``).

Terminal outcomes (sealed ``complete``): ``answer`` (the loop returned its final
text), ``budget-stop`` (turns, tokens, dollars or tool calls), ``context-overflow``,
``model-error``, ``cancelled`` (the host's cancel token). The spend records the
attempt's end-to-end wall time (monotonic clock, from the loop's start to its end,
before sealing). No outcome (sealed
``partial``, spend kept): an interruption (``asyncio.CancelledError``,
KeyboardInterrupt, SIGTERM via the app), a model unreachable through every retry
(``model-unavailable``: a resume runs the task again), or a crash (the loop raised
before any stop, or returned something that is not text: ``bad-loop-result``; its
``crashed`` event records the exception and the part it came from, ``loop`` or
``environment``).
Before any attempt, the loop and tools must be the code the harness pins in its
``parts`` (``code-mismatch``).
An attempt that awaits past ``Harness.attempt_timeout_s`` is cancelled where it
awaits and sealed ``partial`` (spend kept) with a ``timed-out`` event carrying the
reason word ``attempt-timeout``; like a crash, it is retried up to
``attempts_per_task`` (a deadline can be a slow server's, not the harness's fault,
and the retry is declared by the same budget). asyncio can only cancel at an
``await``: for a loop, tool or model adapter that holds the event loop (a CPU spin,
``time.sleep``, a blocking HTTP call), ``run``/``run_task``/``run_many`` keep a
watchdog (``xaytune.harness._watchdog``) while their loop runs in the main thread: once
past the deadline, with the event loop held for more than ``GRACE_S`` (1 s), the
attempt's code gets ``AttemptDeadline`` (sealed exactly as above), and on SIGINT (or
:func:`~xaytune.harness.request_stop`) KeyboardInterrupt (interrupted, as below),
raised inside it by a SIGALRM the watchdog sends; never inside the runner's own
writing. The watchdog stays off when SIGALRM has a handler of the program's own.
Residual limit: C code that never returns to the interpreter (a catastrophic regular
expression) cannot be interrupted.
A task whose attempts all end partial is retried up to ``attempts_per_task``;
an interruption is never retried.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import EvidenceError, ExecutionError
from xaytune.harness._answer import extract_answer
from xaytune.harness._loop_context import LoopAbandoned, LoopStop, ModelUnavailable, _Host
from xaytune.harness._turns import run_turns
from xaytune.harness._watchdog import AttemptDeadline, AttemptWindow, watched
from xaytune.harness.evidence.attempt import AttemptSession, recover_open_attempt
from xaytune.harness.evidence.attempt_file import attempt_name, split_attempt
from xaytune.harness.evidence.commit import GroupCommit
from xaytune.harness.evidence.journal import (
    SealJournal,
    check_journaled,
    journal_path,
    missing_seal,
)
from xaytune.harness.evidence.store import (
    AttemptRecord,
    AttemptSeal,
    Outcome,
    Spend,
    StoredAttempt,
    attempt_paths,
    remove_empty_claim,
)
from xaytune.harness.loops import ResolvedLoop, resolve_loop
from xaytune.harness.parts import check_parts
from xaytune.harness.spec import AgentExecutionSpec, Harness
from xaytune.harness.toolbox import Toolbox
from xaytune.models.protocol import DEFINITIVE_REASONS, Model

__all__ = ["ATTEMPT_TIMEOUT", "AttemptResult", "HarnessRunner", "TaskRun", "refusal_of"]

# The reason word of an attempt stopped at its deadline (Harness.attempt_timeout_s).
ATTEMPT_TIMEOUT = "attempt-timeout"


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """One attempt's result. ``outcome`` is None for a partial attempt."""

    spec_fingerprint: str
    task_id: str | None
    attempt: int
    status: str
    outcome: Outcome | None
    final_text: str | None
    spend: Spend
    path: Path | None
    seal_digest: str | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TaskRun:
    """What running one spec did: its attempts in order (empty when skipped)."""

    spec: AgentExecutionSpec
    attempts: tuple[AttemptResult, ...]
    skipped: bool = False
    # Never started: an earlier task's endpoint refused definitively (model-auth, ...),
    # which every further call would repeat. No attempt exists, so a resume runs it.
    not_started: bool = False

    @property
    def last(self) -> AttemptResult | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def refused(self) -> bool:
        """Whether its last attempt ended on a definitive refusal of the endpoint."""
        return self.last is not None and refusal_of(self.last) is not None


def refusal_of(result: AttemptResult) -> str | None:
    """The reason word of a definitive endpoint refusal (``model-auth``, ...) that ended
    ``result`` without an outcome, else None: the same refusal awaits every further call."""
    if result.outcome is not None or result.error is None:
        return None
    reason = result.error.removeprefix(f"{ModelUnavailable.__name__}: ").split(":", 1)[0]
    return reason if reason in DEFINITIVE_REASONS else None


Progress = Callable[[AttemptResult], None]


def _crash_part(crash: BaseException) -> str:
    """The part an attempt's crash came from, recorded with it: ``environment`` when
    the exception passed through the environment's code (opening it, its state), else
    ``loop`` (the loop's own code, or what it asked of its context). A tool cannot
    crash an attempt: its exceptions are tool errors the model sees."""
    from xaytune.harness import environment

    trace = crash.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == environment.__file__:
            return "environment"
        trace = trace.tb_next
    return "loop"


# Set by run_many for the attempts it runs: their seals are committed in groups.
_GROUP_COMMIT: ContextVar[GroupCommit | None] = ContextVar("xaytune_group_commit", default=None)
# Set by run_many per task: the commits of its seals, awaited once the task has left
# its concurrency slot (waiting for the disk does not need the model).
_SEALING: ContextVar[list[asyncio.Future[None]] | None] = ContextVar(
    "xaytune_sealing", default=None
)


# Set by run_many: the seal journal of each store its attempts write to, opened once.
_JOURNALS: ContextVar[dict[str, SealJournal] | None] = ContextVar("xaytune_journals", default=None)


def _journal_of(spec: AgentExecutionSpec) -> SealJournal | None:
    """The journal of the store a task-bound spec writes to (None for other specs)."""
    if spec.output_uri is None or spec.task_id is None:  # task_id: no binding is built
        return None
    path = journal_path(spec.output_uri)
    journals = _JOURNALS.get()
    if journals is None:
        return SealJournal(path)
    journal = journals.get(path)
    if journal is None:
        journal = journals[path] = SealJournal(path)
    return journal


class HarnessRunner:
    """Runs execution specs against a model with a toolbox.

    ``durability="fsync"`` (default) makes every seal durable before it exists;
    ``"none"`` skips fsync (explicitly faster, for throwaway runs).
    """

    def __init__(self, *, durability: str = "fsync", intent: str | None = None) -> None:
        if durability not in ("fsync", "none"):
            raise ExecutionError("bad-durability", f"durability {durability!r}: fsync or none")
        self.durability = durability
        self.intent = intent  # the run's intent digest, carried by every attempt record
        self._identities: dict[int, tuple[object, dict[str, Any], bytes]] = {}
        self._loops: dict[int, tuple[Harness, ResolvedLoop]] = {}

    # -- public API ---------------------------------------------------------------

    def run(
        self,
        spec: AgentExecutionSpec,
        *,
        model: Model,
        toolbox: Toolbox,
        authorized_tools: Iterable[str],
        cancel: asyncio.Event | None = None,
    ) -> AttemptResult:
        """Run one spec to an outcome (synchronously); returns its last attempt."""
        run = asyncio.run(
            self.run_task(
                spec,
                model=model,
                toolbox=toolbox,
                authorized_tools=authorized_tools,
                cancel=cancel,
            )
        )
        assert run.last is not None
        return run.last

    @watched
    async def run_task(
        self,
        spec: AgentExecutionSpec,
        *,
        model: Model,
        toolbox: Toolbox,
        authorized_tools: Iterable[str],
        cancel: asyncio.Event | None = None,
    ) -> TaskRun:
        """Run one spec: attempts until one is complete or ``attempts_per_task`` run out."""
        authorized = frozenset(authorized_tools)
        self._check(spec, model, toolbox, authorized)
        return await self._run_checked(spec, model, toolbox, authorized, cancel)

    async def _run_checked(
        self,
        spec: AgentExecutionSpec,
        model: Model,
        toolbox: Toolbox,
        authorized: frozenset[str],
        cancel: asyncio.Event | None,
    ) -> TaskRun:
        # The model may call only what the harness requested (and the host authorized):
        # a tool authorized but not requested is not the candidate's to use.
        granted = authorized & frozenset(spec.tools)
        results: list[AttemptResult] = []
        for _ in range(spec.harness.attempts_per_task):
            result = await self._attempt(spec, model, toolbox, granted, cancel)
            results.append(result)
            if result.outcome is not None or refusal_of(result) is not None:
                break  # another attempt would meet the same refusal
        return TaskRun(spec=spec, attempts=tuple(results))

    @watched
    async def run_many(
        self,
        specs: Sequence[AgentExecutionSpec],
        *,
        model: Model,
        toolbox: Toolbox,
        authorized_tools: Iterable[str],
        concurrency: int = 16,
        resume: bool = False,
        progress: Progress | None = None,
        cancel: asyncio.Event | None = None,
    ) -> list[TaskRun]:
        """Run many specs concurrently (model calls are I/O), in spec order.

        With ``resume``, a spec whose task already has a complete attempt for the
        same spec fingerprint is skipped, and open attempts left by a crash are
        first sealed ``partial`` (recovered); new attempts are added, none replaced.

        ``concurrency`` bounds the tasks in their agent loop. A task whose attempts
        have ended waits for its seals' group commit outside that bound, and is
        returned (and reported to ``progress``) only once they are in place.

        A definitive refusal of the endpoint (``model-auth``, ``model-unknown``, ...)
        stops the run from starting further tasks: every call would be refused alike.
        Tasks in flight finish; the rest come back ``not_started`` (no attempt), for
        the caller to refuse the replicate and a resume to run them.
        """
        if concurrency < 1:
            raise ExecutionError("bad-concurrency", f"concurrency {concurrency} must be >= 1")
        authorized = frozenset(authorized_tools)
        for spec in specs:
            self._check(spec, model, toolbox, authorized)
        results: list[TaskRun | None] = [None] * len(specs)
        queue = iter(enumerate(specs))  # shared by the workers: each spec taken once, in order
        settling: set[asyncio.Task[None]] = set()  # the pending only: a done one is dropped
        failure: list[BaseException] = []
        refused: list[TaskRun] = []  # the first definitive refusal stops new tasks

        async def settle(index: int, run: TaskRun, sealing: list[asyncio.Future[None]]) -> None:
            # Its attempts are reported (and returned) only once their seals are in place.
            try:
                for done in sealing:
                    await asyncio.shield(done)
            except BaseException as error:  # a failed commit stops the run, as a crash would
                if not failure and not isinstance(error, asyncio.CancelledError):
                    failure.append(error)
                    for worker in workers:
                        worker.cancel()
                raise
            finish(index, run)

        def settled(task: asyncio.Task[None]) -> None:
            settling.discard(task)
            if not task.cancelled():
                task.exception()  # retrieved here: a failure is raised from ``failure``

        def finish(index: int, run: TaskRun) -> None:
            results[index] = run
            if progress is not None:
                for attempt in run.attempts:
                    progress(attempt)

        async def work() -> None:
            # One of ``concurrency`` workers, each running one task at a time: no task
            # waits on a semaphore (whose waiter queue costs O(waiters) per wake-up).
            for index, spec in queue:
                if refused:
                    results[index] = TaskRun(spec=spec, attempts=(), not_started=True)
                    continue
                if resume and self._prepare_resume(spec, _journal_of(spec)):
                    results[index] = TaskRun(spec=spec, attempts=(), skipped=True)
                    continue
                sealing: list[asyncio.Future[None]] = []
                _SEALING.set(sealing)  # this worker's own context, for this task
                run = await self._run_checked(spec, model, toolbox, authorized, cancel)
                if run.refused:
                    refused.append(run)
                if sealing:  # waits for its group commit outside the concurrency bound
                    waiting = asyncio.ensure_future(settle(index, run, sealing))
                    settling.add(waiting)
                    waiting.add_done_callback(settled)
                else:
                    finish(index, run)

        committer = GroupCommit() if self.durability == "fsync" else None
        token = _GROUP_COMMIT.set(committer)
        journals = _JOURNALS.set({})
        try:
            workers = [asyncio.ensure_future(work()) for _ in range(min(concurrency, len(specs)))]
        finally:
            _GROUP_COMMIT.reset(token)
            _JOURNALS.reset(journals)
        try:
            await asyncio.gather(*workers)
            await asyncio.gather(*settling)
        except BaseException as error:
            for task in (*workers, *settling):
                task.cancel()
            # Let every in-flight attempt seal itself partial before we go.
            await asyncio.gather(*workers, *settling, return_exceptions=True)
            if failure and isinstance(error, asyncio.CancelledError):
                raise failure[0] from None
            raise
        finally:
            if committer is not None:
                await committer.drain()
        assert all(run is not None for run in results)
        return results  # type: ignore[return-value]

    # -- internals ----------------------------------------------------------------

    def _identity(self, model: Model) -> tuple[dict[str, Any], bytes]:
        """The model's identity as plain data and canonical bytes, once per identity."""
        identity = model.identity
        cached = self._identities.get(id(identity))
        if cached is None or cached[0] is not identity:
            plain = identity.model_dump(mode="json")
            cached = (identity, plain, canonical_bytes(plain))
            self._identities[id(identity)] = cached
        return cached[1], cached[2]

    def _check(
        self,
        spec: AgentExecutionSpec,
        model: Model,
        toolbox: Toolbox,
        authorized: frozenset[str],
    ) -> None:
        for tool in spec.tools:
            if tool not in authorized:
                raise ExecutionError(
                    "unauthorized-tool", f"spec requests tool {tool!r}, not authorized at run time"
                )
        toolbox.schemas(spec.tools)  # refuses an unknown tool, naming it
        # The parts that run must be the code the harness pins (its fingerprint).
        check_parts(spec.harness, toolbox, self._resolved_loop(spec.harness), spec.tools)
        if spec.model is not None and spec.model != model.identity:
            raise ExecutionError(
                "model-mismatch",
                f"spec pins model {spec.model.model}@{spec.model.revision}; "
                f"runner was given {model.identity.model}@{model.identity.revision}",
            )
        if spec.task_id is not None and spec.output_uri is None:  # a task-bound spec
            raise ExecutionError(
                "output-required", f"task {spec.task_id}: a task-bound spec needs output_uri"
            )
        if spec.harness.cost_budget_usd is not None and spec.config.get("prices") is None:
            raise ExecutionError(
                "cost-budget-unpriced",
                f"task {spec.task_id}: harness {spec.harness.name} has a cost_budget_usd but "
                "its spec pins no price table (compile it with the model's prices)",
            )

    @staticmethod
    def _prepare_resume(spec: AgentExecutionSpec, journal: SealJournal | None) -> bool:
        """Recover open attempts; True when a complete attempt of this spec exists.

        Every sealed attempt must be one the store's journal committed; an open one
        is sealed with its committed seal or, never committed, recovered partial.
        """
        if spec.output_uri is None or spec.binding is None or journal is None:
            return False
        position = spec.binding.position
        attested = False
        listing = attempt_paths(spec.output_uri)
        gone = journal.numbers.get(position, set()) - {number for number, _ in listing}
        if gone:  # committed, and its file is gone: never run again in its place
            number = min(gone)
            path = os.path.join(spec.output_uri, attempt_name(number))
            raise missing_seal(path, spec.task_id, number, journal.committed[(position, number)])
        for number, path in listing:
            attempt = StoredAttempt(position, number, Path(path))
            data = attempt.read()  # once: recovery appends to these very bytes
            listed = journal.committed.get((position, number))
            if listed is None and remove_empty_claim(attempt, data):
                continue  # a claim killed before its record
            try:
                layout = split_attempt(data, path)
            except EvidenceError:  # committed, yet not even its record is there
                raise missing_seal(path, spec.task_id, number, str(listed)) from None
            if layout.sealed:
                check_journaled(
                    journal.committed,
                    position=position,
                    number=number,
                    seal_digest=sha256_digest(data[layout.events_end :]),
                    where=path,
                    task=spec.task_id,
                )
            else:
                data = recover_open_attempt(attempt, data=data, journal=journal)
                layout = split_attempt(data, path)
            seal = AttemptSeal.model_validate_json(data[layout.events_end :])
            record = AttemptRecord.model_validate_json(data[layout.spec_end : layout.record_end])
            if record.attribution.spec_fingerprint != spec.fingerprint:
                raise ExecutionError(
                    "resume-mismatch",
                    f"task {spec.task_id}: attempt {attempt.path} was run from another spec "
                    f"({record.attribution.spec_fingerprint}); resume needs the same config",
                )
            attested = attested or seal.status == "complete"
        return attested

    async def _attempt(
        self,
        spec: AgentExecutionSpec,
        model: Model,
        toolbox: Toolbox,
        authorized: frozenset[str],
        cancel: asyncio.Event | None,
    ) -> AttemptResult:
        committer = _GROUP_COMMIT.get()
        durable = self.durability == "fsync"
        # Under a group commit the batch's syncs make each attempt durable; alone, each
        # attempt fsyncs its own files.
        session = AttemptSession(
            spec,
            durable=durable and committer is None,
            journal=_journal_of(spec),
            intent=self.intent,
        )
        session.open(*self._identity(model))
        spend = Spend()
        outcome: Outcome | None = None
        final_text: str | None = None
        error: str | None = None
        interrupted: BaseException | None = None
        started = time.perf_counter()  # end-to-end wall time, on a monotonic clock
        deadline = spec.harness.attempt_timeout_s
        try:
            # The deadline covers the whole attempt: a loop, model call or tool call that
            # awaits past it is cancelled there; code that holds the event loop gets
            # AttemptDeadline from the watchdog, inside the window only (see the module
            # docstring): nothing is raised for this attempt once the window has closed.
            with AttemptWindow(deadline):
                async with asyncio.timeout(deadline):
                    outcome, final_text = await self._loop(
                        spec, session, spend, model, toolbox, authorized, cancel
                    )
        except (TimeoutError, AttemptDeadline):  # the attempt's own deadline
            outcome, final_text = None, None
            error = f"{ATTEMPT_TIMEOUT}: task {spec.task_id} ran past {deadline:g} s"
            session.event("timed-out", {"reason": ATTEMPT_TIMEOUT, "deadline_s": deadline})
        except (asyncio.CancelledError, KeyboardInterrupt) as stop:
            interrupted = stop
            session.event("interrupted", {"by": type(stop).__name__})
        except Exception as crash:  # a crash: no outcome, the spend so far is kept
            error = f"{type(crash).__name__}: {crash}"
            session.event("crashed", {"error": error, "part": _crash_part(crash)})
        spend.wall_time_us = int((time.perf_counter() - started) * 1e6)
        try:
            if interrupted is not None or committer is None:
                # An interrupted attempt seals partial at once, without awaiting anything
                # (durably on its own: no group commit will sync it).
                session.durable = durable
                seal_digest = session.seal(outcome=outcome, spend=spend)
            else:
                pending = session.prepare_seal(outcome=outcome, spend=spend)
                seal_digest = None
                if pending is not None:
                    sealing = _SEALING.get()
                    if sealing is None:
                        await committer.commit(pending)
                    else:  # run_many awaits it after the task leaves its slot
                        sealing.append(committer.submit(pending))
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

    async def _loop(
        self,
        spec: AgentExecutionSpec,
        session: AttemptSession,
        spend: Spend,
        model: Model,
        toolbox: Toolbox,
        authorized: frozenset[str],
        cancel: asyncio.Event | None,
    ) -> tuple[Outcome, str | None]:
        session.event(
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
        host = _Host(spec, session, spend, model, toolbox, authorized, cancel)
        loop = self._resolved_loop(spec.harness)
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

    def _resolved_loop(self, harness: Harness) -> ResolvedLoop:
        """The harness's loop, resolved once per harness object this runner sees."""
        held = self._loops.get(id(harness))
        if held is not None and held[0] is harness:
            return held[1]
        loop = resolve_loop(harness.loop, where=f"harness {harness.name}.loop")
        if len(self._loops) >= 64:
            self._loops.clear()
        self._loops[id(harness)] = (harness, loop)
        return loop
