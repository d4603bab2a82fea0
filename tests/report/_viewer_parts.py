"""Loops for the viewer's tests (imported by dotted path, as a user's module would be)."""

from __future__ import annotations

from xaytune.harness.loops import tool_loop


async def crash_on_three(ctx) -> str | None:
    """Raise ValueError on a task whose question holds a "3"; the tool loop otherwise."""
    if "3" in (ctx.messages[-1].content or ""):
        raise ValueError("the loop refuses threes")
    return await tool_loop(ctx)


async def crash_always(ctx) -> str | None:
    """Raise on every task: no task is ever attested."""
    raise RuntimeError("the loop is broken")
