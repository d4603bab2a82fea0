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
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Any

import rfc8785

from xaytune.core.errors import FingerprintError

__all__ = [
    "MAX_SAFE_INTEGER",
    "canonical_bytes",
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

    Data without floats and without keys beyond the BMP is serialised by the
    stdlib as sorted, compact JSON, which is byte-identical to RFC 8785 there (a
    property test holds the two together); anything else goes through ``rfc8785``.
    """
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


_STDLIB_JCS = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
)


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
