"""BFCL's environments: the multi-turn API classes, and the recorded functions of the
single-call categories (built-in environments ``bfcl-multi-turn`` and
``bfcl-functions``).

``bfcl-multi-turn`` (:class:`BfclMultiTurnEnvironment`) builds, as BFCL's
``execute_multi_turn_func_call`` does, one instance of each involved class
(``GorillaFileSystem``, ``MathAPI``, ``MessageAPI``, ``TwitterAPI``, ``TicketAPI``,
``TradingBot``, ``TravelAPI``, ``VehicleControlAPI``; from
``bfcl_eval/eval_checker/multi_turn_eval/func_source_code/``), loads each stateful
one's scenario from a deep copy of the task's ``initial_config``, and maps every public
method name to its instance (a later class wins a name, as in BFCL). Results are what
BFCL's executor makes of a return value: a ``str`` as is, a ``dict`` as
``json.dumps`` (or ``str`` when that fails), anything else as ``str``. The names BFCL
refuses to run (``kill``, ``exit``, ``quit``, ``remove``, ``unlink``, ``popen``,
``Popen``, ``run``) are refused here too.

- A ``miss_func`` task holds functions out (``held_out``: ``{"<turn>": [<name>,
  ...]}``): :meth:`BfclMultiTurnEnvironment.hidden_tools` names those not yet offered
  in a user turn, and the attempt offers them from their turn on (as BFCL's inference
  adds ``missed_function`` to the tools at that turn).
- As a live environment (``tools()``), a method that raises is a tool error the model
  sees (and the spend counts).
- As the checker's executor (:meth:`BfclMultiTurnEnvironment.execute`), it follows
  BFCL's evaluation run: a failure becomes the result
  ``"Error during execution: <message>"``.
- ``state()`` is every instance's public attributes as JSON data (objects as their
  public attributes, a back-reference to an enclosing object as ``"<cycle>"``, sets
  sorted, tuples as lists, an integer beyond 2^53 and any other value as ``str``);
  :meth:`differences` compares two environments as BFCL's ``state_checker`` does:
  attribute by attribute, with Python's ``!=`` on the live objects.

``bfcl-functions`` (:class:`BfclFunctionsEnvironment`): the single-call categories
never execute a function; each call is recorded and answered with :data:`RECORDED`.
Its params are the task's BFCL category and its function documents (with BFCL's own
types, which the AST checker reads from the answer); its tools are their names with
dots as underscores.

A suite line holds canonical JSON: its objects' keys sorted, ``25.0`` written ``25``,
integers only up to 2^53. A BFCL scenario depends on all three (the file system's root
is the first key of ``root``, ``ls`` lists a directory in its keys' order, a card
number is beyond 2^53), so ``initial_config`` is the scenario's JSON text as BFCL's
file holds it (a string, which canonical JSON keeps as it is), read with
``json.loads`` when an environment is built (an object is taken as it is).

Identity: both classes name the BFCL modules they run in ``__xaytune_sources__``, so
their code identity (pinned into every task of a BFCL suite) covers BFCL's code too.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import inspect
import json
from collections.abc import Callable
from typing import Any

from xaytune.suites.bfcl._schema import tool_name
from xaytune.suites.bfcl._source import require_bfcl

__all__ = [
    "BLOCKED",
    "CLASSES",
    "RECORDED",
    "BfclFunctionsEnvironment",
    "BfclMultiTurnEnvironment",
    "bfcl_result",
    "parse_call",
]

_PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
# bfcl_eval.constants.executable_backend_config.CLASS_FILE_PATH_MAPPING (multi-turn)
CLASSES = {
    "GorillaFileSystem": f"{_PREFIX}.gorilla_file_system",
    "MathAPI": f"{_PREFIX}.math_api",
    "MessageAPI": f"{_PREFIX}.message_api",
    "TwitterAPI": f"{_PREFIX}.posting_api",
    "TicketAPI": f"{_PREFIX}.ticket_api",
    "TradingBot": f"{_PREFIX}.trading_bot",
    "TravelAPI": f"{_PREFIX}.travel_booking",
    "VehicleControlAPI": f"{_PREFIX}.vehicle_control",
}
STATELESS = frozenset({"MathAPI"})  # BFCL's STATELESS_CLASSES: no scenario to load
BLOCKED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
_SOURCES = (*CLASSES.values(), f"{_PREFIX}.long_context")
_SAFE = 2**53
RECORDED = "The call was recorded. Functions are not executed in this benchmark."


def bfcl_result(value: Any) -> str:
    """A return value as BFCL's executor turns it into a result string."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _scenario(initial_config: str | dict[str, Any] | None) -> dict[str, Any]:
    """The initial state as BFCL's file holds it (module docstring)."""
    if isinstance(initial_config, str):
        loaded = json.loads(initial_config)
        if not isinstance(loaded, dict):
            raise ValueError("initial_config: the JSON text is not an object")
        return loaded
    return initial_config or {}


def parse_call(source: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """A ground-truth call string (``mv(source='a', destination='b')``, ``cd('x')``) as
    its name and positional and keyword arguments; literal arguments only
    (``ValueError`` otherwise)."""
    node = ast.parse(source.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a function call: {source!r}")
    if any(keyword.arg is None for keyword in node.keywords):
        raise ValueError(f"**arguments in a ground-truth call: {source!r}")
    args = tuple(ast.literal_eval(argument) for argument in node.args)
    kwargs = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
    return node.func.id, args, kwargs


def _plain(value: Any, path: tuple[int, ...] = ()) -> Any:
    """``value`` as JSON data (module docstring)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _SAFE:
        return str(value)  # beyond what every JSON reader keeps exact (a card number)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if id(value) in path:
        return "<cycle>"
    inner = (*path, id(value))
    if isinstance(value, dict):
        return {str(key): _plain(item, inner) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item, inner) for item in value]
    if isinstance(value, set | frozenset):
        return [_plain(item, inner) for item in sorted(value, key=repr)]
    if hasattr(value, "__dict__") and not inspect.isroutine(value):
        return {
            key: _plain(item, inner) for key, item in vars(value).items() if not key.startswith("_")
        }
    return str(value)


class BfclMultiTurnEnvironment:
    """BFCL's multi-turn API classes for one task (module docstring)."""

    version = "2"
    __xaytune_sources__ = _SOURCES

    def __init__(
        self,
        involved_classes: list[str],
        initial_config: str | dict[str, Any] | None = None,
        long_context: bool = False,
        held_out: dict[str, list[str]] | None = None,
    ) -> None:
        require_bfcl()
        self._held_out = {int(turn): frozenset(names) for turn, names in (held_out or {}).items()}
        unknown = [name for name in involved_classes if name not in CLASSES]
        if unknown:
            raise ValueError(f"unknown BFCL class {unknown[0]!r} (known: {', '.join(CLASSES)})")
        config = _scenario(initial_config)
        self._instances: dict[str, Any] = {}
        self._methods: dict[str, Callable[..., Any]] = {}
        for name in involved_classes:
            instance = getattr(importlib.import_module(CLASSES[name]), name)()
            if name not in STATELESS:
                instance._load_scenario(
                    copy.deepcopy(config.get(name, {})), long_context=long_context
                )
            self._instances[name] = instance
            for method_name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method_name.startswith("_"):
                    self._methods[method_name] = method

    def hidden_tools(self, turn: int) -> frozenset[str]:
        """The functions not offered in user turn ``turn`` (from 0): BFCL's
        ``missed_function``, each held out until the turn that reveals it."""
        return frozenset().union(
            *(names for reveal, names in self._held_out.items() if turn < reveal)
        )

    def tools(self) -> dict[str, Callable[..., str]]:
        """Every public method, by name, run live (a failure raises: a tool error)."""
        return {name: functools.partial(self._live, name) for name in self._methods}

    def _live(self, tool: str, /, **arguments: Any) -> str:
        if tool in BLOCKED:
            raise PermissionError(f"Function call {tool} is not allowed.")
        return bfcl_result(self._methods[tool](**arguments))

    def execute(
        self, name: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> str:
        """One call as BFCL's evaluation run executes it: the result string, or
        ``"Error during execution: <message>"``."""
        if name in BLOCKED:
            return f"Error during execution: Function call {name} is not allowed."
        method = self._methods.get(name)
        if method is None:
            return f"Error during execution: name '{name}' is not defined"
        try:
            return bfcl_result(method(*args, **(kwargs or {})))
        except Exception as error:
            return f"Error during execution: {error}"

    def as_tool_call(self, source: str) -> dict[str, Any]:
        """A ground-truth call string as the tool call a model would make:
        ``{"name", "arguments"}``, positional arguments bound to their parameter names
        (what a scripted model replays)."""
        name, args, kwargs = parse_call(source)
        bound = inspect.signature(self._methods[name]).bind(*args, **kwargs)
        return {"name": name, "arguments": dict(bound.arguments)}

    def state(self) -> dict[str, Any]:
        """Each instance's public attributes, as JSON data."""
        return {name: _plain(instance) for name, instance in self._instances.items()}

    def differences(self, expected: BfclMultiTurnEnvironment) -> dict[str, list[str]]:
        """Per class, the public attributes whose values differ from ``expected``'s
        (BFCL's ``state_checker``: ``!=`` on every public attribute of the expected
        instance)."""
        found: dict[str, list[str]] = {}
        for name, truth in expected._instances.items():
            mine = self._instances[name]
            differing = [
                attribute
                for attribute in vars(truth)
                if not attribute.startswith("_")
                and getattr(mine, attribute, _MISSING) != getattr(truth, attribute)
            ]
            if differing:
                found[name] = differing
        return found


_MISSING = object()


class BfclFunctionsEnvironment:
    """A single-call task's functions: recorded, never executed (module docstring)."""

    version = "2"

    def __init__(self, functions: list[dict[str, Any]], category: str = "simple_python") -> None:
        self.category = category
        names = [document.get("name") for document in functions]
        if not all(isinstance(name, str) and name for name in names):
            raise ValueError("functions: each function document needs a name")
        self._names = tuple(tool_name(name) for name in names)
        self._calls: list[dict[str, Any]] = []

    def tools(self) -> dict[str, Callable[..., str]]:
        return {name: functools.partial(self._record, name) for name in self._names}

    def _record(self, tool: str, /, **arguments: Any) -> str:
        self._calls.append({"name": tool, "arguments": arguments})
        return RECORDED

    def state(self) -> dict[str, Any]:
        return {"calls": copy.deepcopy(self._calls)}
