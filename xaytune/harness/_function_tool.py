"""User tools: a plain function (sync or ``async def``) or a class, made a :class:`Tool`.

:class:`FunctionTool` wraps a function. Its name is the name the ``@tool`` decorator
registered, else the function's ``__name__`` (or ``name=``); its description is the
docstring; its version is the declared one, else ``"0"``. Pydantic builds its JSON
schema from the signature (:func:`xaytune.plugins.parameters_model`) and checks every
call's arguments strictly, as JSON (``"3"`` is not an ``int``; unknown and missing
keys are refused): the toolbox uses :meth:`FunctionTool.check_arguments` instead of
its schema-subset checker. The function's return value is sent to the model as is
when it is a ``str``, otherwise as canonical JSON text (RFC 8785: ``5``, ``null``,
``{"a":1}``); a value that is not JSON data is a ``tool-error`` the model sees.

:func:`as_tool` turns what a config names into a tool. Refusals
(:class:`~xaytune.core.errors.PluginError`): ``bad-part`` (not a tool; a signature
pydantic cannot describe; a constructor that raised), ``bad-part-params`` (params that
do not fit a class's constructor, or params given for a function or an instance).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from xaytune.core import limits
from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import FingerprintError, PluginError
from xaytune.core.limits import clip
from xaytune.harness.tool_contract import Tool, ToolError, error_text
from xaytune.plugins import check_params, parameters_model, problem_of, target_path

__all__ = ["FunctionTool", "as_tool"]

_NOT_A_TOOL = "is not a tool (a function, or a class/instance with name, description, " + (
    "parameters, version, invoke)"
)


class FunctionTool:
    """A plain function, sync or ``async def``, as a :class:`Tool`.

    ``invoke`` is a coroutine function exactly when ``fn`` is one, so the toolbox
    awaits an async tool and runs a sync one in a worker thread (``inline`` is false:
    user code is not assumed to be fast). ``__wrapped__`` is ``fn``: the toolbox
    identifies the tool by the function's code, not by this wrapper's.
    """

    inline = False

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        version: str | None = None,
        where: str | None = None,
    ) -> None:
        if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
            raise PluginError("bad-part", f"{where or 'tool'}: {target_path(fn)} {_NOT_A_TOOL}")
        declared = getattr(fn, "__xaytune_part__", None)
        registered = declared[1] if isinstance(declared, tuple) and declared[0] == "tool" else None
        self.name: str = name or registered or fn.__name__
        where = where or f"tool {self.name!r}"
        self.description: str = description if description is not None else inspect.getdoc(fn) or ""
        self.version: str = version or getattr(fn, "__xaytune_version__", None) or "0"
        self.__wrapped__ = fn
        self._model = parameters_model(fn, skip=0, where=where)
        try:
            self.parameters: dict[str, Any] = self._model.model_json_schema()
        except Exception as error:  # an annotation with no JSON schema (a callable, ...)
            raise PluginError("bad-part", f"{where}: {type(error).__name__}: {error}") from None
        signature = inspect.signature(fn)
        self._positional = tuple(
            key for key, p in signature.parameters.items() if p.kind is p.POSITIONAL_ONLY
        )
        # The toolbox reads ``invoke``'s kind (coroutine function or not) to decide
        # how to run it; an instance attribute lets one class serve both kinds.
        self.invoke: Callable[[dict[str, Any]], Any] = (
            self._invoke_async if inspect.iscoroutinefunction(fn) else self._invoke_sync
        )

    def check_arguments(self, arguments: dict[str, Any]) -> dict[str, Any] | str:
        """The arguments to invoke with, or a one-line problem (``key: message``).

        The toolbox hands over arguments already within :mod:`xaytune.core.limits`; a
        direct caller's are held to the same depth and size (``too-deep``,
        ``too-large``) before pydantic reads them. A problem names at most a clipped
        key path, never the whole offending value.
        """
        try:
            text = json.dumps(arguments, allow_nan=False)
            limits.check_json_text(
                text,
                what="the arguments text",
                max_size=limits.MAX_TOOL_ARGUMENTS_CHARS,
                size_name="MAX_TOOL_ARGUMENTS_CHARS",
            )
            checked = self._model.model_validate_json(text)
        except limits.LimitError as breach:
            return str(breach)
        except RecursionError:  # a direct caller's structure, nested past the stack
            return f"too-deep: the arguments nest deeper than {limits.MAX_JSON_DEPTH} levels"
        except ValidationError as error:
            return clip(" ".join(problem_of(error).split()), 300)
        except (TypeError, ValueError) as error:  # not JSON data (a direct caller)
            return f"not JSON data ({clip(str(error), 200)})"
        return {key: getattr(checked, key) for key in type(checked).model_fields}

    def _invoke_sync(self, arguments: dict[str, Any]) -> str:
        args, kwargs = self._split(arguments)
        return self._content(self.__wrapped__(*args, **kwargs))

    async def _invoke_async(self, arguments: dict[str, Any]) -> str:
        args, kwargs = self._split(arguments)
        return self._content(await self.__wrapped__(*args, **kwargs))

    def _split(self, arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        kwargs = dict(arguments)
        return [kwargs.pop(key) for key in self._positional], kwargs

    def _content(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        try:
            return canonical_bytes(value).decode("utf-8")
        except FingerprintError as error:
            raise ToolError(
                f"tool {self.name!r} returned {type(value).__name__}, which is not JSON data "
                f"({error.reason})"
            ) from None

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r}, {target_path(self.__wrapped__)})"


def as_tool(obj: object, params: dict[str, Any] | None = None, *, where: str) -> Tool:
    """``obj`` as a tool: a function wrapped, a class instantiated with ``params``
    (checked against its constructor's signature), an instance as it is.

    ``params`` (``None`` or ``{}`` for none) are only for a class: a function or an
    instance given params is refused (``bad-part-params``).
    """
    if inspect.isclass(obj):
        if not callable(getattr(obj, "invoke", None)):
            raise PluginError("bad-part", f"{where}: {target_path(obj)} {_NOT_A_TOOL}")
        model = parameters_model(obj, skip=0, where=where)
        checked = check_params(model, params or {}, where=where)
        try:
            instance = obj(**checked)
        except Exception as error:
            raise PluginError(
                "bad-part",
                f"{where}: constructing {target_path(obj)} raised {error_text(error)}",
            ) from None
        if not isinstance(instance, Tool):
            raise PluginError("bad-part", f"{where}: {target_path(obj)} {_NOT_A_TOOL}")
        return instance
    is_function = inspect.isfunction(obj) or inspect.ismethod(obj)
    if not (is_function or isinstance(obj, Tool)):
        raise PluginError("bad-part", f"{where}: {target_path(obj)} {_NOT_A_TOOL}")
    if params:
        kind = "a function" if is_function else "a tool instance"
        raise PluginError(
            "bad-part-params", f"{where}: {target_path(obj)} is {kind}, which takes no params"
        )
    if is_function:
        return FunctionTool(obj, where=where)  # type: ignore[arg-type]
    return obj  # type: ignore[return-value]
