"""Agent loops ("solvers"): how a harness turns a task into an answer.

A loop is an ``async`` function ``loop(ctx, *, <params>) -> str | None`` or a class
built with its params whose instances are ``async`` callables ``(ctx) -> str | None``.
It returns the final text the harness's answer extraction reads (None: no text). It
acts only through its :class:`LoopContext` (``generate``, ``call_tool``, ``note``), so
the trajectory, budgets, cancellation and seals stay the runner's. Loop parameters
are harness fields (``loop: {_target_: ..., param: value}``) and enter its fingerprint.

Built-ins (registered with ``@loop``, as a user's loop is):

- ``tool-loop``: model turn; run every tool call it asks for; repeat until a reply
  without tool calls, whose text is the answer (the behaviour of every harness before
  loops were pluggable, event for event).
- ``plan-then-act``: one planning turn without tools (``plan_prompt``), then the tool
  loop with the plan in the conversation (``act_prompt``).
- ``self-check``: the tool loop; then ``check_prompt`` asks the model to check the
  answer against the question and to reply with the answer (revised or unchanged) in
  the same format; one more tool loop from there gives the final text.

Any of them may end early with a :class:`LoopStop` raised by the context: the runner
then seals the stop as the outcome.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import PluginError
from xaytune.harness._loop_context import LoopContext, LoopStop, SpendView
from xaytune.models.protocol import Message
from xaytune.plugins import (
    CodeIdentity,
    PartRef,
    check_params,
    code_identity,
    lookup,
    loop,
    parameters_model,
    part_ref,
)

__all__ = [
    "AgentLoop",
    "LoopContext",
    "LoopStop",
    "ResolvedLoop",
    "SpendView",
    "plan_then_act",
    "resolve_loop",
    "self_check",
    "tool_loop",
]

DEFAULT_PLAN_PROMPT = (
    "Before solving, write a short numbered plan of the steps you will take. "
    "Do not solve the problem yet and do not call tools."
)
DEFAULT_ACT_PROMPT = "Now carry out your plan and solve the problem."
DEFAULT_CHECK_PROMPT = (
    "Check your answer against the question, step by step. If it is correct, repeat it; "
    "if not, correct it. Reply in the same format as before."
)


@runtime_checkable
class AgentLoop(Protocol):
    """What the runner calls: ``await loop(ctx)`` -> the final text (or None)."""

    def __call__(self, ctx: LoopContext) -> Awaitable[str | None]: ...


async def _run_tools(ctx: LoopContext, messages: list[Message]) -> str | None:
    """Model turns and their tool calls until a reply without tool calls."""
    while True:
        reply = await ctx.generate(messages)
        messages.append(Message("assistant", reply.text, reply.tool_calls))
        if not reply.tool_calls:
            return reply.text
        for call in reply.tool_calls:
            result = await ctx.call_tool(call)
            messages.append(Message("tool", result.content, tool_call_id=call.id))


@loop(name="tool-loop")
async def tool_loop(ctx: LoopContext) -> str | None:
    """The plain tool loop: turns and tool calls until a reply without tool calls."""
    return await _run_tools(ctx, list(ctx.messages))


@loop(name="plan-then-act")
async def plan_then_act(
    ctx: LoopContext,
    *,
    plan_prompt: str = DEFAULT_PLAN_PROMPT,
    act_prompt: str = DEFAULT_ACT_PROMPT,
) -> str | None:
    """A planning turn without tools, then the tool loop with the plan in context."""
    messages = [*ctx.messages, Message("user", plan_prompt)]
    plan = await ctx.generate(messages, tools=())
    ctx.note("plan", chars=len(plan.text or ""))
    messages += [Message("assistant", plan.text), Message("user", act_prompt)]
    return await _run_tools(ctx, messages)


@loop(name="self-check")
async def self_check(ctx: LoopContext, *, check_prompt: str = DEFAULT_CHECK_PROMPT) -> str | None:
    """Answer with the tool loop, ask the model to check it, and take its revision."""
    messages = list(ctx.messages)
    first = await _run_tools(ctx, messages)
    ctx.note("first answer", chars=len(first or ""))
    messages.append(Message("user", check_prompt))
    return await _run_tools(ctx, messages)


def _instance(target: type, params: dict[str, Any], ref: str, where: str) -> Any:
    try:
        return target(**params)
    except Exception as error:
        raise PluginError(
            "bad-part", f"{where}: {ref}(...) raised {type(error).__name__}: {error}"
        ) from None


async def _run_fresh(
    target: type, params: dict[str, Any], ref: str, where: str, ctx: LoopContext
) -> str | None:
    return await _instance(target, params, ref, where)(ctx)


@dataclass(frozen=True)
class ResolvedLoop:
    """A loop ready to run: its name, the callable (params bound) and its identity."""

    name: str
    run: Callable[[LoopContext], Awaitable[str | None]]
    identity: CodeIdentity


_RESOLVED: dict[bytes, ResolvedLoop] = {}


def resolve_loop(declared: str | PartRef, *, where: str = "loop") -> ResolvedLoop:
    """The loop ``declared`` names (a built-in, a registered name or a dotted path),
    with its parameters checked against its signature (``bad-part-params``)."""
    ref = part_ref(declared)
    key = canonical_bytes(ref.model_dump(mode="json"))
    cached = _RESOLVED.get(key)
    name, target = lookup("loop", ref.ref, where=where)
    identity = code_identity("loop", name, target, where=where)
    if cached is not None and cached.identity == identity:
        return cached
    if inspect.iscoroutinefunction(target):
        model = parameters_model(target, skip=1, where=where)
        params = check_params(model, ref.params, where=where)
        run: Any = functools.partial(target, **params) if params else target
    elif inspect.isclass(target):
        model = parameters_model(target, skip=0, where=where)
        params = check_params(model, ref.params, where=where)
        first = _instance(target, params, ref.ref, where)  # built now: fails before any run
        if not inspect.iscoroutinefunction(getattr(first, "__call__", None)):  # noqa: B004
            raise PluginError("bad-part", f"{where}: {ref.ref} instances are not async callables")
        # A fresh instance per attempt: state a loop keeps on itself never leaks from one
        # task, replicate or candidate to another.
        run = functools.partial(_run_fresh, target, params, ref.ref, where)
    elif callable(target) and inspect.iscoroutinefunction(target.__call__):  # type: ignore[operator]
        if ref.params:
            raise PluginError("bad-part-params", f"{where}: {ref.ref} is an instance: no params")
        run = target
    else:
        raise PluginError(
            "bad-part",
            f"{where}: {ref.ref} is not an agent loop (an async function taking the loop "
            "context, or a class of async callables)",
        )
    resolved = ResolvedLoop(name=name, run=run, identity=identity)
    _RESOLVED[key] = resolved
    return resolved
