"""Loops for tests/app/test_app_attempt_errors.py (imported by dotted path, as a user's
module would be): each misbehaves on the tasks whose question contains a "3"."""

from __future__ import annotations

import asyncio

from xaytune.harness.loops import tool_loop

MARK = "3"


def marked(text: str | None) -> bool:
    """Whether a task's question is one these loops misbehave on."""
    return MARK in (text or "")


async def crash_on_marked(ctx) -> str | None:
    """Raise ZeroDivisionError on a marked task; the plain tool loop otherwise."""
    if marked(ctx.messages[-1].content):
        return 1 / 0
    return await tool_loop(ctx)


async def stall_on_marked(ctx) -> str | None:
    """Await far past any test's attempt deadline on a marked task."""
    if marked(ctx.messages[-1].content):
        await asyncio.sleep(3600)
    return await tool_loop(ctx)
