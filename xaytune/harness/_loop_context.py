"""The context an agent loop runs in: the only door to the model and the tools.

A loop (``xaytune.harness.loops``) decides *what* to ask; the host decides what is
allowed and records everything. Every model call goes through :meth:`generate` and
every tool call through :meth:`call_tool`, so the trajectory, the spend and the
budgets are the runner's:

- ``max_turns`` model turns, ``token_budget`` total tokens, ``cost_budget_usd``
  dollars at the prices the spec pins (checked after each reply, like the token
  budget; a reply whose cached or cache-write tokens were not reported is priced at
  the dearest price they may have had, so missing detail never lets spend pass the
  budget),
  ``tool_call_budget`` tool calls, ``context_window`` (checked before a turn, on the
  last turn's context), the host's cancel token, and ``tool_timeout_s`` per tool
  call;
- once one of them ends the attempt, the context is *stopped*: the call that hit it
  raises :class:`LoopStop`, and so does every later call, without reaching the model
  or a tool. Catching :class:`LoopStop` and returning an answer changes nothing: the
  attempt's outcome is the stop (``budget-stop``, ``context-overflow``,
  ``model-error``, ``cancelled``);
- a model that stays unreachable through the harness's retries (a transient
  failure: connection refused, a 5xx, a timeout) raises :class:`ModelUnavailable`:
  that is no outcome, and the attempt is sealed ``partial`` so a resume runs it
  again; only a definitive refusal (a 4xx, a malformed reply) is ``model-error``;
- once the loop has returned, the context is closed: a call from a task the loop left
  behind is refused (``loop-closed``) and reaches nothing.

A loop is ordinary in-process Python, so this is a contract, not a sandbox: the
context holds no store, session or model attribute a loop could use, and refuses
attribute writes, but code that digs through the interpreter can reach anything.
What a loop cannot do through the context is exceed a budget, call an unauthorized
tool, or write evidence.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import ExecutionError, FingerprintError
from xaytune.harness.attempt_frame import AttemptFrame
from xaytune.harness.environment import AttemptToolbox, open_environment
from xaytune.harness.evidence.calls import usage_event
from xaytune.harness.evidence.store import Outcome
from xaytune.harness.spec import sampling_identity
from xaytune.harness.toolbox import ToolResult
from xaytune.models.protocol import (
    ContextOverflowError,
    Message,
    ModelError,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolSchema,
    TransientModelError,
)

__all__ = ["LoopAbandoned", "LoopContext", "LoopStop", "ModelUnavailable", "SpendView"]


class LoopStop(Exception):
    """The attempt reached an outcome other than the loop's answer (a budget, the
    context window, a model error, a cancellation). Raised by every later call too."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(f"{outcome.terminal}: {outcome.detail}")
        self.outcome = outcome


# Calls a loop may make after its attempt stopped before it is abandoned (a loop that
# swallows every stop would otherwise spin forever without awaiting anything).
MAX_CALLS_AFTER_STOP = 100


class LoopAbandoned(BaseException):
    """A loop kept calling after its attempt had stopped: the runner ends it (the
    recorded stop is the outcome). A ``BaseException``, so ``except Exception`` in a
    loop does not swallow it."""


class ModelUnavailable(ExecutionError):
    """The model stayed unreachable through every retry (connection refused, a 5xx,
    a timeout): no outcome. Caught by the runner like a crash (sealed ``partial``); a
    loop that catches it gets it again on its next call."""


@dataclass(frozen=True, slots=True)
class SpendView:
    """What a loop may read of the spend so far (a copy; changing it changes nothing)."""

    turns: int
    input_tokens: int
    output_tokens: int
    tool_calls: int


class _Host:
    """The runner's side of one attempt (its :class:`AttemptFrame`): what the context
    acts on."""

    __slots__ = (
        "after_stop",
        "authorized",
        "cancel",
        "closed",
        "context_tokens",
        "cost",
        "cost_budget",
        "environment",
        "exchange",
        "final_text",
        "key",
        "lock",
        "model",
        "opening",
        "prices",
        "schemas",
        "session",
        "spec",
        "spend",
        "stop",
        "toolbox",
        "unavailable",
        "window",
    )

    def __init__(self, frame: AttemptFrame) -> None:
        spec, session, toolbox = frame.spec, frame.session, frame.toolbox
        self.spec, self.session, self.spend, self.model = spec, session, frame.spend, frame.model
        self.toolbox, self.authorized, self.cancel = toolbox, frame.granted, frame.cancel
        self.window = frame.window
        self.schemas = toolbox.schemas(spec.tools)
        # The task's environment, if it names one: a fresh instance for this attempt,
        # its tools routed by name (xaytune.harness.environment).
        self.environment = open_environment(spec)
        if self.environment is not None:
            self.toolbox = AttemptToolbox(toolbox, self.environment)
            self.schemas += self.environment.schemas
        # What a loop opens with; a later user turn continues the conversation (_turns).
        self.opening = (Message("system", spec.system_message), Message("user", spec.user_message))
        self.exchange: tuple[tuple[Message, ...], ModelReply] | None = None
        # Sampling keys name the call, not the code: see spec.sampling_identity.
        self.key = (
            f"{sampling_identity(spec.harness)}:{spec.task_id}:{spec.seed}:{spec.replicate}:"
            f"{session.number}"
        )
        self.context_tokens = 0
        # The dollar budget, exactly: the spend so far priced by the spec's table.
        self.prices = spec.prices
        budget = spec.harness.cost_budget_usd
        self.cost_budget = None if budget is None else Fraction(repr(budget))
        self.cost = Fraction(0)
        self.stop: Outcome | None = None
        self.final_text: str | None = None
        self.closed = False
        self.unavailable: ModelUnavailable | None = None
        # One model or tool call at a time: budgets are checked and spent, turns
        # numbered and events recorded in one piece, even when a loop gathers calls.
        self.lock = asyncio.Lock()
        self.after_stop = 0

    def halt(self, outcome: Outcome, final_text: str | None = None) -> LoopStop:
        self.stop, self.final_text = outcome, final_text
        return LoopStop(outcome)

    def check_open(self, what: str) -> None:
        if self.closed:
            raise ExecutionError(
                "loop-closed", f"task {self.spec.task_id}: {what} after the loop returned"
            )
        if self.stop is not None or self.unavailable is not None:
            self.after_stop += 1
            if self.after_stop > MAX_CALLS_AFTER_STOP:
                raise LoopAbandoned(self.spec.task_id)
            if self.stop is not None:
                raise LoopStop(self.stop)
            raise self.unavailable  # type: ignore[misc]

    def record(self, kind: str, payload: dict[str, Any], what: str) -> None:
        """Append one event, unless the attempt is sealed already (never after it)."""
        if self.closed:
            raise ExecutionError(
                "loop-closed", f"task {self.spec.task_id}: {what} after the loop returned"
            )
        self.session.event(kind, payload)

    async def generate(
        self, messages: Sequence[Message], tools: tuple[ToolSchema, ...], max_output: int | None
    ) -> ModelReply:
        async with self.lock:
            return await self._generate(messages, tools, max_output)

    async def _generate(
        self, messages: Sequence[Message], tools: tuple[ToolSchema, ...], max_output: int | None
    ) -> ModelReply:
        self.check_open("generate")
        harness, spend = self.spec.harness, self.spend
        turn = spend.turns
        if turn >= harness.max_turns:
            raise self.halt(
                Outcome(terminal="budget-stop", detail=f"max turns {harness.max_turns} reached")
            )
        if self.cancel is not None and self.cancel.is_set():
            raise self.halt(Outcome(terminal="cancelled", detail="cancelled by the host"))
        window = harness.context_window
        if window is not None and self.context_tokens >= window:
            raise self.halt(
                Outcome(
                    terminal="context-overflow",
                    detail=f"context {self.context_tokens} tokens reached window {window}",
                )
            )
        request = ModelRequest(
            messages=tuple(messages),
            tools=tools,
            max_output_tokens=max_output,
            sampling_key=f"{self.key}:{turn}",
        )
        reply, elapsed = await self._call_model(request, turn)
        self.exchange = (request.messages, reply)
        usage = reply.usage
        spend.turns += 1
        spend.model_calls += 1
        spend.retries += reply.retries
        spend.input_tokens += usage.input_tokens
        spend.output_tokens += usage.output_tokens
        spend.add_details(usage.cached_tokens, usage.reasoning_tokens)
        spend.model_time_us += elapsed
        self.context_tokens = usage.input_tokens + usage.output_tokens
        spend.peak_context_tokens = max(spend.peak_context_tokens, self.context_tokens)
        self.record(
            "model_reply",
            {
                "turn": turn,
                "text": reply.text,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls
                ],
                "usage": usage_event(usage),
                "finish_reason": reply.finish_reason,
                "retries": reply.retries,
                "time_us": elapsed,
            },
            "generate",
        )
        budget = harness.token_budget
        if budget is not None and spend.input_tokens + spend.output_tokens > budget:
            raise self.halt(
                Outcome(terminal="budget-stop", detail=f"token budget {budget} exceeded"),
                reply.text,
            )
        if self.cost_budget is not None:
            assert self.prices is not None  # the runner refuses a budget without prices
            self.cost += self.prices.call_cost_bound(
                usage.input_tokens,
                usage.cached_tokens,
                usage.output_tokens,
                cache_write_tokens=usage.cache_write_tokens,
            )
            if self.cost > self.cost_budget:
                raise self.halt(
                    Outcome(
                        terminal="budget-stop",
                        detail=f"cost budget ${harness.cost_budget_usd:g} exceeded "
                        f"(${float(self.cost):.6g} spent)",
                    ),
                    reply.text,
                )
        return reply

    async def _call_model(self, request: ModelRequest, turn: int) -> tuple[ModelReply, int]:
        """One turn's model call under the harness's retry policy; a failure stops."""
        spend, harness = self.spend, self.spec.harness
        retries = 0
        while True:
            started = time.perf_counter()
            try:
                reply = await self.model.complete(request)
            except ModelError as failure:
                elapsed = int((time.perf_counter() - started) * 1e6)
                spend.model_errors += 1
                spend.model_time_us += elapsed
                spend.retries += failure.retries
                retry = isinstance(failure, TransientModelError) and retries < harness.model_retries
                self.record(
                    "model_error",
                    {
                        "turn": turn,
                        "reason": failure.reason,
                        "message": str(failure),
                        "retries": failure.retries + (1 if retry else 0),
                        "time_us": elapsed,
                    },
                    "generate",
                )
                if isinstance(failure, TransientModelError) and not retry:
                    # Not an outcome: the endpoint may be back later. The attempt ends
                    # partial (spend kept), so a resume runs the task again.
                    self.unavailable = ModelUnavailable(
                        "model-unavailable",
                        f"task {self.spec.task_id}: {failure} (after {retries} harness retries)",
                    )
                    raise self.unavailable from None
                if failure.definitive:
                    # The endpoint refuses every call alike (auth, unknown model, malformed
                    # replies): not the harness's outcome. Partial like an unreachable
                    # model; the message starts with the reason word, which the app reads
                    # to stop the run with it.
                    cause = str(failure).removeprefix(f"{failure.reason}: ")
                    self.unavailable = ModelUnavailable(
                        failure.reason, f"{cause} (task {self.spec.task_id})"
                    )
                    raise self.unavailable from None
                if not retry:
                    overflow = isinstance(failure, ContextOverflowError)
                    terminal = "context-overflow" if overflow else "model-error"
                    raise self.halt(Outcome(terminal=terminal, detail=str(failure))) from None
                retries += 1
                spend.retries += 1
                request = ModelRequest(
                    messages=request.messages,
                    tools=request.tools,
                    max_output_tokens=request.max_output_tokens,
                    sampling_key=f"{self.key}:{turn}:r{retries}",
                )
                continue
            return reply, int((time.perf_counter() - started) * 1e6)

    async def call_tool(self, call: ToolCall) -> ToolResult:
        async with self.lock:
            return await self._call_tool(call)

    async def _call_tool(self, call: ToolCall) -> ToolResult:
        self.check_open("call_tool")
        spend, budget = self.spend, self.spec.harness.tool_call_budget
        if budget is not None and spend.tool_calls >= budget:
            raise self.halt(
                Outcome(terminal="budget-stop", detail=f"tool-call budget {budget} exhausted")
            )
        result = await self.toolbox.acall(
            call, authorized=self.authorized, timeout_s=self.spec.harness.tool_timeout_s
        )
        elapsed = int(result.elapsed_s * 1e6)
        spend.tool_calls += 1
        spend.tool_time_us += elapsed
        if not result.ok:
            spend.tool_errors += 1
        self.record(
            "tool_result",
            {
                "turn": max(0, spend.turns - 1),
                "call_id": call.id,
                "name": call.name,
                "ok": result.ok,
                "error": result.error,
                "content": result.content,
                "time_us": elapsed,
            },
            "call_tool",
        )
        return result


class LoopContext:
    """What an agent loop is given: the opening messages, the offered tools, and the
    three calls that act (:meth:`generate`, :meth:`call_tool`, :meth:`note`)."""

    __slots__ = ("__host",)

    def __init__(self, host: _Host) -> None:
        object.__setattr__(self, "_LoopContext__host", host)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a loop context is read-only ({name!r})")

    @property
    def messages(self) -> tuple[Message, ...]:
        """The opening messages: the compiled system and user messages (in a later user
        turn of a multi-turn task, the conversation so far and the new user message)."""
        return self.__host.opening

    @property
    def tools(self) -> tuple[ToolSchema, ...]:
        """The tools this harness may offer the model (granted and requested)."""
        return self.__host.schemas

    @property
    def params(self) -> dict[str, Any]:
        """The task input the prompts were rendered from (a copy)."""
        task = self.__host.spec.config.get("task")
        return dict(task["input"]) if task is not None else {}

    @property
    def spend(self) -> SpendView:
        """The spend so far (turns, tokens, tool calls)."""
        spend = self.__host.spend
        return SpendView(spend.turns, spend.input_tokens, spend.output_tokens, spend.tool_calls)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        max_output_tokens: int | None = None,
    ) -> ModelReply:
        """One model turn over ``messages``; ``tools`` defaults to every offered tool
        (pass ``()`` for a turn without tools; only offered tools may be passed).
        ``max_output_tokens`` may lower the harness's limit, never raise it."""
        host = self.__host
        host.window.checkpoint()  # a deadline or stop the watchdog could not raise in a write
        offered = host.schemas
        if tools is None:
            chosen = offered
        else:
            chosen = tuple(tools)
            names = {schema.name for schema in offered}
            for schema in chosen:
                if schema.name not in names or schema not in offered:
                    raise ExecutionError(
                        "unauthorized-tool",
                        f"task {host.spec.task_id}: the loop offered tool {schema.name!r}, "
                        "which is not one of this harness's offered tools",
                    )
        limit = host.spec.harness.max_output_tokens
        if max_output_tokens is not None:
            limit = max_output_tokens if limit is None else min(limit, max_output_tokens)
        return await host.generate(messages, chosen, limit)

    async def call_tool(
        self, call: ToolCall | str, arguments: dict[str, Any] | str | None = None
    ) -> ToolResult:
        """Run one tool call: a model's :class:`ToolCall`, or a name and arguments.

        Authorization, argument checks, the timeout and the tool-call budget are the
        host's; a refused call comes back as a result the model can see."""
        host = self.__host
        host.window.checkpoint()
        if isinstance(call, str):
            text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            call = ToolCall(id=f"loop_{host.spend.tool_calls + 1}", name=call, arguments=text)
        return await host.call_tool(call)

    def note(self, text: str, **data: Any) -> None:
        """Record a note of the loop's (a plan, a decision) in the trajectory."""
        host = self.__host
        host.window.checkpoint()
        host.check_open("note")
        try:
            canonical_bytes(data)
        except FingerprintError as error:
            raise ExecutionError(
                "bad-note", f"task {host.spec.task_id}: note data: {error}"
            ) from None
        host.record("note", {"turn": host.spend.turns, "text": str(text), "data": data}, "note")
