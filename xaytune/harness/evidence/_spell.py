"""An attempt's outcome and spend spelled as canonical JSON bytes, without an encoder.

The writer's seal and end event, and the evidence's entries, hold an outcome and a
spend record. Spelling them through ``canonical_bytes`` costs more than hashing the
line they sit in; here each is one ``%`` of bytes into a format built once from the
canonical bytes of a record of placeholders, so its layout is ``canonical_bytes``'s
own. Each function answers None (or raises ``KeyError``/``FingerprintError``) for a
value it does not spell exactly as ``canonical_bytes`` would; the caller then takes
its general path.
"""

from __future__ import annotations

import itertools
import typing
from operator import attrgetter

from xaytune.core.canonical import MAX_SAFE_INTEGER, canonical_bytes
from xaytune.core.errors import FingerprintError
from xaytune.harness.evidence._template import LineTemplate, json_string, placeholder
from xaytune.harness.evidence.store import Outcome, SpendRecord, Terminal

__all__ = ["exact_outcome_bytes", "exact_spend_bytes", "outcome_bytes", "spend_bytes"]


_SPEND_FIELDS = tuple(sorted(SpendRecord.model_fields))
# Counts a provider may leave unreported: the fields typed ``int | None``.
_NULLABLE = tuple(
    name
    for name in _SPEND_FIELDS
    if type(None) in typing.get_args(SpendRecord.model_fields[name].annotation)
)


def _spend_formats() -> dict[tuple[bool, ...], tuple[bytes, attrgetter]]:
    """The canonical spend with a ``%d`` per count, for each way its unreported
    counts may be null (``null`` written in): (the format, the getter of its counts
    from a spend record, in order)."""
    line = canonical_bytes({name: placeholder(name) for name in _SPEND_FIELDS})
    line = line.replace(b"%", b"%%")
    formats = {}
    for nulls in itertools.product((False, True), repeat=len(_NULLABLE)):
        null = {name for name, is_null in zip(_NULLABLE, nulls, strict=True) if is_null}
        spelled = line
        for name in _SPEND_FIELDS:
            hole = b"null" if name in null else b"%d"
            spelled = spelled.replace(canonical_bytes(placeholder(name)), hole)
        counts = [name for name in _SPEND_FIELDS if name not in null]
        formats[nulls] = (spelled, attrgetter(*counts))
    return formats


_SPENDS = _spend_formats()
assert len(_NULLABLE) == 2  # spend_bytes unpacks them
_nulls = attrgetter(*_NULLABLE)

_OUTCOME_FIELDS = tuple(sorted(Outcome.model_fields))
assert _OUTCOME_FIELDS == ("answer", "detail", "terminal")
_OUTCOME = LineTemplate(
    canonical_bytes({name: placeholder(name) for name in _OUTCOME_FIELDS}),
    {name: canonical_bytes(placeholder(name)) for name in _OUTCOME_FIELDS},
).format(_OUTCOME_FIELDS)
_TERMINALS = {word: canonical_bytes(word) for word in typing.get_args(Terminal)}
_COUNT_TYPES = frozenset({int, type(None)})
_TEXT_TYPES = frozenset({str, type(None)})


def spend_bytes(spend: SpendRecord) -> bytes | None:
    """The spend as the writer writes it; None for a value no writer writes (a count
    below zero or beyond 2^53 - 1, a null where a count must be reported). The
    counts must be ints (the caller checked the record's exact types)."""
    cached, reasoning = _nulls(spend)  # (a tuple, not a generator: verification's hot path)
    spelled, counts_of = _SPENDS[cached is None, reasoning is None]
    counts = counts_of(spend)
    try:
        if min(counts) < 0 or max(counts) > MAX_SAFE_INTEGER:
            return None
        return spelled % counts
    except TypeError:  # a null count that must be reported
        return None


def outcome_bytes(outcome: Outcome | None) -> bytes:
    """The outcome's canonical bytes (``null`` for none); ``KeyError`` for a terminal
    no writer writes, ``FingerprintError`` for text with no canonical JSON."""
    if outcome is None:
        return b"null"
    answer, detail = outcome.answer, outcome.detail
    return _OUTCOME % (
        b"null" if answer is None else json_string(answer),
        b"null" if detail is None else json_string(detail),
        _TERMINALS[outcome.terminal],
    )


def exact_spend_bytes(spend: object) -> bytes | None:
    """:func:`spend_bytes` of a record of exactly the validated types (every count an
    ``int`` or None, no subclass, no extra value); None for anything else."""
    if (
        type(spend) is not SpendRecord
        or spend.__pydantic_extra__
        or len(spend.__dict__) != len(_SPEND_FIELDS)
        or not _COUNT_TYPES.issuperset(map(type, spend.__dict__.values()))
    ):
        return None
    return spend_bytes(spend)


def exact_outcome_bytes(outcome: object) -> bytes | None:
    """:func:`outcome_bytes` of None or an outcome of exactly the validated types;
    None for anything else (a subclass, text of another type, an unknown terminal,
    text with no canonical JSON)."""
    if outcome is None:
        return b"null"
    if type(outcome) is not Outcome or outcome.__pydantic_extra__:
        return None
    facts = outcome.__dict__
    if (
        len(facts) != len(_OUTCOME_FIELDS)
        or type(facts.get("answer", 0)) not in _TEXT_TYPES
        or type(facts.get("detail", 0)) not in _TEXT_TYPES
        or type(facts.get("terminal")) is not str
    ):
        return None
    try:
        return outcome_bytes(outcome)
    except (KeyError, FingerprintError):
        return None
