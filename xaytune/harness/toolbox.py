"""Tools the agent loop may call, and the toolbox that calls them safely.

A :class:`Toolbox` is immutable: ``register`` returns a new one. ``call`` never
raises for model misuse: an unauthorized or unknown tool, malformed arguments and a
tool-level failure all come back as a :class:`ToolResult` with ``ok=False``, an
``error`` word and a ``content`` starting with ``"error: "`` that the model sees. A
tool raising anything other than :class:`ToolError` is a bug and propagates.

Argument checking supports a small JSON-schema subset, checked at ``register`` time
(anything else is refused with reason ``unsupported-schema``):

- ``type``: one of ``object``, ``array``, ``string``, ``integer``, ``number``,
  ``boolean`` (a single word; absent means any JSON value; the top level must be
  ``object``). ``integer`` means a JSON number written without fraction or exponent;
  ``number`` is any finite number; booleans are never numbers.
- ``properties`` (a schema per key), ``required`` (declared keys only) and
  ``additionalProperties`` (a boolean; default true) on objects;
- ``items`` (one schema for every element) on arrays;
- ``description`` and ``title`` anywhere (annotations, not checked).

Arguments must be a JSON object with no duplicate keys and no NaN/Infinity.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from xaytune.core.canonical import fingerprint
from xaytune.core.errors import ExecutionError, XaytuneError
from xaytune.harness._calculator import MAX_EXPRESSION_CHARS, CalculatorError, evaluate
from xaytune.models._protocol import ToolCall, ToolSchema

__all__ = [
    "CalculatorTool",
    "Tool",
    "ToolError",
    "ToolErrorWord",
    "ToolResult",
    "Toolbox",
]

ToolErrorWord = Literal["unauthorized-tool", "unknown-tool", "bad-arguments", "tool-error"]

# The function-name rule of OpenAI-compatible endpoints: a name outside it is
# rejected by the provider, so it is refused here, before any run.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@runtime_checkable
class Tool(Protocol):
    """A synchronous tool: a name, a JSON-schema of its arguments, and ``invoke``.

    ``invoke`` receives arguments already checked against ``parameters`` and returns
    the text the model sees; it raises :class:`ToolError` for a tool-level failure.
    ``version`` changes whenever the tool's behaviour does.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    version: str

    def invoke(self, arguments: dict[str, Any]) -> str: ...


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


class CalculatorTool:
    """Exact arithmetic on one expression (see ``xaytune.harness._calculator``)."""

    name = "calculator"
    description = (
        "Evaluate an arithmetic expression exactly and return the result as a decimal "
        "number. Supports numbers, + - * / // % ** and parentheses; no variables or "
        "functions. Example: (17 * 25 - 38) / 3"
    )
    version = "1"

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
    """An immutable set of tools by name; ``call`` runs one model tool call."""

    __slots__ = ("_entries", "_version")

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
        """Fingerprint over every tool's name, version, description and parameters.

        It enters the declared execution facets (C4): a schema or version change of
        any tool changes it. The description is included because the model reads it.
        """
        return self._version

    def schemas(self, names: Iterable[str]) -> tuple[ToolSchema, ...]:
        """The schemas of ``names``, in the given order, as offered to the model."""
        schemas = []
        for name in names:
            entry = self._entries.get(name)
            if entry is None:
                raise ExecutionError("unknown-tool", f"tool {name!r} is not in the toolbox")
            schemas.append(
                ToolSchema(entry.name, entry.description, copy.deepcopy(entry.parameters))
            )
        return tuple(schemas)

    def call(self, call: ToolCall, *, authorized: frozenset[str]) -> ToolResult:
        """Run ``call``; model misuse and tool failures become an error result.

        Authorization is checked first, so a name the harness did not grant gets the
        same answer whether or not the toolbox holds it.
        """
        name = call.name
        if name not in authorized:
            return _refused(call, "unauthorized-tool", f"tool {name!r} is not authorized")
        entry = self._entries.get(name)
        if entry is None:
            return _refused(call, "unknown-tool", f"tool {name!r} does not exist")
        arguments, problem = _parse_arguments(call.arguments)
        if problem is None:
            problem = _violation(entry.checker, arguments, "arguments")
        if problem is not None:
            return _refused(call, "bad-arguments", f"bad arguments for {name!r}: {problem}")
        started = time.perf_counter()
        try:
            content = entry.tool.invoke(arguments)
        except ToolError as err:
            elapsed = time.perf_counter() - started
            return ToolResult(call.id, name, f"error: {err.detail}", False, "tool-error", elapsed)
        elapsed = time.perf_counter() - started
        if not isinstance(content, str):
            raise ExecutionError(
                "bad-tool-result",
                f"tool {name!r} returned {type(content).__name__}, not a string",
            )
        return ToolResult(call.id, name, content, True, None, elapsed)

    def __repr__(self) -> str:
        return f"Toolbox({sorted(self._entries)})"


def _refused(call: ToolCall, error: ToolErrorWord, message: str) -> ToolResult:
    return ToolResult(call.id, call.name, f"error: {message}", False, error, 0.0)


# ---------------------------------------------------------------- registration


@dataclass(frozen=True, slots=True)
class _Check:
    """A compiled schema node: what one value must satisfy."""

    type: str | None
    properties: dict[str, _Check]
    required: tuple[str, ...]
    closed: bool
    items: _Check | None


@dataclass(frozen=True, slots=True)
class _Entry:
    """A registered tool with a snapshot of its schema taken at registration."""

    tool: Tool
    name: str
    description: str
    version: str
    parameters: dict[str, Any]
    checker: _Check

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
        # Snapshot: a later mutation of tool.parameters cannot desynchronise the
        # checker, the offered schema and the toolbox version.
        parameters = copy.deepcopy(tool.parameters)
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise ExecutionError(
                "unsupported-schema", f"tool {name!r}: parameters must be an object schema"
            )
        checker = _compile(parameters, f"tool {name!r} parameters")
        return cls(tool, name, tool.description, tool.version, parameters, checker)

    def facet(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "parameters": self.parameters,
        }


_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "description", "title"}
)


def _compile(schema: Any, where: str) -> _Check:
    def refuse(problem: str) -> ExecutionError:
        return ExecutionError("unsupported-schema", f"{where}: {problem}")

    if not isinstance(schema, dict):
        raise refuse("a schema must be an object")
    unknown = sorted(set(schema) - _KEYWORDS)
    if unknown:
        raise refuse(f"keywords {unknown} are outside the supported subset")
    kind = schema.get("type")
    if kind is not None and (not isinstance(kind, str) or kind not in _TYPES):
        raise refuse(f"type {kind!r} is not one of {sorted(_TYPES)}")
    for annotation in ("description", "title"):
        if not isinstance(schema.get(annotation, ""), str):
            raise refuse(f"{annotation} must be a string")
    object_words = {"properties", "required", "additionalProperties"} & set(schema)
    if object_words and kind != "object":
        raise refuse(f"{sorted(object_words)} need type 'object'")
    if "items" in schema and kind != "array":
        raise refuse("items needs type 'array'")

    declared = schema.get("properties", {})
    if not isinstance(declared, dict):
        raise refuse("properties must be an object")
    properties = {key: _compile(sub, f"{where}.{key}") for key, sub in declared.items()}
    required = schema.get("required", [])
    if (
        not isinstance(required, list)
        or not all(isinstance(key, str) for key in required)
        or len(set(required)) != len(required)
    ):
        raise refuse("required must be a list of distinct strings")
    undeclared = sorted(set(required) - set(properties))
    if undeclared:
        raise refuse(f"required keys {undeclared} are not declared in properties")
    closed = schema.get("additionalProperties", True)
    if not isinstance(closed, bool):
        raise refuse("additionalProperties must be true or false")
    items = _compile(schema["items"], f"{where}[]") if "items" in schema else None
    return _Check(kind, properties, tuple(required), not closed, items)


# ---------------------------------------------------------------- checking calls


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise ValueError("duplicate key in object")
    return mapping


def _parse_arguments(text: str) -> tuple[Any, str | None]:
    """The arguments as a dict, or a short reason why they are not a JSON object."""
    try:
        arguments = json.loads(
            text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys
        )
    except (TypeError, ValueError) as err:  # JSONDecodeError is a ValueError
        return None, f"not valid JSON ({str(err).splitlines()[0]})"
    if not isinstance(arguments, dict):
        return None, f"expected a JSON object, got {_json_type(arguments)}"
    return arguments, None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _violation(check: _Check, value: Any, path: str) -> str | None:
    """The first way ``value`` breaks ``check``, or None. Cheap: no allocation on success."""
    kind = check.type
    if kind is not None:
        actual = _json_type(value)
        if actual != kind and not (kind == "number" and actual == "integer"):
            return f"{path} must be {kind}, got {actual}"
    if isinstance(value, dict):
        for key in check.required:
            if key not in value:
                return f"missing required key {key!r} in {path}"
        for key, item in value.items():
            sub = check.properties.get(key)
            if sub is None:
                if check.closed:
                    return f"unexpected key {key!r} in {path}"
                continue
            problem = _violation(sub, item, f"{path}.{key}")
            if problem is not None:
                return problem
    elif isinstance(value, list) and check.items is not None:
        for index, item in enumerate(value):
            problem = _violation(check.items, item, f"{path}[{index}]")
            if problem is not None:
                return problem
    return None
