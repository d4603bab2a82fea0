"""A task's environment at run time: a fresh instance per attempt, its tools called
through the runner.

The protocol and its resolution are :mod:`xaytune.plugins._environment`
(:class:`Environment` is re-exported here). For a task-bound spec whose task names an
environment, :func:`open_environment` (called when an attempt starts) resolves it,
refuses ``code-mismatch`` when its code is not the code the task pins, builds a fresh
instance from the task's params, and wraps each tool the task declares as an
:class:`EnvironmentTool` in a :class:`~xaytune.harness.toolbox.Toolbox` of its own.
The attempt's host routes a call to it by name; everything else is a toolbox tool's
path: the tool-call budget, the per-call timeout, the ``tool_result`` event in the
trajectory, the spend. A declared tool the instance does not implement is
``unknown-tool``.

- **Arguments** are checked against the declared parameters reduced to the toolbox's
  schema subset (``type``, ``properties``, ``required``, ``additionalProperties``,
  ``items``; see :mod:`xaytune.harness._schema_subset`); other keywords (``enum``,
  ``default``, ``format``, ...) are what the model reads, not checked.
- **Results**: text as the function returns it; any other value as JSON, or its
  ``str()`` when it is not JSON data. A function that raises is a tool error the model
  sees (``error: ValueError: ...``) and the spend counts.
- **A timed-out call** leaves its thread running (a thread cannot be stopped), so the
  environment's state is unknown from then on: the environment is *abandoned*, and
  every later call to it is a tool error saying so.
- **Tools held out**: an instance with ``hidden_tools(turn) -> names`` offers those
  declared tools only from a later user turn on (turns from 0); before it they are not
  offered, and a call to one goes to the harness's toolbox, which refuses it as a tool
  it does not have.
- **State**: :meth:`AttemptEnvironment.state` is the instance's ``state()`` (JSON
  data), recorded after each user turn.
- **The answer**: an environment task is scored on what the agent did.
  :meth:`AttemptEnvironment.answer` is the canonical JSON of ``{"environment": {"name",
  "params"}, "turns": [[{"name", "arguments"}, ...], ...], "text": <the harness's
  extracted answer or null>}``: every call to an environment tool, per user turn, in
  order, with its arguments exactly as the model sent them (the JSON text: ``20.0`` and
  ``20`` stay apart, as they do for a checker that runs the call), refused calls
  included.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import Task
from xaytune.core.errors import ExecutionError, FingerprintError
from xaytune.harness._schema_subset import compile_subset, subset_check
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.harness.toolbox import Toolbox, ToolError, ToolResult
from xaytune.models.protocol import ToolCall, ToolSchema
from xaytune.plugins import Environment, ResolvedEnvironment, resolve_environment

__all__ = [
    "AttemptEnvironment",
    "Environment",
    "EnvironmentTool",
    "environment_config",
    "open_environment",
]

_SUBSET = frozenset({"type", "properties", "required", "additionalProperties", "items"})
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})


def _checked_schema(schema: Any) -> dict[str, Any]:
    """``schema`` reduced to the subset the toolbox checks (module docstring)."""
    if not isinstance(schema, dict):
        return {}
    kept: dict[str, Any] = {}
    if schema.get("type") in _TYPES:
        kept["type"] = schema["type"]
    properties = schema.get("properties")
    if isinstance(properties, dict):
        kept["properties"] = {k: _checked_schema(v) for k, v in properties.items()}
        required = schema.get("required")
        if isinstance(required, list):
            kept["required"] = [name for name in required if name in properties]
    if isinstance(schema.get("additionalProperties"), bool):
        kept["additionalProperties"] = schema["additionalProperties"]
    if isinstance(schema.get("items"), dict):
        kept["items"] = _checked_schema(schema["items"])
    return {key: value for key, value in kept.items() if key in _SUBSET}


@functools.lru_cache(maxsize=1024)
def _check(schema_json: str, where: str) -> Any:
    return compile_subset(_checked_schema(json.loads(schema_json)), where)


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return canonical_bytes(value).decode()
    except (FingerprintError, RecursionError):
        return str(value)


class EnvironmentTool:
    """A tool a task declares, run by its environment's function (module docstring)."""

    inline = False  # a daemon thread under the timeout: an environment may block

    def __init__(
        self,
        declared: ToolSchema,
        function: Callable[..., Any],
        session: AttemptEnvironment,
        factory: Callable[..., Any],
        version: str,
    ) -> None:
        self.name = declared.name
        self.description = declared.description
        self.parameters = copy.deepcopy(declared.parameters)
        self.version = version
        # The code identity of this tool is the environment's (see Toolbox).
        self.__wrapped__ = factory
        self._function = function
        self._session = session
        schema = json.dumps(self.parameters, sort_keys=True)
        self._compiled = _check(schema, f"tool {self.name!r} parameters")

    def check_arguments(self, arguments: dict[str, Any]) -> dict[str, Any] | str:
        return subset_check(self._compiled, arguments)

    def invoke(self, arguments: dict[str, Any]) -> str:
        if self._session.abandoned:
            raise ToolError(
                f"environment {self._session.name!r} was abandoned: an earlier call timed out "
                "and its state is unknown"
            )
        return _result_text(self._function(**arguments))


class AttemptEnvironment:
    """One attempt's environment: the instance, its tools, and the calls made per turn."""

    def __init__(
        self,
        resolved: ResolvedEnvironment,
        instance: Environment,
        params: dict[str, Any],
        declared: Iterable[ToolSchema],
        *,
        where: str,
    ) -> None:
        self.name = resolved.name
        self.abandoned = False
        self._instance = instance
        self._params = params
        self._turns: list[list[dict[str, Any]]] = []
        functions = instance.tools()
        tools = []
        for schema in declared:
            function = functions.get(schema.name)
            if function is None or not callable(function):
                raise ExecutionError(
                    "unknown-tool",
                    f"{where}: environment {self.name!r} does not implement the declared "
                    f"tool {schema.name!r}",
                )
            tools.append(
                EnvironmentTool(schema, function, self, resolved.factory, resolved.identity.version)
            )
        self.toolbox = Toolbox(tools)
        self._declared = tuple(tool.name for tool in tools)
        self._offer(0)

    def _offer(self, turn: int) -> None:
        # An instance may hold tools out until a later user turn (``hidden_tools``):
        # they are neither offered nor callable before it (BFCL's miss_func).
        hidden = getattr(self._instance, "hidden_tools", None)
        held = frozenset(hidden(turn)) if callable(hidden) else frozenset()
        offered = [name for name in self._declared if name not in held]
        self.names = frozenset(offered)
        self.schemas = self.toolbox.schemas(offered)

    def begin_turn(self) -> None:
        """A user turn starts: the calls that follow are this turn's, and the tools
        offered are the instance's for this turn (``hidden_tools(turn)`` left out)."""
        self._turns.append([])
        self._offer(len(self._turns) - 1)

    async def acall(self, call: ToolCall, *, timeout_s: float | None) -> ToolResult:
        """Run ``call`` on this environment (recorded for the answer)."""
        if not self._turns:
            self.begin_turn()
        self._turns[-1].append({"name": call.name, "arguments": call.arguments})
        result = await self.toolbox.acall(call, authorized=self.names, timeout_s=timeout_s)
        if result.error == "tool-timeout":
            self.abandoned = True
        return result

    def state(self) -> Any:
        """The instance's state snapshot (JSON data; ``bad-state`` otherwise)."""
        state = self._instance.state()
        try:
            canonical_bytes(state)
        except (FingerprintError, RecursionError) as error:
            raise ExecutionError(
                "bad-state", f"environment {self.name!r}: state() is not JSON data: {error}"
            ) from None
        return state

    def answer(self, text: str | None) -> str:
        """The attempt's answer: what the agent did in this environment (module doc)."""
        plain = {
            "environment": {"name": self.name, "params": self._params},
            "turns": self._turns,
            "text": text,
        }
        return canonical_bytes(plain).decode()


class AttemptToolbox:
    """What an attempt's host calls: environment tools by name, the rest the toolbox's."""

    __slots__ = ("_base", "_environment")

    def __init__(self, base: Toolbox, environment: AttemptEnvironment) -> None:
        self._base, self._environment = base, environment

    def schemas(self, names: Iterable[str]) -> tuple[ToolSchema, ...]:
        return self._base.schemas(names)

    async def acall(
        self, call: ToolCall, *, authorized: frozenset[str], timeout_s: float | None
    ) -> ToolResult:
        if call.name in self._environment.names:
            return await self._environment.acall(call, timeout_s=timeout_s)
        return await self._base.acall(call, authorized=authorized, timeout_s=timeout_s)


def _pinned(resolved: ResolvedEnvironment, code: Mapping[str, str] | None, where: str) -> None:
    current = resolved.identity.model_dump(mode="json")
    if code is not None and dict(code) != current:
        raise ExecutionError(
            "code-mismatch",
            f"{where}: environment {resolved.name!r} is not the code the suite pins "
            f"({code.get('source_sha256')} pinned, {current['source_sha256']} here): build "
            "the suite again",
        )


def environment_config(task: Task, harness_tools: Iterable[str]) -> dict[str, Any]:
    """What a task-bound spec carries of ``task``'s environment (compile time): its
    name, params and code (the pinned code, checked against the current code; the
    current code when the task pins none). Refuses ``code-mismatch``, the registry's
    and the params' refusals, and ``duplicate-tool`` (a declared tool named like one of
    the harness's tools)."""
    declared = task.environment
    assert declared is not None
    where = f"task {task.id}"
    taken = set(harness_tools)
    for tool in task.tools:
        if tool.name in taken:
            raise ExecutionError(
                "duplicate-tool",
                f"{where}: the task's tool {tool.name!r} has the name of a harness tool",
            )
    resolved = resolve_environment(declared.name, where=f"{where}: environment")
    _pinned(resolved, declared.code, where)
    params = resolved.check_params(declared.params, where=f"{where}: environment params")
    code = declared.code or resolved.identity.model_dump(mode="json")
    return {"name": declared.name, "params": params, "code": dict(code)}


def open_environment(spec: AgentExecutionSpec) -> AttemptEnvironment | None:
    """A fresh environment for one attempt of ``spec`` (None: its task names none)."""
    task = spec.config.get("task")
    if task is None or "environment" not in task:
        return None
    declared = task["environment"]
    where = f"task {spec.task_id}"
    resolved = resolve_environment(declared["name"], where=f"{where}: environment")
    _pinned(resolved, declared.get("code"), where)
    instance = resolved.build(declared["params"], where=f"{where}: environment")
    schemas = (
        ToolSchema(tool["name"], tool.get("description", ""), tool["parameters"])
        for tool in task.get("tools", ())
    )
    return AttemptEnvironment(resolved, instance, declared["params"], schemas, where=where)
