"""Memory of frozen records held by the hundred thousand: one fields-set per shape.

Pydantic keeps, per instance, the set of field names given at construction
(``__pydantic_fields_set__``, ~0.7 KB for ten fields): more than the values of a
small record. A run of 100,000 tasks holds several such records per task, so
records built in bulk share one equal set instead. Safe for *frozen* models only:
pydantic changes that set in place only when a field is assigned (refused on a
frozen model); ``model_copy`` gives the copy a set of its own.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenRecord", "share_fields_set"]

_SHARED: dict[frozenset[str], set[str]] = {}


def share_fields_set(record: BaseModel) -> None:
    """Give the frozen ``record`` the shared fields-set equal to its own."""
    fields = record.__pydantic_fields_set__
    shared = _SHARED.setdefault(frozenset(fields), fields)
    if shared is not fields:
        object.__setattr__(record, "__pydantic_fields_set__", shared)


class FrozenRecord(BaseModel):
    """A frozen, closed record (``frozen=True, extra="forbid"``) built in bulk."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def model_post_init(self, __context: Any) -> None:
        share_fields_set(self)
