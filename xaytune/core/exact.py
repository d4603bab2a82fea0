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
from typing import Any

from pydantic import BaseModel

__all__ = ["exactly_typed"]

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
        return plan.check(values)
    except KeyError:  # a field (of this record or a nested one) is missing
        return False


class _Plan:
    """How to check one record class: one function, written once from the class's
    fields (nested records' fields written in, not called), whose value is whether a
    record's ``__dict__`` holds exactly what validation gives. Verification checks
    every attempt of a run with it, so it is one expression, not a call per field."""

    __slots__ = ("check", "fields", "source")

    def __init__(self, cls: type[BaseModel]) -> None:
        _refuse_open(cls)
        names: dict[str, Any] = {"exactly_typed": exactly_typed}
        expression = _Writer(names).fields(cls, "values", (cls,))
        self.source = f"def check(values):\n    return {expression}\n"
        exec(compile(self.source, f"<exactly_typed {cls.__qualname__}>", "exec"), names)
        self.check: Callable[[dict[str, Any]], bool] = names["check"]
        self.fields = len(cls.model_fields)


def _refuse_open(cls: type[BaseModel]) -> None:
    if cls.model_config.get("extra") == "allow" or cls.__private_attributes__:
        raise TypeError(f"exactly_typed: {cls.__name__} holds extra or private values")


@cache
def _plan(cls: type[BaseModel]) -> _Plan:
    return _Plan(cls)


class _Writer:
    """Writes the expression that checks a value of a declared type; the constants it
    uses (types, sets of allowed values) go into ``names`` under fresh names."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names

    def fresh(self, value: Any = None, *, prefix: str = "v") -> str:
        name = f"_{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def fields(self, cls: type[BaseModel], values: str, seen: tuple[type, ...]) -> str:
        checks = [
            self.value(field.annotation, f"{values}[{name!r}]", seen)
            for name, field in cls.model_fields.items()
        ]
        return " and ".join(checks) if checks else "True"

    def value(self, annotation: Any, value: str, seen: tuple[type, ...]) -> str:
        origin = typing.get_origin(annotation)
        if annotation in _PLAIN:
            return f"type({value}) is {self.fresh(annotation, prefix='t')}"
        if annotation is None or annotation is type(None):
            return f"{value} is None"
        bound = self.fresh()
        if origin is typing.Literal:
            allowed = frozenset((type(item), item) for item in typing.get_args(annotation))
            kinds = self.fresh(frozenset(kind for kind, _ in allowed), prefix="k")
            # The type first: a value of another type may not even be hashable.
            pairs = self.fresh(allowed, prefix="l")
            return f"(type({bound} := {value}) in {kinds} and (type({bound}), {bound}) in {pairs})"
        if origin is tuple:
            members = typing.get_args(annotation)
            if len(members) == 2 and members[1] is Ellipsis:
                item = self.fresh()
                check = self.value(members[0], item, seen)
                return f"(type({bound} := {value}) is tuple and all({check} for {item} in {bound}))"
        if origin is typing.Union or origin is types.UnionType:
            members = typing.get_args(annotation)
            plain = frozenset(m for m in members if m in _PLAIN or m is type(None))
            rest = [self.value(m, bound, seen) for m in members if m not in plain]
            kinds = self.fresh(plain, prefix="k")
            return "(" + " or ".join([f"type({bound} := {value}) in {kinds}", *rest]) + ")"
        if origin is dict:
            key, item = typing.get_args(annotation)
            if key is str and item is Any:
                # What validation gives: a dict with text keys, any values (compared as
                # JSON by whoever reads them).
                each = self.fresh()
                return (
                    f"(type({bound} := {value}) is dict and "
                    f"all(type({each}) is str for {each} in {bound}))"
                )
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            cls = self.fresh(annotation, prefix="c")
            if annotation in seen:  # a record inside itself: checked by a call
                return f"(type({bound} := {value}) is {cls} and exactly_typed({bound}))"
            _refuse_open(annotation)
            inner = self.fresh()
            return (
                f"(type({bound} := {value}) is {cls}"
                f" and len({inner} := {bound}.__dict__) == {len(annotation.model_fields)}"
                f" and {bound}.__pydantic_extra__ is None"
                f" and {bound}.__pydantic_private__ is None"
                f" and {self.fields(annotation, inner, (*seen, annotation))})"
            )
        raise TypeError(f"exactly_typed: no exact check for a field of type {annotation!r}")
