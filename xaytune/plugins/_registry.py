"""One registry for every extension point: tools, agent loops, scorers, model adapters,
environments.

A part is named in config by a *reference*: a short name or a dotted path
(``my_pkg.tools.convert`` or ``my_pkg.tools:convert``). A short name is looked up,
in this order, among the parts registered in this process (the decorators below),
the built-ins (imported only when named), and the installed packages' entry points
(``[project.entry-points."xaytune.tools"]``, ``xaytune.loops``, ``xaytune.scorers``,
``xaytune.models``, ``xaytune.environments``). A reference with a dot is imported.

Built-in parts register through the same decorators (``@tool`` on the calculator,
``@loop(name="tool-loop")``, ``@scorer(name="exact")``, ...). :data:`BUILTINS` is the
lazy index of them: a built-in's module is imported only when its name is looked up,
and a built-in name can be registered only by the object that index points at (its
module, or a module of that package, and its name), so nobody else can take it.

Refusals (:class:`PluginError`): ``unknown-part`` (no such name or path),
``import-failed`` (the user's module raised while importing), ``duplicate-part`` (a
name registered twice for different objects, or a built-in's name taken by another).

The registry holds names and objects only; it knows nothing of what a tool or a
loop does (the harness and evaluation layers check that), and nothing of Hydra.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib import metadata
from typing import Any, Protocol, TypeVar, overload

from xaytune.core.errors import PluginError
from xaytune.plugins._identity import PartKind

__all__ = [
    "BUILTINS",
    "ENTRY_POINT_GROUPS",
    "PartDecorator",
    "environment",
    "import_target",
    "lookup",
    "loop",
    "model_adapter",
    "register",
    "scorer",
    "tool",
]

ENTRY_POINT_GROUPS: dict[PartKind, str] = {
    "tool": "xaytune.tools",
    "loop": "xaytune.loops",
    "scorer": "xaytune.scorers",
    "model": "xaytune.models",
    "environment": "xaytune.environments",
}

# Built-in parts by name -> where they live (imported only when named: the registry
# sits below the layers that implement them).
BUILTINS: dict[PartKind, dict[str, str]] = {
    "tool": {"calculator": "xaytune.harness.toolbox:CalculatorTool"},
    "loop": {
        "tool-loop": "xaytune.harness.loops:tool_loop",
        "plan-then-act": "xaytune.harness.loops:plan_then_act",
        "self-check": "xaytune.harness.loops:self_check",
    },
    "scorer": {
        name: f"xaytune.evaluation.scorers:{name.replace('-', '_')}"
        for name in (
            "exact",
            "numeric",
            "normalized-text",
            "includes",
            "regex",
            "choice",
            "f1",
            "json",
        )
    }
    | {  # BFCL's checkers (the [bfcl] extra; their module imports the BFCL classes)
        "bfcl-multi-turn": "xaytune.evaluation.scorers.bfcl_multi_turn:bfcl_multi_turn",
        "bfcl-ast": "xaytune.evaluation.scorers.bfcl_ast:bfcl_ast",
        "bfcl-relevance": "xaytune.evaluation.scorers.bfcl_relevance:bfcl_relevance",
        # Model-written code against the task's tests, in a sandboxed child process.
        "execution": "xaytune.evaluation.scorers.execution:execution",
    },
    # The config's model kinds (``model.kind``) by the same names, and the scripted model.
    "model": {
        "scripted": "xaytune.models.scripted:ScriptedModel",
        "simulated": "xaytune.models.simulated:SimulatedModel",
        # The HTTP adapters' modules import aiohttp: only when named.
        "openai_compatible": "xaytune.models.openai_compatible:OpenAICompatibleModel",
        "anthropic": "xaytune.models.anthropic:AnthropicModel",
        # A factory: it starts (or reuses) the process's llama.cpp server, then builds the
        # adapter (a LlamaCppLocalModel) on it.
        "llama_cpp_local": "xaytune.models.llama_cpp_local:llama_cpp_local_model",
    },
    "environment": {
        "bfcl-multi-turn": "xaytune.suites.bfcl.environment:BfclMultiTurnEnvironment",
        "bfcl-functions": "xaytune.suites.bfcl.environment:BfclFunctionsEnvironment",
    },
}

_REGISTERED: dict[tuple[PartKind, str], object] = {}

_T = TypeVar("_T")


def register(kind: PartKind, name: str, obj: _T, *, version: str | None = None) -> _T:
    """Register ``obj`` (a function or class) as the part ``name`` of ``kind``.

    Registering the same object again is harmless; another object under a name
    already taken (or a built-in's name) is refused (``duplicate-part``). A built-in
    name is registered by the built-in itself (its module re-imported gives a new
    object, which replaces the old one: the index names the module, not an object).
    """
    if not isinstance(name, str) or not name or "." in name or ":" in name:
        raise PluginError("bad-part", f"{kind} name {name!r}: a non-empty name without dots")
    builtin = BUILTINS[kind].get(name)
    if builtin is not None and not _is_builtin(builtin, obj):
        raise PluginError("duplicate-part", f"{kind} {name!r} is a built-in name")
    current = _REGISTERED.get((kind, name))
    if builtin is None and current is not None and _unwrapped(current) is not _unwrapped(obj):
        raise PluginError(
            "duplicate-part", f"{kind} {name!r} is already registered for another object"
        )
    if version is not None:
        obj.__xaytune_version__ = str(version)  # type: ignore[attr-defined]
    obj.__xaytune_part__ = (kind, name)  # type: ignore[attr-defined]
    _REGISTERED[(kind, name)] = obj
    return obj


def _unwrapped(obj: object) -> object:
    return getattr(obj, "__wrapped__", obj)


def _is_builtin(path: str, obj: object) -> bool:
    """Whether ``obj`` is the built-in ``path`` (``package.module:name``) names: defined
    in that module or a module of that package (``xaytune.evaluation.scorers:exact`` is
    defined in ``xaytune.evaluation.scorers._exact``), under that name. Read from the
    object, not imported: it is called while the built-in's own module is importing."""
    module, _, attribute = path.partition(":")
    defined_in = getattr(_unwrapped(obj), "__module__", None) or ""
    in_place = defined_in == module or defined_in.startswith(module + ".")
    return in_place and getattr(_unwrapped(obj), "__name__", None) == attribute


class PartDecorator(Protocol):
    """A registering decorator: ``@tool`` bare, or ``@tool(name=..., version=...)``.

    Either way it gives back the object it was given, unchanged but for the two
    attributes that record its registration (``__xaytune_part__``, and
    ``__xaytune_version__`` when a version is declared).
    """

    @overload
    def __call__(self, obj: _T, /) -> _T: ...

    @overload
    def __call__(
        self, *, name: str | None = None, version: str | None = None
    ) -> Callable[[_T], _T]: ...


def _decorator(kind: PartKind, spelled: str) -> PartDecorator:
    def decorate(obj: Any = None, *, name: str | None = None, version: str | None = None) -> Any:
        def apply(target: Any) -> Any:
            chosen = name or getattr(target, "name", None) or target.__name__
            if not isinstance(chosen, str):
                chosen = target.__name__
            return register(kind, chosen, target, version=version)

        return apply if obj is None else apply(obj)

    decorate.__name__ = decorate.__qualname__ = spelled
    decorate.__doc__ = (
        f"Register a {kind} under its name (``name=`` to choose one, ``version=`` to "
        f"declare a version). Usable bare (``@{spelled}``) or called."
    )
    return decorate  # type: ignore[return-value]


tool = _decorator("tool", "tool")
loop = _decorator("loop", "loop")
scorer = _decorator("scorer", "scorer")
model_adapter = _decorator("model", "model_adapter")
environment = _decorator("environment", "environment")


def import_target(path: str, *, where: str) -> object:
    """The object at ``path`` (``pkg.mod.attr`` or ``pkg.mod:attr``), imported.

    A missing module or attribute is ``unknown-part``; a module that raises while
    importing is ``import-failed`` (one line naming the error).
    """
    if ":" in path:
        module_name, _, attribute = path.partition(":")
        candidates = [(module_name, attribute.split("."))]
    else:
        parts = path.split(".")
        candidates = [(".".join(parts[:i]), parts[i:]) for i in range(len(parts) - 1, 0, -1)]
    for module_name, attributes in candidates:
        if not module_name or not all(attributes):
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            missing = error.name or ""
            if module_name == missing or module_name.startswith(missing + "."):
                continue  # this prefix is not a module: try a shorter one
            raise PluginError(
                "import-failed", f"{where}: importing {module_name}: {error}"
            ) from None
        except Exception as error:  # the user's module raised while importing
            raise PluginError(
                "import-failed",
                f"{where}: importing {module_name} raised {type(error).__name__}: {error}",
            ) from None
        found: object = module
        for attribute in attributes:
            if not hasattr(found, attribute):
                raise PluginError(
                    "unknown-part", f"{where}: {path!r}: {module_name} has no {attribute!r}"
                )
            found = getattr(found, attribute)
        return found
    raise PluginError("unknown-part", f"{where}: {path!r}: no module of that name can be imported")


def lookup(kind: PartKind, ref: str, *, where: str) -> tuple[str, object]:
    """The part ``ref`` of ``kind``: its name and the object (function, class or
    instance) that implements it."""
    if not isinstance(ref, str) or not ref.strip():
        raise PluginError("unknown-part", f"{where}: {ref!r} is not a {kind} name or path")
    registered = _REGISTERED.get((kind, ref))
    if registered is not None:
        return ref, registered
    builtin = BUILTINS[kind].get(ref)
    if builtin is not None:
        return ref, import_target(builtin, where=where)
    if "." not in ref and ":" not in ref:
        found = {
            entry.value: entry
            for entry in metadata.entry_points(group=ENTRY_POINT_GROUPS[kind])
            if entry.name == ref
        }
        if len(found) > 1:  # which one wins would depend on sys.path order
            raise PluginError(
                "duplicate-part",
                f"{where}: {kind} {ref!r} is declared by several installed packages "
                f"({', '.join(sorted(found))}); name one by its dotted path",
            )
        for entry in found.values():
            try:
                return ref, entry.load()
            except Exception as error:
                raise PluginError(
                    "import-failed",
                    f"{where}: entry point {entry.value} raised {type(error).__name__}: {error}",
                ) from None
        known = sorted({*BUILTINS[kind], *(n for k, n in _REGISTERED if k == kind)})
        raise PluginError(
            "unknown-part",
            f"{where}: no {kind} named {ref!r} (built-in or registered: {', '.join(known)}; "
            "or give a dotted path)",
        )
    obj = import_target(ref, where=where)
    declared = getattr(obj, "__xaytune_part__", None)
    name = declared[1] if isinstance(declared, tuple) and declared[0] == kind else ref
    return name, obj
