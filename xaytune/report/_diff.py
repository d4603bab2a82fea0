"""What differs between two candidates, as a reader wants it: leaf paths, old -> new.

The released report's ``config_diff`` names each dotted path at which the harness
configs differ, with whole values (a list of parts, a 100 KB prompt). This module
opens those values up to their differing leaves and folds any long value to a short
prefix, its length and its sha256, so the page stays readable and never embeds a
prompt override whole (its digest identifies it; report.json holds the value).

Lists of records that each carry a distinct ``name`` (parts, tools) are compared by
name (``parts[calculator].version``), not by position: one part more on one side
would otherwise shift and "change" every later one. Other lists are leaves.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from xaytune.comparison.compare import ConfigChange
from xaytune.core.canonical import canonical_bytes

__all__ = ["FOLD_AT", "LeafChange", "fold", "leaf_changes"]

# A value longer than this (in characters, as shown) is folded; its first
# _PREFIX characters stay visible. A one-paragraph system prompt stays whole.
FOLD_AT = 200
_PREFIX = 80
_ABSENT = object()


@dataclass(frozen=True, slots=True)
class LeafChange:
    """One leaf at which the candidates differ: its path, both sides as shown (folded
    when long; "(absent)" on the side that lacks it) and the change word."""

    path: str
    change: str  # added (only in b), removed (only in a), changed
    a: str
    b: str


def _shown(value: Any) -> str:
    """A leaf as text: a string as itself, anything else as compact sorted JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def fold(value: Any) -> str:
    """``value`` as shown, or, when longer than FOLD_AT characters, its first characters,
    its length and the sha256 of its UTF-8 text (a string) or canonical JSON (other)."""
    text = _shown(value)
    if len(text) <= FOLD_AT:
        return text
    data = text.encode() if isinstance(value, str) else canonical_bytes(value)
    digest = hashlib.sha256(data).hexdigest()
    return f"{text[:_PREFIX]}… ({len(text):,} characters, sha256:{digest})"


def _named(value: Any) -> dict[str, Any] | None:
    """A list of records with distinct names, by name (None for any other value)."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in value):
        return None
    names = [item["name"] for item in value]
    if len(set(names)) != len(names):
        return None
    return {item["name"]: item for item in value}


def _leaves(path: str, a: Any, b: Any) -> list[tuple[str, Any, Any]]:
    """The differing leaves under ``path`` (_ABSENT on a side that lacks one)."""
    if a is not _ABSENT and b is not _ABSENT and canonical_bytes(a) == canonical_bytes(b):
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        children = [(f"{path}.{key}", a.get(key, _ABSENT), b.get(key, _ABSENT)) for key in a]
        children += [(f"{path}.{key}", _ABSENT, b[key]) for key in b if key not in a]
    else:
        named_a, named_b = _named(a), _named(b)
        if named_a is None or named_b is None:
            return [(path, a, b)]
        children = [(f"{path}[{n}]", named_a[n], named_b.get(n, _ABSENT)) for n in named_a]
        children += [(f"{path}[{n}]", _ABSENT, named_b[n]) for n in named_b if n not in named_a]
    found = []
    for child, value_a, value_b in sorted(children, key=lambda item: item[0]):
        if value_a is _ABSENT or value_b is _ABSENT:
            found.append((child, value_a, value_b))  # a whole record added or removed
        else:
            found += _leaves(child, value_a, value_b)
    return found


def leaf_changes(changes: tuple[ConfigChange, ...] | list[ConfigChange]) -> tuple[LeafChange, ...]:
    """The released config diff opened to its differing leaves, long values folded."""
    rows = []
    for change in changes:
        a = _ABSENT if change.change == "added" else change.a
        b = _ABSENT if change.change == "removed" else change.b
        for path, value_a, value_b in _leaves(change.path, a, b):
            word = "added" if value_a is _ABSENT else "removed" if value_b is _ABSENT else "changed"
            rows.append(
                LeafChange(
                    path=path,
                    change=word,
                    a="(absent)" if value_a is _ABSENT else fold(value_a),
                    b="(absent)" if value_b is _ABSENT else fold(value_b),
                )
            )
    return tuple(rows)
