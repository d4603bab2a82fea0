"""Canonical JSON (RFC 8785) and fingerprints: golden bytes, refusals, invariances."""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
import struct
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.core.canonical import (
    MAX_SAFE_INTEGER,
    canonical_bytes,
    decimal_string,
    fingerprint,
    sha256_digest,
)
from xaytune.core.errors import FingerprintError, XaytuneError

# --- RFC 8785 golden values -------------------------------------------------------------

# RFC 8785 section 3.2.2 (the sample as a JSON text, escapes exactly as the RFC writes
# them) and section 3.2.3 (its canonical form). The expected bytes are checked twice:
# as the RFC's text and as the RFC's own UTF-8 dump in section 3.2.4.
RFC_SAMPLE_TEXT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""
RFC_CANONICAL_TEXT = (
    r"""{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"""
    r""""string":"€$\u000f\nA'B\"\\\\\"/"}"""
)
RFC_CANONICAL_HEX = """
    7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72
    75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a
    5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31
    65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37
    5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30
    30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d
"""


def test_rfc8785_sample_serialises_byte_exactly():
    sample = json.loads(RFC_SAMPLE_TEXT)
    expected = RFC_CANONICAL_TEXT.encode("utf-8")
    assert expected == bytes.fromhex(RFC_CANONICAL_HEX)  # the two RFC spellings agree
    assert canonical_bytes(sample) == expected
    assert fingerprint(sample) == "sha256:" + hashlib.sha256(expected).hexdigest()


def test_rfc8785_sorts_properties_by_utf16_code_units():
    # RFC 8785 section 3.2.3: the sorting sample and its expected order of values.
    sample = json.loads(
        r"""{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet",
        "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis"}"""
    )
    order = re.findall(r':"([^"]*)"', canonical_bytes(sample).decode("utf-8"))
    assert order == [
        "Carriage Return",
        "One",
        "Control",
        "Latin Small Letter O With Diaeresis",
        "Euro Sign",
        "Emoji: Grinning Face",  # U+1F600 is D83D DE00 in UTF-16: before U+FB33
        "Hebrew Letter Dalet",
    ]


@pytest.mark.parametrize(
    ("bits", "written"),
    [
        # RFC 8785 Appendix B: IEEE 754 bits and their canonical JSON number.
        ("0000000000000000", "0"),
        ("8000000000000000", "0"),
        ("0000000000000001", "5e-324"),
        ("8000000000000001", "-5e-324"),
        ("7fefffffffffffff", "1.7976931348623157e+308"),
        ("4340000000000000", "9007199254740992"),
        ("4430000000000000", "295147905179352830000"),
        ("44b52d02c7e14af5", "9.999999999999997e+22"),
        ("44b52d02c7e14af6", "1e+23"),
        ("444b1ae4d6e2ef50", "1e+21"),
        ("444b1ae4d6e2ef4f", "999999999999999900000"),
        ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
        ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555554", "333333333.33333325"),
        ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
    ],
)
def test_rfc8785_appendix_b_numbers(bits: str, written: str):
    (number,) = struct.unpack(">d", bytes.fromhex(bits))
    assert canonical_bytes(number) == written.encode()


def test_fingerprint_is_sha256_prefix_and_64_hex_of_the_canonical_bytes():
    # sha256 of the two bytes "{}", by any sha256 tool.
    assert fingerprint({}) == (
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    )
    value = {"b": [1, 2.5, None], "a": {"z": True, "y": "text"}}
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", fingerprint(value))
    assert fingerprint(value) == sha256_digest(b'{"a":{"y":"text","z":true},"b":[1,2.5,null]}')


def test_tuples_and_pydantic_models_are_plain_json():
    from pydantic import BaseModel

    class Point(BaseModel):
        x: int
        label: str

    assert canonical_bytes((1, "a")) == canonical_bytes([1, "a"])
    assert canonical_bytes(Point(x=1, label="p")) == b'{"label":"p","x":1}'
    assert canonical_bytes({"p": [Point(x=2, label="q")]}) == b'{"p":[{"label":"q","x":2}]}'


def test_an_integer_and_the_equal_double_are_one_json_number():
    # JSON has one number type: 1 and 1.0 are the same value, so the same fingerprint.
    assert fingerprint({"a": 1}) == fingerprint({"a": 1.0})


# --- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (math.nan, "non-finite"),
        (math.inf, "non-finite"),
        ({"scores": [1.0, -math.inf]}, "non-finite"),
        ({1: "one"}, "non-string-key"),
        ({"nested": {("a",): 1}}, "non-string-key"),
        ({"n": {None: 1}}, "non-string-key"),
        (2**53, "unsafe-integer"),
        (-(2**53), "unsafe-integer"),
        ([1, 2**64], "unsafe-integer"),
        ({1, 2}, "not-json"),
        (b"bytes", "not-json"),
        (object(), "not-json"),
        (Decimal("1.5"), "not-json"),
        ({"when": datetime.date(2026, 10, 12)}, "not-json"),
        ("\ud800", "not-json"),  # a lone surrogate is not I-JSON (RFC 8785 3.2.2.2)
        ({"\udfff": 1}, "not-json"),
    ],
)
def test_canonical_refuses_what_json_cannot_say_exactly(value: Any, reason: str):
    with pytest.raises(FingerprintError) as caught:
        fingerprint(value)
    assert caught.value.reason == reason
    assert isinstance(caught.value, XaytuneError)
    assert "\n" not in str(caught.value)


def test_refusal_names_the_path_of_the_offending_item():
    with pytest.raises(FingerprintError) as caught:
        canonical_bytes({"run": {"scores": [1.0, math.nan]}})
    assert caught.value.reason == "non-finite"
    assert "$.run.scores[1]" in str(caught.value)


def test_safe_integers_at_the_edge_are_accepted():
    assert canonical_bytes(MAX_SAFE_INTEGER) == b"9007199254740991"
    assert canonical_bytes(-MAX_SAFE_INTEGER) == b"-9007199254740991"
    assert MAX_SAFE_INTEGER == 2**53 - 1


# --- decimal_string -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "places", "expected"),
    [
        # Worked by hand: fixed point, half to even, never an exponent, one zero.
        (0.1 + 0.2, 6, "0.300000"),  # 0.30000000000000004 -> 0.300000
        (1, 6, "1.000000"),
        (-1.25, 6, "-1.250000"),
        (Decimal("1.23456789"), 2, "1.23"),
        ("2.5", 0, "2"),  # half to even
        ("3.5", 0, "4"),
        ("0.0000005", 6, "0.000000"),
        ("0.0000015", 6, "0.000002"),
        (-0.0, 6, "0.000000"),  # -0 and 0 are one value: one spelling
        ("-0.0000001", 6, "0.000000"),
        (0, 7, "0.0000000"),  # not "0E-7"
        ("1e-7", 7, "0.0000001"),  # not "1E-7"
        (10**30, 6, "1" + "0" * 30 + ".000000"),  # beyond the default 28-digit precision
        (2**53 + 1, 0, "9007199254740993"),
    ],
)
def test_decimal_string_golden_values(value: Any, places: int, expected: str):
    assert decimal_string(value, places=places) == expected


def test_decimal_string_ignores_the_callers_decimal_context():
    with localcontext() as context:
        context.rounding = ROUND_HALF_UP
        context.prec = 3
        assert decimal_string("2.5", places=0) == "2"
        assert decimal_string("1234.5678", places=2) == "1234.57"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (math.nan, "non-finite"),
        (-math.inf, "non-finite"),
        ("Infinity", "non-finite"),
        (Decimal("NaN"), "non-finite"),
        (True, "not-decimal"),
        ("twelve", "not-decimal"),
    ],
)
def test_decimal_string_refusals(value: Any, reason: str):
    with pytest.raises(FingerprintError) as caught:
        decimal_string(value)
    assert caught.value.reason == reason


# --- properties -------------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8"), max_size=12)  # utf-8: no lone surrogates
_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)
json_values = st.recursive(
    _leaves,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_text, children, max_size=4),
    max_leaves=20,
)
_FAST = settings(max_examples=40, deadline=None)


def _reordered(value: Any, rng: Any) -> Any:
    """The same data with every object's keys in a shuffled insertion order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: _reordered(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [_reordered(item, rng) for item in value]
    return value


@_FAST
@given(value=json_values, rng=st.randoms(use_true_random=False))
def test_key_order_never_changes_a_fingerprint(value: Any, rng: Any):
    assert fingerprint(_reordered(value, rng)) == fingerprint(value)


@_FAST
@given(
    value=json_values,
    indent=st.sampled_from([None, 0, 1, 4, "\t"]),
    separators=st.sampled_from([(",", ":"), (", ", ": "), (" ,  ", " :\t")]),
    ensure_ascii=st.booleans(),
    sort_keys=st.booleans(),
)
def test_whitespace_and_escaping_never_change_a_fingerprint(
    value: Any, indent: Any, separators: tuple[str, str], ensure_ascii: bool, sort_keys: bool
):
    text = json.dumps(
        value, indent=indent, separators=separators, ensure_ascii=ensure_ascii, sort_keys=sort_keys
    )
    assert fingerprint(json.loads(text)) == fingerprint(value)


@settings(max_examples=30, deadline=None)
@given(value=json_values, flow=st.booleans(), rng=st.randoms(use_true_random=False))
def test_yaml_and_json_spellings_of_the_same_data_have_one_fingerprint(
    value: Any, flow: bool, rng: Any
):
    from_json = json.loads(json.dumps(value, indent=2))
    yaml_text = yaml.safe_dump(_reordered(value, rng), default_flow_style=flow, sort_keys=False)
    from_yaml = yaml.safe_load(yaml_text)
    assert fingerprint(from_yaml) == fingerprint(from_json) == fingerprint(value)


def test_hand_written_yaml_and_json_of_one_config_have_one_fingerprint():
    yaml_text = """
    # a comment changes nothing
    budgets: {total_tokens: 4000, tool_calls: 8}
    name: calculator
    tools:
      - calculator
      - unit_convert
    temperature: 0.50
    stop: null
    """
    json_text = (
        '{"name":"calculator","tools":["calculator","unit_convert"],'
        '"budgets":{"tool_calls":8,"total_tokens":4000},"temperature":0.5,"stop":null}'
    )
    from_yaml = yaml.safe_load("\n".join(line[4:] for line in yaml_text.splitlines()))
    assert fingerprint(from_yaml) == fingerprint(json.loads(json_text))


def _leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every scalar and every empty container."""
    if isinstance(value, dict) and value:
        return [p for key, item in value.items() for p in _leaf_paths(item, (*path, key))]
    if isinstance(value, list) and value:
        return [p for i, item in enumerate(value) for p in _leaf_paths(item, (*path, i))]
    return [path]


def _changed(leaf: Any) -> Any:
    """A leaf whose JSON value surely differs from ``leaf``."""
    if leaf is None:
        return 0
    if isinstance(leaf, bool):
        return not leaf
    if isinstance(leaf, int):
        return leaf - 1 if leaf > 0 else leaf + 1
    if isinstance(leaf, float):
        if leaf == 0:
            return 1.0  # -0.0 would be the same JSON number
        return leaf / 2 if abs(leaf) > 1e300 else leaf * 2
    if isinstance(leaf, str):
        return leaf + "x"
    if isinstance(leaf, list):
        return [None]
    return {"k": None}


def _replaced(value: Any, path: tuple[Any, ...], leaf: Any) -> Any:
    if not path:
        return leaf
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replaced(v, rest, leaf) if k == head else v) for k, v in value.items()}
    return [(_replaced(v, rest, leaf) if i == head else v) for i, v in enumerate(value)]


@_FAST
@given(value=json_values, data=st.data())
def test_changing_any_one_leaf_changes_the_fingerprint(value: Any, data: Any):
    path = data.draw(st.sampled_from(_leaf_paths(value)))
    leaf = value
    for step in path:
        leaf = leaf[step]
    mutated = _replaced(value, path, _changed(leaf))
    assert fingerprint(mutated) != fingerprint(value)
