"""Tools the agent loop may call, and the toolbox that calls them safely.

The contract of a tool (:class:`Tool`, :class:`ToolError`, :class:`ToolResult`) is
:mod:`xaytune.harness.tool_contract`, a function becomes a tool through
:class:`FunctionTool` (both re-exported here), and the built-in calculator registers
with ``@tool`` like a user's tool; a part's author imports all of it from ``xaytune.tool``.

A :class:`Toolbox` is immutable: ``register`` returns a new one. ``acall`` (the
runner's path: async, with a per-call timeout) and ``call`` (synchronous, inline, no
timeout) never raise for what a model or a tool does. Each check below gives a
:class:`ToolResult` with ``ok=False``, an ``error`` word and a ``content`` starting
with ``"error: "`` that the model sees, in this order:

- ``unauthorized-tool``: a name the harness did not grant (whether or not it exists);
- ``unknown-tool``: a granted name the toolbox does not hold;
- ``bad-arguments``: arguments that are not a JSON object or that the tool's checks
  refuse (``error: bad arguments for 'x': <one-line problem>``);
- ``tool-error``: the tool raised :class:`ToolError` (``error: <its message>``) or
  any other exception (``error: <ExceptionType>: <first line of its message>``), or
  returned something other than a ``str`` (``error: tool 'x' returned int, not a
  string``). A tool's bug is something the model sees and the spend counts as a
  tool error, never a crash of the attempt;
- ``tool-timeout``: ``acall`` only (``error: tool 'x' timed out after N s``).

How ``acall`` runs ``invoke``: an ``async def`` one is awaited under the timeout; a
synchronous one runs on the event loop when the tool declares ``inline = True``
(fast and bounded, like the calculator; no timeout applies) and otherwise in a
daemon worker thread awaited under the timeout, so a blocking tool cannot stall the
loop. A thread cannot be killed: a timed-out one is abandoned and its result
dropped. It is a daemon thread of its own rather than ``asyncio.to_thread`` because
``asyncio.run`` waits for the default executor's threads on exit, so one hung tool
would hold up the end of the run.

Identity: each tool's :class:`~xaytune.plugins.CodeIdentity` (dotted path, version,
sha256 of its module's source) is computed at registration; :attr:`Toolbox.version`
covers it, so changing a tool's code changes the toolbox version.

Arguments must be a JSON object with no duplicate keys and no NaN/Infinity, within the
limits of :mod:`xaytune.core.limits` (checked before parsing, so no input can crash the
parser): at most ``MAX_TOOL_ARGUMENTS_CHARS`` characters, ``MAX_JSON_DEPTH`` levels of
nesting and ``MAX_INT_DIGITS`` digits an integer, no number beyond a double's range and
no lone surrogate; a breach is ``bad-arguments`` whose problem starts with the limit's
word (``error: bad arguments for 'x': too-deep: ...``). A tool
with a ``check_arguments`` method checks them itself (see :class:`Tool`;
:class:`FunctionTool` does, with pydantic) and its ``parameters`` need only be an
object schema made of JSON data. For any other tool the toolbox checks the
JSON-schema subset stated in :mod:`xaytune.harness._schema_subset`.

Refusals when a toolbox is built (:class:`~xaytune.core.errors.ExecutionError`):
``not-a-tool``, ``invalid-tool-name``, ``invalid-tool``, ``unsupported-schema``,
``duplicate-tool``; a tool whose source cannot be read is ``no-source``
(:class:`~xaytune.core.errors.PluginError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import functools
import inspect
import math
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from xaytune.core.canonical import fingerprint, to_plain
from xaytune.core.errors import ExecutionError, FingerprintError
from xaytune.harness._calculator import MAX_EXPRESSION_CHARS, CalculatorError, evaluate
from xaytune.harness._frozen_json import frozen_json
from xaytune.harness._function_tool import FunctionTool, as_tool
from xaytune.harness._schema_subset import compile_subset, parse_arguments, subset_check
from xaytune.harness.tool_contract import Tool, ToolError, ToolErrorWord, ToolResult, error_text
from xaytune.models.protocol import ToolCall, ToolSchema
from xaytune.plugins import CodeIdentity, code_identity
from xaytune.plugins import tool as register_tool

__all__ = [
    "CalculatorTool",
    "FunctionTool",
    "Tool",
    "ToolError",
    "ToolErrorWord",
    "ToolResult",
    "Toolbox",
    "as_tool",
]

# The function-name rule of OpenAI-compatible endpoints: a name outside it is
# rejected by the provider, so it is refused here, before any run.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MAX_OFFERED = 256  # name tuples whose schemas a toolbox keeps (a run offers a few)


@register_tool
class CalculatorTool:
    """Exact arithmetic on one expression (see ``xaytune.harness._calculator``)."""

    name = "calculator"
    description = (
        "Evaluate an arithmetic expression exactly and return the result as a decimal "
        "number. Supports numbers, + - * / // % ** and parentheses; no variables or "
        "functions. Example: (17 * 25 - 38) / 3"
    )
    version = "1"
    inline = True  # bounded input and exponent: fast enough for the event loop
    # The arithmetic lives there: its source is part of this tool's code identity.
    __xaytune_sources__ = ("xaytune.harness._calculator",)

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "description": (
                        "Arithmetic expression, at most "
                        f"{MAX_EXPRESSION_CHARS} characters, e.g. '17 * 25 - 38'"
                    ),
                }
            },
            "required": ["expression"],
            "additionalProperties": False,
        }

    def invoke(self, arguments: dict[str, Any]) -> str:
        """Evaluate ``arguments["expression"]``; refusals raise :class:`ToolError`."""
        expression = arguments.get("expression")
        if not isinstance(expression, str):
            raise ToolError("'expression' must be a string")
        try:
            return evaluate(expression)
        except CalculatorError as err:
            raise ToolError(str(err)) from err


class Toolbox:
    """An immutable set of tools by name; ``acall`` runs one model tool call."""

    __slots__ = ("_entries", "_offered", "_version")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        entries: dict[str, _Entry] = {}
        for tool in tools:
            entry = _Entry.of(tool)
            if entry.name in entries:
                raise ExecutionError(
                    "duplicate-tool", f"tool {entry.name!r} is already in the toolbox"
                )
            entries[entry.name] = entry
        self._entries = entries
        self._offered: dict[tuple[str, ...], tuple[ToolSchema, ...]] = {}
        self._version = fingerprint(
            {
                "toolbox": "xaytune.toolbox/v1",
                "tools": [entries[name].facet() for name in sorted(entries)],
            }
        )

    @classmethod
    def default(cls) -> Toolbox:
        """The safe built-in tools: the calculator."""
        return cls((CalculatorTool(),))

    def register(self, tool: Tool) -> Toolbox:
        """A new toolbox with ``tool`` added; this one is unchanged."""
        return Toolbox((*(entry.tool for entry in self._entries.values()), tool))

    @property
    def names(self) -> frozenset[str]:
        """The names of the tools in this toolbox."""
        return frozenset(self._entries)

    @property
    def version(self) -> str:
        """Fingerprint over every tool's name, version, description, parameters and code.

        It enters the declared execution facets (C4): a schema, version or code change
        of any tool changes it (code: the identity's ``target`` and ``source_sha256``).
        The description is included because the model reads it.
        """
        return self._version

    def schemas(self, names: Iterable[str]) -> tuple[ToolSchema, ...]:
        """The schemas of ``names``, in the given order, as offered to the model.

        The same tuple for the same names, every time: its ``parameters`` are read-only
        copies (:func:`~xaytune.harness._frozen_json.frozen_json`) made once, so no
        model can change what another attempt is offered, and none pays for a copy.
        """
        key = names if type(names) is tuple else tuple(names)
        offered = self._offered.get(key)
        if offered is None:
            offered = tuple(entry.offered for entry in self._lookup(key))
            if len(self._offered) >= _MAX_OFFERED:
                self._offered.clear()
            self._offered[key] = offered
        return offered

    def identities(self, names: Iterable[str]) -> tuple[CodeIdentity, ...]:
        """The code identities of ``names``, in the given order (``unknown-tool``)."""
        return tuple(entry.identity for entry in self._lookup(names))

    def call(self, call: ToolCall, *, authorized: frozenset[str]) -> ToolResult:
        """Run ``call`` synchronously: inline, without a timeout (see :meth:`acall`).

        An ``async def`` tool is run to completion with ``asyncio.run``; inside a
        running event loop that cannot be done and is refused (``async-tool``).
        """
        admitted = self._admit(call, authorized)
        if isinstance(admitted, ToolResult):
            return admitted
        entry, arguments = admitted
        if entry.asynchronous and _loop_running():
            raise ExecutionError(
                "async-tool", f"tool {entry.name!r} is async: inside an event loop use acall"
            )
        started = time.perf_counter()
        try:
            content = entry.tool.invoke(arguments)
            if entry.asynchronous:
                content = asyncio.run(content)
        except Exception as error:
            return _failed(call, error, time.perf_counter() - started)
        return _answered(call, content, time.perf_counter() - started)

    async def acall(
        self, call: ToolCall, *, authorized: frozenset[str], timeout_s: float | None
    ) -> ToolResult:
        """Run ``call`` without blocking the event loop, bounded by ``timeout_s`` seconds.

        Same checks, in the same order, as :meth:`call`; ``None`` means no timeout. A
        ``timeout_s`` that is not a positive number is refused (``invalid-timeout``).
        """
        _check_timeout(timeout_s)
        admitted = self._admit(call, authorized)
        if isinstance(admitted, ToolResult):
            return admitted
        entry, arguments = admitted
        deadline = asyncio.timeout(timeout_s)
        started = time.perf_counter()
        try:
            async with deadline:
                if entry.asynchronous:
                    content = await entry.tool.invoke(arguments)
                elif entry.inline:
                    content = entry.tool.invoke(arguments)
                else:
                    content = await _in_daemon_thread(entry.tool.invoke, arguments)
        except TimeoutError as error:
            elapsed = time.perf_counter() - started
            if not deadline.expired():  # the tool's own TimeoutError: a tool failure
                return _failed(call, error, elapsed)
            message = f"error: tool {call.name!r} timed out after {timeout_s:g} s"
            return ToolResult(call.id, call.name, message, False, "tool-timeout", elapsed)
        except Exception as error:
            return _failed(call, error, time.perf_counter() - started)
        return _answered(call, content, time.perf_counter() - started)

    def _lookup(self, names: Iterable[str]) -> list[_Entry]:
        entries = []
        for name in names:
            entry = self._entries.get(name)
            if entry is None:
                raise ExecutionError("unknown-tool", f"tool {name!r} is not in the toolbox")
            entries.append(entry)
        return entries

    def _admit(
        self, call: ToolCall, authorized: frozenset[str]
    ) -> tuple[_Entry, dict[str, Any]] | ToolResult:
        """The entry and checked arguments of ``call``, or the result refusing it.

        Authorization is checked first, so a name the harness did not grant gets the
        same answer whether or not the toolbox holds it.
        """
        name = call.name
        if name not in authorized:
            return _refused(call, "unauthorized-tool", f"tool {name!r} is not authorized")
        entry = self._entries.get(name)
        if entry is None:
            return _refused(call, "unknown-tool", f"tool {name!r} does not exist")
        arguments, problem = parse_arguments(call.arguments)
        if problem is None:
            try:
                checked = entry.check(arguments)
                if not isinstance(checked, dict | str):
                    kind = type(checked).__name__
                    raise TypeError(f"check_arguments returned {kind}, not a dict or a string")
            except Exception as error:  # a bug in the tool's own checks
                return _failed(call, error, 0.0)
            if isinstance(checked, dict):
                return entry, checked
            problem = " ".join(checked.split())
        return _refused(call, "bad-arguments", f"bad arguments for {name!r}: {problem}")

    def __repr__(self) -> str:
        return f"Toolbox({sorted(self._entries)})"


def _refused(call: ToolCall, error: ToolErrorWord, message: str) -> ToolResult:
    return ToolResult(call.id, call.name, f"error: {message}", False, error, 0.0)


def _failed(call: ToolCall, error: Exception, elapsed: float) -> ToolResult:
    text = error.detail if isinstance(error, ToolError) else error_text(error)
    return ToolResult(call.id, call.name, f"error: {text}", False, "tool-error", elapsed)


def _answered(call: ToolCall, content: Any, elapsed: float) -> ToolResult:
    if not isinstance(content, str):
        message = f"error: tool {call.name!r} returned {type(content).__name__}, not a string"
        return ToolResult(call.id, call.name, message, False, "tool-error", elapsed)
    return ToolResult(call.id, call.name, content, True, None, elapsed)


def _check_timeout(timeout_s: float | None) -> None:
    if timeout_s is None:
        return
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or not math.isfinite(timeout_s)
        or timeout_s <= 0
    ):
        raise ExecutionError(
            "invalid-timeout", f"timeout_s must be a positive number or None, not {timeout_s!r}"
        )


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _in_daemon_thread(invoke: Callable[[dict[str, Any]], Any], arguments: Any) -> Any:
    """``invoke(arguments)`` in a daemon thread of its own, awaited on this loop."""
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()  # as asyncio.to_thread does

    def settle(value: Any, error: BaseException | None) -> None:
        if outcome.done():  # cancelled: the call timed out and nobody waits
            return
        if error is None:
            outcome.set_result(value)
        else:
            outcome.set_exception(error)

    def work() -> None:
        value, error = None, None
        try:
            value = context.run(invoke, arguments)
        except StopIteration as stop:  # a future cannot hold it (PEP 479 turns it so too)
            error = RuntimeError(f"tool raised StopIteration: {stop}")
        except BaseException as raised:
            error = raised
        with contextlib.suppress(RuntimeError):  # a closed loop: the result has no reader
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name="xaytune-tool", daemon=True).start()
    return await outcome


# ---------------------------------------------------------------- registration


@dataclass(frozen=True, slots=True)
class _Entry:
    """A registered tool with a snapshot of its schema and identity taken at registration.

    ``check`` returns the arguments to invoke with or a one-line problem; for a tool
    without ``check_arguments`` it is the compiled schema subset.
    """

    tool: Tool
    name: str
    description: str
    version: str
    parameters: dict[str, Any]
    check: Callable[[dict[str, Any]], dict[str, Any] | str]
    asynchronous: bool
    inline: bool
    identity: CodeIdentity
    offered: ToolSchema  # the schema as offered to the model: read-only

    @classmethod
    def of(cls, tool: Tool) -> _Entry:
        if not isinstance(tool, Tool):
            raise ExecutionError("not-a-tool", f"{tool!r} does not implement the Tool protocol")
        name = tool.name
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise ExecutionError(
                "invalid-tool-name", f"tool name {name!r} must match [A-Za-z0-9_-]{{1,64}}"
            )
        for field in ("description", "version"):
            if not isinstance(getattr(tool, field), str):
                raise ExecutionError("invalid-tool", f"tool {name!r}: {field} must be a string")
        inline = getattr(tool, "inline", False)
        if not isinstance(inline, bool):
            raise ExecutionError("invalid-tool", f"tool {name!r}: inline must be a boolean")
        # Snapshot: a later mutation of tool.parameters cannot desynchronise the
        # checker, the offered schema and the toolbox version.
        parameters = copy.deepcopy(tool.parameters)
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise ExecutionError(
                "unsupported-schema", f"tool {name!r}: parameters must be an object schema"
            )
        return cls(
            tool,
            name,
            tool.description,
            tool.version,
            parameters,
            _checker(tool, parameters),
            inspect.iscoroutinefunction(tool.invoke),
            inline,
            code_identity(
                "tool",
                name,
                getattr(tool, "__wrapped__", tool),
                version=tool.version,
                where=f"tool {name!r}",
            ),
            ToolSchema(name, tool.description, frozen_json(parameters)),
        )

    def facet(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "parameters": self.parameters,
            "target": self.identity.target,
            "source_sha256": self.identity.source_sha256,
        }


def _checker(tool: Tool, parameters: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    where = f"tool {tool.name!r} parameters"
    own = getattr(tool, "check_arguments", None)
    if own is None:
        return functools.partial(subset_check, compile_subset(parameters, where))
    if not callable(own):
        raise ExecutionError("invalid-tool", f"tool {tool.name!r}: check_arguments is not a method")
    try:  # offered to the model and fingerprinted: it must be JSON data
        to_plain(parameters, where=where)
    except FingerprintError as error:
        raise ExecutionError("unsupported-schema", f"{where}: {error}") from None
    return own  # type: ignore[no-any-return]
