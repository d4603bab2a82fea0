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
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise FingerprintError(
                "unsafe-integer", f"integer at {where} is beyond 2^53 and cannot be canonical"
            )
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FingerprintError("non-finite", f"NaN or Infinity at {where} is not JSON")
        return value
    if isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise FingerprintError("non-string-key", f"key {key!r} at {where} is not a string")
            plain[key] = to_plain(item, where=f"{where}.{key}")
        return plain
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [to_plain(item, where=f"{where}[{i}]") for i, item in enumerate(value)]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return to_plain(dump(mode="json"), where=where)
    raise FingerprintError(
        "not-json", f"value of type {type(value).__name__} at {where} is not JSON data"
    )


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of ``value`` after the project's checks."""
    plain = to_plain(value)
    try:
        return rfc8785.dumps(plain)
    except (rfc8785.CanonicalizationError, UnicodeError) as error:
        # A lone surrogate in a string or a key (the latter escapes rfc8785 as a
        # UnicodeEncodeError): not I-JSON (RFC 8785 3.2.2.2), so refused.
        raise FingerprintError("not-json", f"value cannot be canonical: {error}") from None


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
