"""Whether a record holds exactly what validating it would have given.

A pydantic record built by validation holds, in each field, a value of the field's
declared type. One made with ``model_copy(update=...)`` or ``model_construct`` may
hold anything. Code that compares a record with plain JSON values field by field
(rather than building a record of its own and using ``==``, which compares classes
too) checks it first with :func:`exactly_typed`.

Supported field types are the ones records compared so use: ``int``, ``str``,
``bool``, ``None``, ``Literal`` of those, unions of them, ``tuple[X, ...]`` of them,
``dict[str, Any]`` (its values are not checked) and nested records of the same kind.
``int`` is never a ``bool``, a nested record is exactly its declared class, and a
record holds no extra or private values (a class that may hold them is refused).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from functools import cache
from operator import itemgetter
from typing import Any

from pydantic import BaseModel

__all__ = ["exactly_typed"]

_Check = Callable[[Any], bool]
_PLAIN = (int, str, bool)


def exactly_typed(record: BaseModel) -> bool:
    """True when every field of ``record`` holds a value of exactly its declared type."""
    plan = _plan(type(record))
    values = record.__dict__
    if (
        len(values) != plan.fields
        or record.__pydantic_extra__ is not None
        or record.__pydantic_private__ is not None
    ):
        return False
    try:
        if plan.plain is not None and tuple(map(type, plan.plain(values))) != plan.types:
            return False
        for name, check in plan.others:  # noqa: SIM110 - no generator: a hot path
            if not check(values[name]):
                return False
        return True
    except KeyError:
        return False


class _Plan:
    """How to check one record class: its plain fields' types at once (one ``map``),
    every other field with a check of its own."""

    __slots__ = ("fields", "others", "plain", "types")

    def __init__(self, cls: type[BaseModel]) -> None:
        if cls.model_config.get("extra") == "allow" or cls.__private_attributes__:
            raise TypeError(f"exactly_typed: {cls.__name__} holds extra or private values")
        names, kinds, others = [], [], []
        for name, field in cls.model_fields.items():
            if field.annotation in _PLAIN:
                names.append(name)
                kinds.append(field.annotation)
            else:
                others.append((name, _check(field.annotation)))
        self.fields = len(cls.model_fields)
        self.types = tuple(kinds)
        self.others = tuple(others)
        getter = itemgetter(*names) if names else None
        self.plain: Callable[[dict[str, Any]], tuple[Any, ...]] | None = (
            getter if getter is None or len(names) > 1 else lambda values: (getter(values),)
        )


@cache
def _plan(cls: type[BaseModel]) -> _Plan:
    return _Plan(cls)


def _check(annotation: Any) -> _Check:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        allowed = frozenset((type(value), value) for value in typing.get_args(annotation))
        kinds = frozenset(kind for kind, _ in allowed)
        # The type first: a value of another type may not even be hashable.
        return lambda value: type(value) in kinds and (type(value), value) in allowed
    if origin is tuple:
        members = typing.get_args(annotation)
        if len(members) == 2 and members[1] is Ellipsis:
            item = _check(members[0])
            return lambda value: type(value) is tuple and all(item(v) for v in value)
    if origin is typing.Union or origin is types.UnionType:
        members = typing.get_args(annotation)
        plain = frozenset(m for m in members if m in _PLAIN or m is type(None))
        rest = tuple(_check(m) for m in members if m not in plain)
        if not rest:
            return lambda value: type(value) in plain
        if len(rest) == 1:
            (only,) = rest
            return lambda value: type(value) in plain or only(value)
        return lambda value: type(value) in plain or any(check(value) for check in rest)
    if origin is dict:
        key, value = typing.get_args(annotation)
        if key is str and value is Any:
            # What validation gives: a dict with text keys, any values (compared as
            # JSON by whoever reads them).
            return lambda value: type(value) is dict and all(type(k) is str for k in value)
    if annotation is None or annotation is type(None):
        return lambda value: value is None
    if annotation in _PLAIN:
        return lambda value: type(value) is annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return lambda value: type(value) is annotation and exactly_typed(value)
    raise TypeError(f"exactly_typed: no exact check for a field of type {annotation!r}")
