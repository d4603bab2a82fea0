"""Identifier validation: ids from config or data are checked before they touch paths."""

from __future__ import annotations

import re

from xaytune.core.errors import XaytuneError
from xaytune.core.limits import quote

__all__ = ["ID_PATTERN", "check_id", "is_valid_id"]

# Letters, digits, dot, underscore, dash; starts with a letter or digit; <= 128 chars.
# Rules out "..", "/", "\\", NUL and empty ids, so an id is always a safe path part.
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def is_valid_id(value: object) -> bool:
    """True when ``value`` is a string usable as one path component."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


def check_id(value: object, *, what: str, error: type[XaytuneError] = XaytuneError) -> str:
    """Return ``value`` if it is a valid id, else raise ``error`` with reason ``bad-id``."""
    if not is_valid_id(value):
        raise error(
            "bad-id",
            f"{what} {quote(value)} is not a valid id (letters, digits, '.', '_', '-'; "
            "starts with a letter or digit; at most 128 characters)",
        )
    return value  # type: ignore[return-value]
