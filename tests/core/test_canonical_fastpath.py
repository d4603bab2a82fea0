"""The stdlib fast path of canonical_bytes is byte-identical to rfc8785 (RFC 8785)."""

from __future__ import annotations

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.core.canonical import (
    MAX_SAFE_INTEGER,
    canonical_array_chunks,
    canonical_bytes,
    canonical_object_chunks,
)
from xaytune.core.errors import FingerprintError

# Every character but lone surrogates (not I-JSON): control characters, DEL, the
# private-use area just below U+FFFF and astral characters are all in.
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_scalars = st.none() | st.booleans() | _text | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
_floats = st.floats(allow_nan=False, allow_infinity=False)


def _json(leaves):
    return st.recursive(
        leaves,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(_text, children, max_size=4)
        ),
        max_leaves=25,
    )


@settings(max_examples=400, deadline=None)
@given(_json(_scalars))
def test_float_free_data_serialises_exactly_as_rfc8785(value):
    assert canonical_bytes(value) == rfc8785.dumps(value)


@settings(max_examples=300, deadline=None)
@given(_json(_scalars | _floats))
def test_data_with_floats_serialises_exactly_as_rfc8785(value):
    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_astral_keys_sort_by_utf16_code_units_as_rfc8785_requires():
    # U+1F600 is D83D DE00 in UTF-16, which sorts before U+FF21; by code point it is after.
    value = {"\uff21": 1, "\U0001f600": 2}
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_bytes(value).index("\U0001f600".encode()) < canonical_bytes(value).index(
        "\uff21".encode()
    )


@settings(max_examples=3000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_serialises_exactly_as_rfc8785(value):
    # Tiny, huge, integral, negative zero, subnormal: each spelling RFC 8785 uses.
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_bytes({"v": [value, -value]}) == rfc8785.dumps({"v": [value, -value]})


@settings(max_examples=3000, deadline=None)
@given(st.floats(min_value=5e-7, max_value=2e-4))
def test_small_floats_respelled_in_fixed_notation_are_rfc8785s(value):
    # 1e-6 <= |x| < 1e-4 is respelled from repr's digits, not written by rfc8785:
    # the range around it, both signs, must still be rfc8785's bytes.
    assert canonical_bytes([value, -value]) == rfc8785.dumps([value, -value])


def test_float_spellings_at_the_notation_boundaries_are_rfc8785s():
    edges = [0.0, -0.0, 1e-4, 9.999999999999999e-05, 1e-6, 1e-7, 1.5e-7, 2.3e-05, 1e16,
             1e21, 1e22, 2.0**53, 2.0**53 + 2, -(2.0**53), 5e-324, 1.7976931348623157e308,
             0.1, 123.0, 4503599627370496.5, 9.999999999999999e-07, 1.0000000000000002e-06,
             -1e-6, -9.999999999999999e-05, 1.2345678901234567e-05]  # fmt: skip
    for value in edges:
        assert canonical_bytes(value) == rfc8785.dumps(value), value
    assert canonical_bytes(edges) == rfc8785.dumps(edges)


def test_a_string_that_looks_like_a_float_placeholder_is_written_as_a_string():
    # The fast path puts some floats in place after encoding; a string of the data
    # spelled like its placeholder must stay a string.
    for value in (
        {"a": "\x000\x00", "b": 1e-5},
        {"a": "\x005\x00", "b": 1e-5},
        ["\x000\x00"],
        {"\x000\x00": 2e-9},
        {"a": '"\x000\x00"', "b": 3e-8},
    ):
        assert canonical_bytes(value) == rfc8785.dumps(value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_text, _json(_scalars | _floats), max_size=6))
def test_an_object_joined_from_its_members_bytes_is_its_canonical_bytes(value):
    members = {key: (canonical_bytes(item),) for key, item in value.items()}
    assert b"".join(canonical_object_chunks(members)) == canonical_bytes(value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_json(_scalars | _floats), max_size=4), max_size=5))
def test_an_array_joined_from_batches_is_its_canonical_bytes(batches):
    flat = [item for batch in batches for item in batch]
    assert b"".join(canonical_array_chunks(batches)) == canonical_bytes(flat)


# Long lists (a value per task in a report) are looked at whole by their items'
# types: leaves, safe integers, and numbers spelled in one pass. Held to rfc8785.
_LONG_ITEMS = (
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | _floats
    | st.floats(min_value=1e-7, max_value=2e-4)
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LONG_ITEMS, min_size=14, max_size=40))
def test_long_lists_of_numbers_serialise_exactly_as_rfc8785(items):
    assert canonical_bytes(items) == rfc8785.dumps(items)
    assert canonical_bytes({"values": items, "n": [1e-5] * 20}) == rfc8785.dumps(
        {"values": items, "n": [1e-5] * 20}
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | st.booleans() | _text, min_size=14, max_size=40))
def test_long_lists_of_leaves_serialise_exactly_as_rfc8785(items):
    assert canonical_bytes(items) == rfc8785.dumps(items)


class _Int(int):
    pass


class _Float(float):
    pass


def test_long_lists_the_fast_path_does_not_write_are_left_to_the_general_path():
    # An unsafe integer or a non-finite float among many is refused with its reason;
    # a subclass is written as the general path writes it.
    long = [1, 2.5, None] * 6
    with pytest.raises(FingerprintError) as caught:
        canonical_bytes([*long, MAX_SAFE_INTEGER + 1])
    assert caught.value.reason == "unsafe-integer"
    with pytest.raises(FingerprintError) as caught:
        canonical_bytes([*range(20), -MAX_SAFE_INTEGER - 1])
    assert caught.value.reason == "unsafe-integer"
    with pytest.raises(FingerprintError) as caught:
        canonical_bytes([*long, float("nan")])
    assert caught.value.reason == "non-finite"
    mixed = [*long, _Int(7), _Float(0.5), True, [1e-5], {"a": 1e-6}]
    expected = rfc8785.dumps([*long, 7, 0.5, True, [1e-5], {"a": 1e-6}])
    assert canonical_bytes(mixed) == expected
    assert canonical_bytes([*range(20), _Int(3)]) == rfc8785.dumps([*range(20), 3])
