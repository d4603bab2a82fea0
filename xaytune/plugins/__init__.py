"""Extension points: one registry and one notion of code identity for every part.

A user writes a plain function or class and registers it with a decorator
(``@tool``, ``@loop``, ``@scorer``, ``@model_adapter``, ``@environment``; a part's
author imports them from the concept modules ``xaytune.tool``, ``xaytune.loop``,
``xaytune.scorer``, ``xaytune.model``, ``xaytune.environment``), an entry point, or
names it by dotted path in config. The built-in parts register through the same
decorators. Each part resolved for a run has a
:class:`CodeIdentity` (dotted path, declared version, sha256 of its module's source)
that enters the fingerprint covering it: the harness (tools, loop), the evaluator
(scorer, C3), the execution facets (model adapter, C4) or the suite digest (an
environment, pinned into each task that names it: C1).
"""

from xaytune.plugins._environment import Environment, ResolvedEnvironment, resolve_environment
from xaytune.plugins._identity import CodeIdentity, PartKind, code_identity, target_path
from xaytune.plugins._refs import PartRef, part_ref
from xaytune.plugins._registry import (
    BUILTINS,
    ENTRY_POINT_GROUPS,
    PartDecorator,
    environment,
    import_target,
    lookup,
    loop,
    model_adapter,
    register,
    scorer,
    tool,
)
from xaytune.plugins._signature import check_params, parameters_model, problem_of

__all__ = [
    "BUILTINS",
    "ENTRY_POINT_GROUPS",
    "CodeIdentity",
    "Environment",
    "PartDecorator",
    "PartKind",
    "PartRef",
    "ResolvedEnvironment",
    "check_params",
    "code_identity",
    "environment",
    "import_target",
    "lookup",
    "loop",
    "model_adapter",
    "parameters_model",
    "part_ref",
    "problem_of",
    "register",
    "resolve_environment",
    "scorer",
    "target_path",
    "tool",
]
