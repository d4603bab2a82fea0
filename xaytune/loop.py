"""Agent loops: how a harness turns a task into an answer, and how to write one.

A loop is ``async def loop(ctx, *, <params>) -> str | None`` registered with
:func:`loop` (or a class built with its params whose instances are async callables
``(ctx) -> str | None``: the :class:`AgentLoop` protocol). It returns the final text
the harness's answer extraction reads, and acts only through its :class:`LoopContext`:
``ctx.messages``, ``ctx.tools``, ``await ctx.generate(messages, tools=...)`` (one
model turn, a :class:`ModelReply`), ``await ctx.call_tool(call)`` (a
:class:`ToolResult`), ``ctx.note(text, **data)`` (an event in the trajectory),
``ctx.params`` and ``ctx.spend`` (a :class:`SpendView`)::

    from xaytune.loop import LoopContext, Message, loop

    @loop(version="1")
    async def answer_twice(ctx: LoopContext) -> str | None:
        first = await ctx.generate(ctx.messages, tools=())
        again = [*ctx.messages, Message("assistant", first.text), Message("user", "Sure?")]
        return (await ctx.generate(again, tools=())).text

The host owns the attempt: every turn and tool call is recorded and held to the
harness's budgets; once a limit ends the attempt, the call that hit it raises
:class:`LoopStop` (and so does every later call; the stop is the outcome). The
built-ins ``tool-loop``, ``plan-then-act`` and ``self-check`` are :func:`tool_loop`,
:func:`plan_then_act` and :func:`self_check`, registered the same way.
"""

from xaytune.harness import (
    AgentLoop,
    LoopContext,
    LoopStop,
    SpendView,
    ToolResult,
    plan_then_act,
    self_check,
    tool_loop,
)
from xaytune.models import Message, ModelReply, Role, ToolCall, ToolSchema, Usage
from xaytune.plugins import loop

__all__ = [
    "AgentLoop",
    "LoopContext",
    "LoopStop",
    "Message",
    "ModelReply",
    "Role",
    "SpendView",
    "ToolCall",
    "ToolResult",
    "ToolSchema",
    "Usage",
    "loop",
    "plan_then_act",
    "self_check",
    "tool_loop",
]
