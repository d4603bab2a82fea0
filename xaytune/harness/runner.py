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

The pieces, one idea each: a call's shared state (``run_session``: parts, group
commit, seal journals), one attempt (``attempt_run``, with its values in one
``attempt_frame`` record), resuming (``resume``), the results (``run_results``); this
module checks the specs and schedules the tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import ExecutionError
from xaytune.harness._watchdog import watched
from xaytune.harness.attempt_run import ATTEMPT_TIMEOUT, run_attempt
from xaytune.harness.loops import ResolvedLoop, resolve_loop
from xaytune.harness.parts import check_parts
from xaytune.harness.resume import prepare_resume
from xaytune.harness.run_results import AttemptResult, Progress, TaskRun, refusal_of
from xaytune.harness.run_session import RunSession, SealsPending
from xaytune.harness.spec import AgentExecutionSpec, Harness
from xaytune.harness.toolbox import Toolbox
from xaytune.models.protocol import Model

__all__ = ["ATTEMPT_TIMEOUT", "AttemptResult", "HarnessRunner", "TaskRun", "refusal_of"]


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
        session = self._session(model, toolbox, authorized, cancel, grouped=False)
        return await self._run_spec(spec, session, later=None)

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
        # This call's group commit and seal journals, handed to every attempt it runs.
        session = self._session(model, toolbox, authorized, cancel, grouped=True)
        results: list[TaskRun | None] = [None] * len(specs)
        queue = iter(enumerate(specs))  # shared by the workers: each spec taken once, in order
        settling: set[asyncio.Task[None]] = set()  # the pending only: a done one is dropped
        failure: list[BaseException] = []
        refused: list[TaskRun] = []  # the first definitive refusal stops new tasks

        async def settle(index: int, run: TaskRun, sealing: SealsPending) -> None:
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
                if resume and prepare_resume(spec, session.journal_of(spec)):
                    results[index] = TaskRun(spec=spec, attempts=(), skipped=True)
                    continue
                sealing: SealsPending = []  # this task's commits, awaited after its slot
                run = await self._run_spec(spec, session, later=sealing)
                if run.refused:
                    refused.append(run)
                if sealing:  # waits for its group commit outside the concurrency bound
                    waiting = asyncio.ensure_future(settle(index, run, sealing))
                    settling.add(waiting)
                    waiting.add_done_callback(settled)
                else:
                    finish(index, run)

        workers = [asyncio.ensure_future(work()) for _ in range(min(concurrency, len(specs)))]
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
            await session.drain()
        assert all(run is not None for run in results)
        return results  # type: ignore[return-value]

    # -- internals ----------------------------------------------------------------

    def _session(
        self,
        model: Model,
        toolbox: Toolbox,
        authorized: frozenset[str],
        cancel: asyncio.Event | None,
        *,
        grouped: bool,
    ) -> RunSession:
        """The state one call shares among its attempts (``grouped``: a group commit)."""
        return RunSession(
            model=model,
            identity=self._identity(model),
            toolbox=toolbox,
            authorized=authorized,
            cancel=cancel,
            durable=self.durability == "fsync",
            intent=self.intent,
            grouped=grouped,
        )

    async def _run_spec(
        self, spec: AgentExecutionSpec, session: RunSession, *, later: SealsPending | None
    ) -> TaskRun:
        # The model may call only what the harness requested (and the host authorized):
        # a tool authorized but not requested is not the candidate's to use.
        granted = session.authorized & frozenset(spec.tools)
        loop = self._resolved_loop(spec.harness)
        results: list[AttemptResult] = []
        for _ in range(spec.harness.attempts_per_task):
            result = await run_attempt(spec, session, granted=granted, loop=loop, later=later)
            results.append(result)
            if result.outcome is not None or refusal_of(result) is not None:
                break  # another attempt would meet the same refusal
        return TaskRun(spec=spec, attempts=tuple(results))

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
