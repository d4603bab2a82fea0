"""Canonical JSON (RFC 8785 / JCS) and sha256 fingerprints.

JCS itself comes from the maintained ``rfc8785`` package. On top of it the project
refuses what could make a fingerprint ambiguous or machine-dependent: NaN and
Infinity, non-string keys, integers beyond 2^53 (JSON numbers are IEEE doubles),
and non-JSON types. Scores and money inside fingerprinted objects are kept as ints
or decimal strings (see :func:`decimal_string`) so float formatting never moves a
fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Any

import rfc8785

from xaytune.core.errors import FingerprintError

__all__ = [
    "MAX_SAFE_INTEGER",
    "canonical_array_chunks",
    "canonical_bytes",
    "canonical_object_chunks",
    "decimal_string",
    "fingerprint",
    "sha256_digest",
    "to_plain",
]

MAX_SAFE_INTEGER = 2**53 - 1


def to_plain(value: Any, *, where: str = "$") -> Any:
    """Return ``value`` as plain JSON data (dict/list/str/int/float/bool/None).

    Pydantic models are dumped in JSON mode; tuples become lists. Anything that
    JSON cannot say exactly is refused with the path of the offending item.
    """
    return _plain(value, where, [False])


def _plain(value: Any, where: str, needs_jcs: list[bool]) -> Any:
    # ``needs_jcs[0]`` is set when the data has a float, or a key outside the Basic
    # Multilingual Plane: the two places where RFC 8785 differs from sorted,
    # compact stdlib JSON (ES6 number formatting; UTF-16 key order).
    if value is None or value is True or value is False or type(value) is str:
        return value
    kind = type(value)
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
        raise FingerprintError(
            "unsafe-integer", f"integer at {where} is beyond 2^53 and cannot be canonical"
        )
    if kind is dict or (kind is not str and isinstance(value, Mapping)):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise FingerprintError("non-string-key", f"key {key!r} at {where} is not a string")
            if not key.isascii() and max(key) > "\uffff":
                needs_jcs[0] = True
            plain[key] = _plain(item, f"{where}.{key}", needs_jcs)
        return plain
    if kind is list or kind is tuple:
        return [_plain(item, f"{where}[{i}]", needs_jcs) for i, item in enumerate(value)]
    if isinstance(value, bool | str):
        return bool(value) if isinstance(value, bool) else str(value)
    if isinstance(value, int):
        return _plain(int(value), where, needs_jcs)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FingerprintError("non-finite", f"NaN or Infinity at {where} is not JSON")
        needs_jcs[0] = True
        return float(value)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_plain(item, f"{where}[{i}]", needs_jcs) for i, item in enumerate(value)]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(mode="json"), where, needs_jcs)
    raise FingerprintError(
        "not-json", f"value of type {type(value).__name__} at {where} is not JSON data"
    )


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of ``value`` after the project's checks.

    Serialised by the stdlib as sorted, compact JSON, which is byte-identical to RFC
    8785 for strings, integers, and floats whose shortest repr is what RFC 8785
    writes (a non-integral float from 1e-4 up; an integral one below 2^53 is written
    as the integer). Any other float is written by ``rfc8785`` itself and put in
    place; data with a key beyond the BMP (UTF-16 key order), or anything unusual,
    goes through ``rfc8785`` whole. A property test holds the paths together.
    """
    floats: list[float | str] = []
    try:
        data = _scan(value, floats)
        text = _STDLIB_JCS.encode(data)
        if floats:
            text = _put_floats(text, floats)
        return text.encode("utf-8")
    except (_Fallback, ValueError, TypeError, RecursionError):
        # The general path decides, and names any refusal with its path.
        return _jcs_bytes(value)


def _jcs_bytes(value: Any) -> bytes:
    needs_jcs = [False]
    plain = _plain(value, "$", needs_jcs)
    try:
        if needs_jcs[0]:
            return rfc8785.dumps(plain)
        return _STDLIB_JCS.encode(plain).encode("utf-8")
    except (rfc8785.CanonicalizationError, UnicodeError) as error:
        # A lone surrogate in a string or a key (the latter escapes rfc8785 as a
        # UnicodeEncodeError): not I-JSON (RFC 8785 3.2.2.2), so refused.
        raise FingerprintError("not-json", f"value cannot be canonical: {error}") from None


class _Fallback(Exception):
    """The fast path cannot write this value byte-exactly: use the general path."""


_SAFE_FLOAT_MIN = 1e-4  # repr switches to exponent notation below this
_FLOAT_MARK = "\x00"
_FLOAT_TOKEN = re.compile(r'"\\u0000(\d+)\\u0000"')


def _scan(value: Any, floats: list[float | str]) -> Any:
    """``value`` ready for the stdlib encoder, the same object where nothing changes.

    Raises :class:`_Fallback` for anything the fast path does not write exactly.
    A float that repr would not write as RFC 8785 does becomes a placeholder string
    (its index in ``floats``), replaced after encoding by :func:`_put_floats`.
    """
    kind = type(value)
    if kind is str or value is None or value is True or value is False:
        return value
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
        raise _Fallback
    if kind is float:
        if value - value != 0.0:  # NaN or Infinity: refused by the general path
            raise _Fallback
        if value.is_integer():
            if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
                return int(value)  # RFC 8785 writes 3.0 as 3 and -0.0 as 0
        elif abs(value) >= _SAFE_FLOAT_MIN:
            return value  # repr writes it in fixed notation, shortest digits: as RFC 8785
        floats.append(value)
        return f"{_FLOAT_MARK}{len(floats) - 1}{_FLOAT_MARK}"
    if kind is dict:
        copy = None
        for key, item in value.items():
            if type(key) is not str or (not key.isascii() and max(key) > "\uffff"):
                raise _Fallback
            # Strings, None, booleans and safe integers (most leaves) are checked inline.
            item_kind = type(item)
            if item_kind is str or item is None or item is True or item is False:
                continue
            if item_kind is int and -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                continue
            new = _scan(item, floats)
            if new is not item:
                if copy is None:
                    copy = dict(value)
                copy[key] = new
        return value if copy is None else copy
    if kind is list or kind is tuple:
        if len(value) >= _LONG:
            # A long list (a value per task) is looked at whole, by its items' types.
            kinds = set(map(type, value))
            if kinds <= _LEAVES:
                return value
            if kinds <= _INTEGERS:
                if min(value) >= -MAX_SAFE_INTEGER and max(value) <= MAX_SAFE_INTEGER:
                    return value
                raise _Fallback
            if float in kinds and kinds <= _NUMBERS:
                # Spelled here in one pass and put in place as one placeholder,
                # instead of a placeholder per float.
                floats.append(_numbers_text(value))
                return f"{_FLOAT_MARK}{len(floats) - 1}{_FLOAT_MARK}"
        items = None
        for i, item in enumerate(value):
            item_kind = type(item)
            if item_kind is str or item is None or item is True or item is False:
                continue
            if item_kind is int and -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                continue
            new = _scan(item, floats)
            if new is not item:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping | Sequence):
        return _scan(dump(mode="json"), floats)
    raise _Fallback


# Lists of at least this many items are looked at by their items' exact types.
_LONG = 16
_LEAVES = frozenset({str, bool, type(None)})  # written by the stdlib as RFC 8785 does
_INTEGERS = frozenset({int})
_NUMBERS = frozenset({float, int, bool, type(None)})  # spelled whole (_numbers_text)
_WORDS = {None: "null", True: "true", False: "false"}


def _numbers_text(items: Sequence[Any]) -> str:
    """A list of floats, ints, booleans and nulls as RFC 8785 writes it (each item as
    :func:`_scan` and :func:`_float_text` would put it); :class:`_Fallback` for an
    item the fast path does not write."""
    return "[" + ",".join([_number_text(item) for item in items]) + "]"


def _number_text(item: Any) -> str:
    kind = type(item)
    if kind is float:
        if item - item != 0.0:  # NaN or Infinity: refused by the general path
            raise _Fallback
        if item.is_integer():
            if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return str(int(item))
        elif abs(item) >= _SAFE_FLOAT_MIN:
            return repr(item)
        return _float_text(item)
    if kind is int:
        if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            return str(item)
        raise _Fallback
    return _WORDS[item]


def _put_floats(text: str, floats: list[float | str]) -> str:
    """Replace each float placeholder by the float as ``rfc8785`` writes it (or by the
    text :func:`_numbers_text` spelled for a list)."""
    found: list[int] = []

    def written(match: re.Match[str]) -> str:
        index = int(match[1])
        found.append(index)
        if index >= len(floats):
            raise _Fallback
        held = floats[index]
        return held if isinstance(held, str) else _float_text(held)

    text = _FLOAT_TOKEN.sub(written, text)
    # A string of the data that looks like a placeholder would show up here twice.
    if len(found) != len(floats) or len(set(found)) != len(floats):
        raise _Fallback
    return text


def _float_text(value: float) -> str:
    """``value`` as ``rfc8785`` writes it. From 1e-6 to 1e-4 (a per-task cost in
    dollars, say) ``repr`` writes an exponent and RFC 8785 fixed notation with the same
    shortest digits: respelled here, as ``rfc8785`` itself does from ``str(value)``,
    without its per-call cost; any other float is left to ``rfc8785``."""
    magnitude = abs(value)
    if 1e-6 <= magnitude < _SAFE_FLOAT_MIN:
        mantissa, _, exponent = repr(magnitude).partition("e")  # "2.3e-05"
        zeros = "0" * (-int(exponent) - 1)
        return ("-0." if value < 0 else "0.") + zeros + mantissa.replace(".", "")
    return rfc8785.dumps(value).decode("ascii")


_STDLIB_JCS = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
)


def canonical_object_chunks(members: Mapping[str, Iterable[bytes]]) -> Iterator[bytes]:
    """Canonical bytes of a JSON object, in pieces, from its members' canonical bytes.

    ``members`` maps each key to the canonical bytes of its value (in pieces); keys
    are put in RFC 8785 order (UTF-16 code units). Joined, the pieces are
    ``canonical_bytes`` of the object, which is never held whole as data: a record
    of 100,000 entries is serialised a batch at a time.
    """
    yield b"{"
    for i, key in enumerate(sorted(members, key=_utf16)):
        yield (b',"' if i else b'"') + _key_bytes(key) + b'":'
        yield from members[key]
    yield b"}"


def canonical_array_chunks(batches: Iterable[list[Any]]) -> Iterator[bytes]:
    """Canonical bytes of a JSON array, in pieces, from consecutive batches of items."""
    yield b"["
    first = True
    for batch in batches:
        if batch:
            inner = canonical_bytes(batch)[1:-1]  # "[a,b]" -> "a,b"
            yield inner if first else b"," + inner
            first = False
    yield b"]"


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be")


def _key_bytes(key: str) -> bytes:
    if type(key) is not str:
        raise FingerprintError("non-string-key", f"key {key!r} is not a string")
    return canonical_bytes(key)[1:-1]


def sha256_digest(data: bytes) -> str:
    """``"sha256:<hex>"`` of raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def fingerprint(value: Any) -> str:
    """``"sha256:<64 hex>"`` over the canonical bytes of ``value``."""
    return sha256_digest(canonical_bytes(value))


def decimal_string(value: int | float | Decimal | str, *, places: int = 6) -> str:
    """A fixed-point decimal string for scores and money inside fingerprinted objects.

    ``decimal_string(0.1 + 0.2) == "0.300000"`` on every machine, so the float's
    shortest repr never enters a fingerprint. Rounds half to even; refuses NaN and
    Infinity (``non-finite``) and what is not a number, bools included (``not-decimal``).
    """
    if isinstance(value, bool):
        raise FingerprintError("not-decimal", f"{value!r} is a bool, not a number")
    try:
        number = Decimal(str(value)) if not isinstance(value, Decimal) else value
    except InvalidOperation:
        raise FingerprintError("not-decimal", f"{value!r} is not a decimal number") from None
    if not number.is_finite():
        raise FingerprintError("non-finite", f"decimal {value!r} is not finite")
    quantum = Decimal(1).scaleb(-places)
    # A fresh context, not the caller's: its rounding never moves a fingerprint, and its
    # precision fits any quantize (the default 28 digits refuse 1e30 at 6 places).
    # "f" never writes an exponent ("0E-7"); -0 is written as 0 (one value, one spelling).
    context = Context(prec=max(28, number.adjusted() + places + 2), rounding=ROUND_HALF_EVEN)
    quantized = number.quantize(quantum, context=context)
    if quantized.is_zero():
        quantized = quantized.copy_abs()
    return format(quantized, "f")
