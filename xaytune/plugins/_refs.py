"""How config names a part: a reference string, or a mapping with its parameters.

In YAML a part is either a string (``calculator``, ``self-check``,
``my_pkg.tools.convert``) or a mapping with ``_target_`` (Hydra's key) or ``name``
plus the part's parameters::

    loop: {_target_: my_pkg.loops.reflect, rounds: 2}

Both are read into :class:`PartRef` (``ref`` and ``params``), which is what the
fingerprints cover.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["PartRef", "part_ref"]


class PartRef(BaseModel):
    """A part by reference (short name or dotted path) and its parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    params: dict[str, Any] = {}

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"ref": value}
        named = isinstance(value, dict) and (
            "_target_" in value or ("name" in value and "ref" not in value)
        )
        if named:
            key = "_target_" if "_target_" in value else "name"
            rest = {k: v for k, v in value.items() if k != key}
            if set(rest) == {"params"} and isinstance(rest["params"], dict):
                rest = rest["params"]
            return {"ref": value[key], "params": rest}
        return value

    @model_validator(mode="after")
    def _non_empty(self) -> PartRef:
        if not self.ref.strip():
            raise ValueError("a part reference must not be empty")
        return self


def part_ref(value: str | PartRef | dict[str, Any]) -> PartRef:
    """``value`` as a :class:`PartRef`."""
    return value if isinstance(value, PartRef) else PartRef.model_validate(value)
