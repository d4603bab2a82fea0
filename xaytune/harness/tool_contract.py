"""What a tool is and what calling one gives: the contract between a tool and the toolbox.

:class:`Tool` is the protocol every tool meets (a plain function becomes one through
:class:`~xaytune.harness.toolbox.FunctionTool`); :class:`ToolError` is the failure a
tool raises for the model to see; :class:`ToolResult` is what one call gave, with the
``error`` word (:data:`ToolErrorWord`) the toolbox's module docstring defines. This
module holds no behaviour of its own: the toolbox and the function-tool wrapper both
build on it, so neither needs the other's internals.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from xaytune.core.errors import XaytuneError

__all__ = ["Tool", "ToolError", "ToolErrorWord", "ToolResult", "error_text"]

ToolErrorWord = Literal[
    "unauthorized-tool", "unknown-tool", "bad-arguments", "tool-error", "tool-timeout"
]


@runtime_checkable
class Tool(Protocol):
    """A tool: a name, a JSON-schema of its arguments, and ``invoke``.

    ``invoke`` receives arguments already checked and returns the text the model
    sees; it may be ``async def``. It raises :class:`ToolError` for a tool-level
    failure. ``version`` changes whenever the tool's behaviour does.

    Optional members, read once at registration:

    - ``check_arguments(arguments: dict) -> dict | str``: the tool checks its own
      arguments and returns the ones to invoke with, or a one-line problem (the model
      sees ``bad-arguments``); the toolbox's schema-subset checker is then not used.
    - ``inline: bool`` (default false): a synchronous ``invoke`` that is fast and
      bounded runs on the event loop in ``acall``, without a timeout.
    - ``__wrapped__``: the function a wrapper tool runs; the tool's code identity is
      taken from it rather than from the wrapper's class.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    version: str

    def invoke(self, arguments: dict[str, Any]) -> str | Awaitable[str]: ...


class ToolError(XaytuneError):
    """A tool-level failure the model should see (e.g. division by zero)."""

    def __init__(self, message: str) -> None:
        super().__init__("tool-error", message)
        self.detail = " ".join(message.split())


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call. ``content`` is what the model sees.

    ``elapsed_s`` is the wall time of ``invoke`` (``time.perf_counter``); a call
    refused before ``invoke`` spent no tool time and records ``0.0``.
    """

    call_id: str
    name: str
    content: str
    ok: bool
    error: ToolErrorWord | None
    elapsed_s: float


def error_text(error: BaseException) -> str:
    """``ExceptionType: first line of its message`` (just the type when it has none):
    how a tool's unexpected exception reads to the model."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
