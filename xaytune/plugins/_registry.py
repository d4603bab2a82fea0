"""One registry for every extension point: tools, agent loops, scorers, model adapters,
environments.

A part is named in config by a *reference*: a short name or a dotted path
(``my_pkg.tools.convert`` or ``my_pkg.tools:convert``). A short name is looked up,
in this order, among the parts registered in this process (the decorators below),
the built-ins (imported only when named), and the installed packages' entry points
(``[project.entry-points."xaytune.tools"]``, ``xaytune.loops``, ``xaytune.scorers``,
``xaytune.models``, ``xaytune.environments``). A reference with a dot is imported.

Refusals (:class:`PluginError`): ``unknown-part`` (no such name or path),
``import-failed`` (the user's module raised while importing), ``duplicate-part`` (a
name registered twice for different objects).

The registry holds names and objects only; it knows nothing of what a tool or a
loop does (the harness and evaluation layers check that), and nothing of Hydra.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib import metadata
from typing import Any, TypeVar

from xaytune.core.errors import PluginError
from xaytune.plugins._identity import PartKind

__all__ = [
    "BUILTINS",
    "ENTRY_POINT_GROUPS",
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
    "model": {"scripted": "xaytune.models.scripted:ScriptedModel"},
    "environment": {
        "bfcl-multi-turn": "xaytune.suites.bfcl.environment:BfclMultiTurnEnvironment",
        "bfcl-functions": "xaytune.suites.bfcl.environment:BfclFunctionsEnvironment",
    },
}

_REGISTERED: dict[tuple[PartKind, str], object] = {}

T = TypeVar("T")


def register(kind: PartKind, name: str, obj: T, *, version: str | None = None) -> T:
    """Register ``obj`` (a function or class) as the part ``name`` of ``kind``.

    Registering the same object again is harmless; another object under a name
    already taken (or a built-in's name) is refused (``duplicate-part``).
    """
    if not isinstance(name, str) or not name or "." in name or ":" in name:
        raise PluginError("bad-part", f"{kind} name {name!r}: a non-empty name without dots")
    if name in BUILTINS[kind]:
        raise PluginError("duplicate-part", f"{kind} {name!r} is a built-in name")
    current = _REGISTERED.get((kind, name))
    if current is not None and _unwrapped(current) is not _unwrapped(obj):
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


def _decorator(kind: PartKind) -> Callable[..., Any]:
    def decorate(obj: Any = None, *, name: str | None = None, version: str | None = None) -> Any:
        def apply(target: Any) -> Any:
            chosen = name or getattr(target, "name", None) or target.__name__
            if not isinstance(chosen, str):
                chosen = target.__name__
            return register(kind, chosen, target, version=version)

        return apply if obj is None else apply(obj)

    decorate.__name__ = kind if kind != "model" else "model_adapter"
    decorate.__doc__ = (
        f"Register a {kind} under its name (``name=`` to choose one, ``version=`` to "
        "declare a version). Usable bare (``@" + decorate.__name__ + "``) or called."
    )
    return decorate


tool = _decorator("tool")
loop = _decorator("loop")
scorer = _decorator("scorer")
model_adapter = _decorator("model")
environment = _decorator("environment")


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
