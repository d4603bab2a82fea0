"""Instruction templates: ``{field}`` over the task input, ``{content.NAME}`` over content.

Deliberately tiny: no attribute access, no format specs, no expressions, and no
``${...}`` (which Hydra would try to interpolate). ``{{`` and ``}}`` are literal braces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from xaytune.core.errors import ExecutionError

__all__ = ["render_template", "template_fields"]

_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_.-]+)?)\}")


def template_fields(template: str) -> tuple[str, ...]:
    """The field names a template refers to, in order of first use."""
    seen: dict[str, None] = {}
    for match in _FIELD.finditer(template):
        if match.group(1):
            seen.setdefault(match.group(1), None)
    return tuple(seen)


def render_template(template: str, values: Mapping[str, object], *, where: str) -> str:
    """Fill ``template`` from ``values``; a missing field is refused, naming it."""
    whole = _FIELD.fullmatch(template)
    if whole is not None and whole.group(1) in values:
        return str(values[whole.group(1)])  # "{question}": the value itself, not a copy

    def fill(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = match.group(1)
        if name not in values:
            raise ExecutionError(
                "template-field-missing", f"{where}: template field {{{name}}} has no value"
            )
        return str(values[name])

    return _FIELD.sub(fill, template)
