"""exactly_typed: a record holds exactly what validating it gives, or it does not."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from xaytune.core.exact import exactly_typed

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Inner(BaseModel):
    model_config = _FROZEN

    kind: Literal["a", "b"]
    label: str | None = None


class Outer(BaseModel):
    model_config = _FROZEN

    count: int
    flag: bool
    name: str
    inner: Inner | None
    items: tuple[Inner, ...] = ()


class Sub(Inner):
    pass


def outer(**update) -> Outer:
    valid = Outer(count=1, flag=True, name="n", inner=Inner(kind="a"), items=(Inner(kind="b"),))
    return valid.model_copy(update=update)


def test_a_validated_record_is_exactly_typed():
    assert exactly_typed(outer())
    assert exactly_typed(outer(inner=None, items=()))
    parsed = Outer.model_validate_json('{"count":2,"flag":false,"name":"x","inner":null}')
    assert exactly_typed(parsed)


@pytest.mark.parametrize(
    "update",
    [
        {"count": True},  # a bool is not an int
        {"count": 1.0},
        {"flag": 1},
        {"name": None},
        {"inner": Sub(kind="a")},  # a subclass is not the class
        {"inner": {"kind": "a", "label": None}},  # a dict is not a record
        {"inner": Inner(kind="a").model_copy(update={"kind": "c"})},  # not a literal value
        {"inner": Inner(kind="a").model_copy(update={"label": 3})},
        {"items": [Inner(kind="a")]},  # a list is not a tuple
        {"items": (Inner(kind="a"), "b")},
    ],
    ids=repr,
)
def test_a_value_validation_would_not_give_is_found(update):
    assert not exactly_typed(outer(**update))


def test_a_missing_or_added_field_is_found():
    record = outer()
    missing = Outer.model_construct(count=1, flag=True, name="n")  # no inner
    assert not exactly_typed(missing)
    added = record.model_copy()
    object.__setattr__(added, "__dict__", {**record.__dict__, "extra": 1})
    assert not exactly_typed(added)


def test_a_field_type_it_cannot_check_is_said_at_once():
    class Odd(BaseModel):
        value: list[int]

    with pytest.raises(TypeError, match="no exact check"):
        exactly_typed(Odd(value=[1]))


@pytest.mark.parametrize("slot", ["__pydantic_extra__", "__pydantic_private__"])
def test_an_extra_or_private_value_is_found(slot):
    # pydantic's == compares these too; validation of these classes never sets them.
    record = outer()
    object.__setattr__(record, slot, {"note": 1})
    assert not exactly_typed(record)


class Tagged(BaseModel):
    model_config = _FROZEN

    tags: dict[str, Any] = {}


@pytest.mark.parametrize(
    ("tags", "exact"),
    [({}, True), ({"a": [1, {"b": None}]}, True), ({1: "a"}, False), ([("a", 1)], False)],
    ids=repr,
)
def test_a_text_keyed_dict_is_checked_for_its_keys_only(tags, exact):
    assert exactly_typed(Tagged().model_copy(update={"tags": tags})) is exact


def test_a_class_that_may_hold_extra_or_private_values_is_said_at_once():
    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")

        value: int

    class Private(BaseModel):
        value: int
        _note: str = "n"

    for cls in (Open, Private):
        with pytest.raises(TypeError, match="extra or private"):
            exactly_typed(cls(value=1))
