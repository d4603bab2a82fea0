"""``json``: the answer and the reference as JSON values, equal in canonical form.

Both are parsed as JSON (surrounding whitespace allowed) and compared by their RFC
8785 canonical bytes (``xaytune.core.canonical``): key order and spacing never
matter, and numbers compare by value as JCS writes them (``1``, ``1.0`` and ``1e0``
are one number). Refused as JSON: ``NaN``, ``Infinity``, a key twice in one object,
an integer beyond 2^53 (it cannot be canonical), anything that is not JSON text.

An answer that is not JSON fails with reason ``not-json``; a reference that is not
JSON is an error (the evaluation refuses, ``scorer-failed``).
"""

from __future__ import annotations

import json as jsonlib
from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import FingerprintError
from xaytune.evaluation.scorers._score import Score
from xaytune.plugins import scorer

__all__ = ["json"]


class _NotJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _NotJson("a key appears twice in one object")
    return dict(pairs)


def _canonical(text: str) -> bytes | None:
    """The canonical bytes of the JSON value ``text``, or None when it is not one."""
    try:
        value = jsonlib.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
        return canonical_bytes(value)
    except (ValueError, RecursionError, FingerprintError):
        return None  # JSONDecodeError and _NotJson are ValueErrors


@scorer(name="json")
def json(answer: str, reference: str) -> Score:
    """Success when both are the same JSON value."""
    wanted = _canonical(reference)
    if wanted is None:
        raise ValueError("the reference is not JSON")
    given = _canonical(answer)
    if given is None:
        return Score(success=False, reason="not-json")
    return Score(success=given == wanted)
