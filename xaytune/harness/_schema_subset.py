"""Checking a tool call's arguments against the supported JSON-schema subset.

A tool without its own ``check_arguments`` (see :class:`~xaytune.harness.toolbox.Tool`)
has its ``parameters`` compiled at registration (:func:`compile_subset`) into a
:class:`Check` tree; anything outside this subset is refused with reason
``unsupported-schema`` (:class:`~xaytune.core.errors.ExecutionError`):

- ``type``: one of ``object``, ``array``, ``string``, ``integer``, ``number``,
  ``boolean`` (a single word; absent means any JSON value; the top level must be
  ``object``). ``integer`` means a JSON number written without fraction or exponent;
  ``number`` is any finite number; booleans are never numbers.
- ``properties`` (a schema per key), ``required`` (declared keys only) and
  ``additionalProperties`` (a boolean; default true) on objects;
- ``items`` (one schema for every element) on arrays;
- ``description`` and ``title`` anywhere (annotations, not checked).

:func:`parse_arguments` reads a call's arguments text as a JSON object within the limits
of :mod:`xaytune.core.limits` (for every tool), and :func:`subset_check` gives the
arguments or the first way they break a compiled :class:`Check`: a one-line problem the
model sees as ``bad-arguments``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xaytune.core import limits
from xaytune.core.errors import ExecutionError
from xaytune.core.limits import clip, quote

__all__ = ["Check", "compile_subset", "parse_arguments", "subset_check"]


@dataclass(frozen=True, slots=True)
class Check:
    """A compiled schema node: what one value must satisfy."""

    type: str | None
    properties: dict[str, Check]
    required: tuple[str, ...]
    closed: bool
    items: Check | None


_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "description", "title"}
)


def compile_subset(schema: Any, where: str) -> Check:
    """``schema`` compiled; outside the subset: ``unsupported-schema`` naming ``where``."""

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
    properties = {key: compile_subset(sub, f"{where}.{key}") for key, sub in declared.items()}
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
    items = compile_subset(schema["items"], f"{where}[]") if "items" in schema else None
    return Check(kind, properties, tuple(required), not closed, items)


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise ValueError("duplicate key in object")
    return mapping


def parse_arguments(text: str) -> tuple[Any, str | None]:
    """The arguments as a dict, or a short reason why they are not a JSON object.

    Bounded before parsing (:mod:`xaytune.core.limits`): at most
    ``MAX_TOOL_ARGUMENTS_CHARS`` characters, ``MAX_JSON_DEPTH`` levels and
    ``MAX_INT_DIGITS`` digits an integer; a number that overflows a double and a lone
    surrogate are refused too. The problem starts with the limit's word.
    """
    if not isinstance(text, str):
        return None, f"not valid JSON (arguments are {type(text).__name__}, not text)"
    try:
        arguments = limits.loads(
            text,
            what="the arguments text",
            max_size=limits.MAX_TOOL_ARGUMENTS_CHARS,
            size_name="MAX_TOOL_ARGUMENTS_CHARS",
            parse_constant=_refuse_constant,
            object_pairs_hook=_unique_keys,
        )
    except limits.LimitError as breach:
        return None, str(breach)
    except ValueError as err:  # JSONDecodeError is a ValueError
        return None, f"not valid JSON ({clip(str(err).splitlines()[0], 200)})"
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


def subset_check(check: Check, arguments: dict[str, Any]) -> dict[str, Any] | str:
    """``arguments`` when they satisfy ``check``, else the first way they do not."""
    problem = _violation(check, arguments, "arguments")
    return arguments if problem is None else problem


def _violation(check: Check, value: Any, path: str) -> str | None:
    """The first way ``value`` breaks ``check``, or None. Cheap: no allocation on success."""
    kind = check.type
    if kind is not None:
        actual = _json_type(value)
        if actual != kind and not (kind == "number" and actual == "integer"):
            return f"{clip(path)} must be {kind}, got {actual}"
    if isinstance(value, dict):
        for key in check.required:
            if key not in value:
                return f"missing required key {quote(key)} in {clip(path)}"
        for key, item in value.items():
            sub = check.properties.get(key)
            if sub is None:
                if check.closed:
                    return f"unexpected key {quote(key)} in {clip(path)}"
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
