"""User tools as a researcher would write them: plain functions and classes.

They live in a module file (not in a test body or ``python -c``) because a tool's code
identity is the sha256 of the module that defines it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

from xaytune.harness.toolbox import ToolError
from xaytune.plugins import tool

# Set by a test when it is done with a blocked tool, so the worker thread ends.
RELEASE = threading.Event()


def convert(
    value: float, unit: Literal["m", "ft"], tags: list[str] | None = None, *, exact: bool = False
) -> dict[str, Any]:
    """Convert a length to metres."""
    metres = value if unit == "m" else value * 0.3048
    return {"metres": metres, "tags": tags or [], "exact": exact}


def add(a: int, b: int = 2) -> int:
    """Add two integers."""
    return a + b


async def shout(text: str) -> str:
    """Upper-case the text, asynchronously."""
    await asyncio.sleep(0)
    return text.upper()


def thread_name() -> str:
    """The name of the thread the tool runs in."""
    return threading.current_thread().name


def blocking(seconds: float) -> str:
    """Block the calling thread (as a careless network call would) until released."""
    RELEASE.wait(seconds)
    return "released"


async def hanging() -> str:
    """Never finish."""
    await asyncio.Event().wait()
    return "unreachable"


def broken(x: int) -> str:
    """Fail with an ordinary exception."""
    raise ValueError(f"no good value {x}\nsecond line the model does not need")


def refusing() -> str:
    """Fail the way a tool is meant to."""
    raise ToolError("the index is offline")


def returns_set() -> set[int]:
    """Return something that is not JSON data."""
    return {1, 2}


def nothing() -> None:
    """Return None (sent as JSON null)."""


def own_timeout() -> str:
    """Raise TimeoutError itself (a tool failure, not the toolbox's timeout)."""
    raise TimeoutError("upstream took too long")


@tool(name="ut_lookup", version="3")
def lookup_word(word: str) -> str:
    """Look a word up."""
    return f"{word}: a word"


class ScaleTool:
    """A configurable class tool: multiplies by ``factor``."""

    description = "Multiply a number by the configured factor."
    version = "1"

    def __init__(self, factor: float, label: str = "scale") -> None:
        self.name = label
        self.factor = factor
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"x": {"type": "number"}},
            "required": ["x"],
            "additionalProperties": False,
        }

    def invoke(self, arguments: dict[str, Any]) -> str:
        return str(arguments["x"] * self.factor)


class ExplodingTool(ScaleTool):
    """A class tool whose constructor raises."""

    def __init__(self) -> None:
        raise OSError("credentials file missing\ndetails")


class NotATool:
    """Has ``invoke`` but none of the rest."""

    def invoke(self, arguments: dict[str, Any]) -> str:
        return ""
