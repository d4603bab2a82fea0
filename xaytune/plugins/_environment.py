"""Environments: the stateful world a task's tools act on (an extension point).

A task may declare tools (JSON schemas the model is offered) and name an environment
that implements them, with the params that set its initial state
(``{"name": "bfcl-multi-turn", "params": {...}}``). The environment is a class (or a
factory function) registered by name (``@environment``, the ``xaytune.environments``
entry point, a built-in) or named by dotted path; it is built with the task's params
for every attempt: a fresh instance per attempt, never shared across attempts, tasks
or candidates. An instance is an :class:`Environment`:

- ``tools()``: a mapping from tool name to the function that runs it, called with the
  tool call's arguments as keyword arguments. It returns the text the model sees (any
  other value is sent as JSON, or as its ``str()`` when it is not JSON data); it raises
  for a failure the model should see (a tool error, counted in the spend);
- ``state()``: a snapshot of its state as JSON data (recorded in the trajectory after
  each user turn, so the evidence shows what each turn left behind);
- optionally ``hidden_tools(turn)``: the names of declared tools not offered in user
  turn ``turn`` (from 0), each offered from a later turn on (BFCL's ``miss_func``:
  ``xaytune.harness.environment``).

The host owns the side effects: every call reaches the environment through the runner
(trajectory, budgets, timeouts), exactly as a toolbox tool's. Identity: an
environment's :class:`~xaytune.plugins.CodeIdentity` (dotted path, declared version,
sha256 of its module's source and of the modules it names in ``__xaytune_sources__``)
is pinned into each task of a suite when the suite is built, so a changed environment
is a different suite digest (a different cohort), and running a suite whose pinned
environment code is not the code here is refused (``code-mismatch``).

Refusals (:class:`~xaytune.core.errors.PluginError`): the registry's
(``unknown-part``, ``import-failed``), ``bad-part`` (not a class or function, or an
instance that does not implement the protocol), ``bad-part-params`` (params its
signature does not take, or of the wrong type; or the constructor raised).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from xaytune.core.errors import PluginError
from xaytune.plugins._identity import CodeIdentity, code_identity
from xaytune.plugins._registry import lookup
from xaytune.plugins._signature import check_params, parameters_model

__all__ = ["Environment", "ResolvedEnvironment", "resolve_environment"]


@runtime_checkable
class Environment(Protocol):
    """A stateful environment instance: its tools by name, and its state as JSON data."""

    def tools(self) -> Mapping[str, Callable[..., Any]]: ...

    def state(self) -> Any: ...


@dataclass(frozen=True)
class ResolvedEnvironment:
    """An environment found by name: the factory that builds an instance, and its code."""

    name: str
    factory: Callable[..., Any]
    identity: CodeIdentity

    def check_params(self, params: Mapping[str, Any], *, where: str) -> dict[str, Any]:
        """``params`` checked against the factory's signature (``bad-part-params``)."""
        model = parameters_model(self.factory, skip=0, where=where)
        return check_params(model, dict(params), where=where)

    def build(self, params: Mapping[str, Any], *, where: str) -> Environment:
        """A fresh instance built with ``params`` (checked); ``bad-part`` when it does not
        implement :class:`Environment`, ``bad-part-params`` when building it raised."""
        checked = self.check_params(params, where=where)
        try:
            instance = self.factory(**checked)
        except Exception as error:
            raise PluginError(
                "bad-part-params",
                f"{where}: building environment {self.name!r} raised "
                f"{type(error).__name__}: {error}",
            ) from None
        if not isinstance(instance, Environment):
            raise PluginError(
                "bad-part",
                f"{where}: environment {self.name!r} built a {type(instance).__name__}, which "
                "has no tools() and state()",
            )
        return instance


_RESOLVED: dict[str, ResolvedEnvironment] = {}


def resolve_environment(name: str, *, where: str) -> ResolvedEnvironment:
    """The environment ``name`` (a registered or built-in name, or a dotted path) with
    its current code identity (computed afresh: a changed source is seen)."""
    found, factory = lookup("environment", name, where=where)
    if not (inspect.isclass(factory) or inspect.isfunction(factory)):
        raise PluginError(
            "bad-part", f"{where}: environment {name!r} is not a class or a factory function"
        )
    identity = code_identity("environment", found, factory, where=where)
    held = _RESOLVED.get(name)
    if held is not None and held.identity == identity and held.factory is factory:
        return held
    resolved = ResolvedEnvironment(name=found, factory=factory, identity=identity)
    _RESOLVED[name] = resolved
    return resolved
