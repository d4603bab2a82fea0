"""The stdlib fast path of canonical_bytes is byte-identical to rfc8785 (RFC 8785)."""

from __future__ import annotations

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.core.canonical import MAX_SAFE_INTEGER, canonical_bytes

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
