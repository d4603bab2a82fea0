"""Parameters from a signature: pydantic builds the schema and validates values.

A tool's arguments, a loop's parameters and a scorer's parameters are all declared
the same way, by a Python signature with type hints; :func:`parameters_model` turns
the parameters after the first ``skip`` into a strict pydantic model (unknown keys
refused, missing required keys refused, types checked as JSON types), whose
``model_json_schema()`` is what a model is offered for a tool.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from xaytune.core.errors import PluginError

__all__ = ["check_params", "parameters_model", "problem_of"]


# The models built, by (function, skip): a scorer is resolved per replicate and per
# evaluator, and building a pydantic model costs ~1 ms; a refusal is never kept.
_built: dict[tuple[Any, int], type[BaseModel]] = {}


def parameters_model(fn: Any, *, skip: int, where: str) -> type[BaseModel]:
    """A strict model of ``fn``'s parameters after the first ``skip`` ones (built once
    per function: the same class each time).

    ``*args``/``**kwargs`` are refused (``bad-part``): a part's parameters are named.
    An unannotated parameter takes any JSON value.
    """
    try:
        return _built[(fn, skip)]
    except KeyError:
        model = _built[(fn, skip)] = _parameters_model(fn, skip=skip, where=where)
        return model
    except TypeError:  # an unhashable callable: built each time
        return _parameters_model(fn, skip=skip, where=where)


def _parameters_model(fn: Any, *, skip: int, where: str) -> type[BaseModel]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise PluginError("bad-part", f"{where}: no readable signature ({error})") from None
    hints = _hints(fn)
    fields: dict[str, Any] = {}
    for index, (name, parameter) in enumerate(signature.parameters.items()):
        if index < skip:
            if parameter.kind in (parameter.KEYWORD_ONLY, parameter.VAR_KEYWORD):
                raise PluginError(
                    "bad-part", f"{where}: expects {skip} positional parameter(s) first"
                )
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise PluginError(
                "bad-part", f"{where}: parameter {name!r}: *args/**kwargs are not declared"
            )
        annotation = hints.get(name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (annotation, default)
    if len(signature.parameters) < skip:
        raise PluginError("bad-part", f"{where}: takes fewer than {skip} positional parameters")
    title = getattr(fn, "__name__", "parameters")
    try:
        return create_model(  # type: ignore[call-overload,no-any-return]
            f"{title}_parameters",
            __config__=ConfigDict(extra="forbid", strict=True),
            **fields,
        )
    except Exception as error:  # an annotation pydantic cannot build a schema for
        raise PluginError("bad-part", f"{where}: {type(error).__name__}: {error}") from None


def _hints(fn: Any) -> dict[str, Any]:
    try:
        target = fn.__init__ if inspect.isclass(fn) else fn
        return inspect.get_annotations(target, eval_str=True)
    except Exception:
        return {}


def problem_of(error: ValidationError) -> str:
    """The first problem of a validation error, as ``key: message``."""
    first = error.errors()[0]
    key = ".".join(str(part) for part in first["loc"]) or "value"
    if first["type"] == "extra_forbidden":
        return f"{key}: unknown parameter"
    if first["type"] == "missing":
        return f"{key}: missing"
    return f"{key}: {first['msg']}"


def check_params(model: type[BaseModel], params: dict[str, Any], *, where: str) -> dict[str, Any]:
    """``params`` validated against ``model`` (as JSON: what config or a model gives)."""
    try:
        checked = model.model_validate_json(json.dumps(params))
    except (TypeError, ValueError) as error:
        if isinstance(error, ValidationError):
            raise PluginError("bad-part-params", f"{where}: {problem_of(error)}") from None
        raise PluginError("bad-part-params", f"{where}: not JSON data ({error})") from None
    return {name: getattr(checked, name) for name in type(checked).model_fields}
