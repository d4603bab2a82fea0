"""The seal, as an attempt (and a recovery) writes it and as verification expects it:
one builder, so the seal cannot be spelled two ways, and one check of a parsed seal's
form (:func:`seal_problem`), so verification and assembly refuse the same seals."""

from __future__ import annotations

import builtins
import typing
from typing import Any

from xaytune.core.canonical import MAX_SAFE_INTEGER, canonical_bytes
from xaytune.harness.evidence._template import LineTemplate, json_string, placeholder
from xaytune.harness.evidence.store import (
    SEAL_SCHEMA,
    AttemptSeal,
    Outcome,
    SpendRecord,
    Terminal,
    TrajectorySeal,
)
from xaytune.harness.evidence.trajectory import WRITER

__all__ = ["SEAL_FORMAT", "seal_facts", "seal_line", "seal_line_of", "seal_problem"]

# The seal's form, as its records name it.
_SEAL_KEYS = frozenset(field.alias or name for name, field in AttemptSeal.model_fields.items())
_CHAIN_KEYS = frozenset(TrajectorySeal.model_fields)
_OUTCOME_KEYS = frozenset(Outcome.model_fields)
_SPEND_KEYS = frozenset(SpendRecord.model_fields)
# Spend counts a provider may leave unreported (null): the fields typed ``int | None``.
_NULLABLE_SPEND = frozenset(
    name
    for name, field in SpendRecord.model_fields.items()
    if type(None) in typing.get_args(field.annotation)
)
_STATUSES = frozenset(typing.get_args(AttemptSeal.model_fields["status"].annotation))
_TERMINALS = frozenset(typing.get_args(Terminal))
_TEXT = (str, type(None))
# A count is a JSON integer canonical JSON writes exactly (RFC 8785: |n| < 2^53).
_MAX_COUNT = 2**53 - 1


def seal_facts(
    *,
    number: int,
    status: str,
    outcome: dict[str, Any] | None,
    spend: dict[str, int | None],
    events: int,
    bytes: int,
    head: str,
    record_digest: str,
    recovered: bool,
) -> dict[str, Any]:
    """A seal as a JSON object: status, outcome, spend, the chain's facts, the record's
    digest. Validated on the way out of the store
    (:class:`~xaytune.harness.store.AttemptSeal`), not in."""
    return {
        "schema": SEAL_SCHEMA,
        "attempt": number,
        "status": status,
        "outcome": outcome,
        "spend": spend,
        "trajectory": {"writer": WRITER, "events": events, "bytes": bytes, "head": head},
        "attempt_record": record_digest,
        "recovered": recovered,
    }


def seal_line(**facts: Any) -> bytes:
    """The seal of :func:`seal_facts` as its line: canonical, newline-terminated."""
    return canonical_bytes(seal_facts(**facts)) + b"\n"


# The seal line of an attempt that was not recovered, spelled once by seal_line itself
# with placeholders, as a ``%`` format of its holes (in the line's order).
_HOLES = ("number", "record", "outcome", "spend", "status", "bytes", "events", "head")
_MARKS = {name: canonical_bytes(placeholder(name)) for name in _HOLES}
SEAL_FORMAT = LineTemplate(
    seal_line(
        number=placeholder("number"),
        status=placeholder("status"),
        outcome=placeholder("outcome"),
        spend=placeholder("spend"),
        events=placeholder("events"),
        bytes=placeholder("bytes"),
        head=placeholder("head"),
        record_digest=placeholder("record"),
        recovered=False,
    ),
    _MARKS,
).format(_HOLES)
_STATUS_BYTES = {status: canonical_bytes(status) for status in _STATUSES}


def seal_line_of(
    *,
    number: int,
    status: str,
    outcome: bytes,
    spend: bytes,
    events: int,
    bytes: int,
    head: str,
    record_digest: str,
) -> builtins.bytes | None:
    """:func:`seal_line` of an attempt that was not recovered, from its outcome's and
    spend's canonical bytes (``outcome``, ``spend``: spelled once for the seal and the
    end event): ``seal_line(..., outcome=o, spend=s, recovered=False)`` where
    ``outcome == canonical_bytes(o)`` and ``spend == canonical_bytes(s)``.

    None for a fact it does not spell exactly as :func:`seal_line` does (a count that
    is not a safe integer, an unknown status): the caller takes :func:`seal_line`.
    """
    status_bytes = _STATUS_BYTES.get(status) if type(status) is str else None
    counts = (number, bytes, events)
    if status_bytes is None or not all(
        type(count) is int and -MAX_SAFE_INTEGER <= count <= MAX_SAFE_INTEGER for count in counts
    ):
        return None
    if type(head) is not str or type(record_digest) is not str:
        return None
    return SEAL_FORMAT % (
        b"%d" % number,
        json_string(record_digest),
        outcome,
        spend,
        status_bytes,
        b"%d" % bytes,
        b"%d" % events,
        json_string(head),
    )


def seal_problem(seal: Any) -> str | None:
    """What makes ``seal`` (a parsed seal line) other than a seal a writer writes, or
    None: its keys (every one, none added, at every level), its schema and writer,
    and the exact JSON type of every value (``1.0`` and ``true`` are not ``1``, so
    ``==`` on a seal that passes is JSON equality). Counts are non-negative safe
    integers. What the values must equal (the record's digest, the chain) is the
    caller's to compare. In the spend, only the counts a provider may leave
    unreported (``cached_tokens``, ``reasoning_tokens``) may be null.
    """
    problem = _object_problem(seal, "", _SEAL_KEYS) or _object_problem(
        seal["trajectory"], "trajectory", _CHAIN_KEYS
    )
    if problem is not None:
        return problem
    chain = seal["trajectory"]
    if seal["schema"] != SEAL_SCHEMA:
        return f"a seal of another schema ({str(seal['schema'])[:40]!r})"
    if chain["writer"] != WRITER:
        return f"a seal of another writer ({str(chain['writer'])[:40]!r})"
    status = seal["status"]
    if not (
        _is_count(seal["attempt"])
        and _is_count(chain["events"])
        and _is_count(chain["bytes"])
        and type(chain["head"]) is str
        and type(seal["attempt_record"]) is str
        and type(seal["recovered"]) is bool
        and type(status) is str
        and status in _STATUSES
    ):
        return "a seal with ill-typed facts"
    spend = seal["spend"]
    problem = _object_problem(spend, "spend", _SPEND_KEYS)
    if problem is not None:
        return problem
    counts = [v for k, v in spend.items() if v is not None or k not in _NULLABLE_SPEND]
    if not all(type(v) is int for v in counts) or min(counts) < 0 or max(counts) > _MAX_COUNT:
        return "a seal with ill-typed spend"
    outcome = seal["outcome"]
    if outcome is None:
        return None
    problem = _object_problem(outcome, "outcome", _OUTCOME_KEYS)
    if problem is not None:
        return problem
    terminal = outcome["terminal"]
    if (
        type(terminal) is not str
        or terminal not in _TERMINALS
        or type(outcome["answer"]) not in _TEXT
        or type(outcome["detail"]) not in _TEXT
    ):
        return "a seal with ill-typed outcome"
    return None


def _is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _MAX_COUNT


def _object_problem(value: Any, part: str, keys: frozenset[str]) -> str | None:
    """What makes ``value`` other than a JSON object of exactly ``keys`` (the seal's
    ``part``, or the seal itself), or None."""
    whose = f"a seal whose {part}" if part else "a seal"
    if type(value) is not dict:
        return f"{whose} is not a JSON object"
    if value.keys() != keys:
        odd = ", ".join(sorted(str(key)[:40] for key in value.keys() ^ keys))
        return f"{whose} is missing or adding {odd}"
    return None
