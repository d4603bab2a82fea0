"""An attempt file compared, as bytes, with the attempt an evidence claims.

Verification's fast path. A file a writer wrote for the facts an evidence claims
is, byte for byte: the spec line whose sha256 the entry claims; the record line
the replicate's facts give; hash-chained events from the record's digest to the
claimed head, the last an end event spelled from the claimed status, outcome and
spend; and the seal line spelled from the same facts, whose sha256 is the claimed
seal digest. Building those lines from the claim and comparing them with the file
proves what parsing it would (the seal's form and values, the end event's agreement
with the seal, the claim's agreement with both), with no parsing and no typed
record. Each line is spelled by the writer's own serialisers, once per process, as
a template with holes.

:func:`check_claimed` never refuses: any difference (an edited file, a recovered
attempt, a claim that is not the store's, a value no writer writes) sends the
attempt down the full rebuild (:func:`~.rebuild_attempt.rebuild_attempt`), which
names what differs, as before. So the fast path accepts only what the full rebuild
accepts for the same claim.
"""

from __future__ import annotations

import itertools
import typing
from binascii import hexlify
from hashlib import sha256
from operator import attrgetter

from xaytune.core.canonical import MAX_SAFE_INTEGER, canonical_bytes
from xaytune.core.errors import FingerprintError
from xaytune.harness.evidence._records import AttemptEvidence
from xaytune.harness.evidence._seal import seal_line
from xaytune.harness.evidence._template import LineTemplate, json_string, placeholder
from xaytune.harness.evidence.attempt_file import SEAL_PREFIX
from xaytune.harness.evidence.store import Outcome, SpendRecord, Terminal
from xaytune.harness.evidence.trajectory import _encode as encode_event

__all__ = ["check_claimed"]


def _holes(line: bytes, names: tuple[str, ...], marks: dict[str, bytes] | None = None) -> bytes:
    """``line`` (spelled with ``placeholder(name)`` values) as a ``%s`` format of
    ``names``, which must be its holes in the line's order."""
    if marks is None:
        marks = {name: canonical_bytes(placeholder(name)) for name in names}
    return LineTemplate(line, marks).format(names)


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
_nulls = attrgetter(*_NULLABLE)

_OUTCOME_FIELDS = tuple(sorted(Outcome.model_fields))
_OUTCOME = _holes(
    canonical_bytes({name: placeholder(name) for name in _OUTCOME_FIELDS}), _OUTCOME_FIELDS
)
assert _OUTCOME_FIELDS == ("answer", "detail", "terminal")
_TERMINALS = {word: canonical_bytes(word) for word in typing.get_args(Terminal)}
_STATUSES = {"complete": b'"complete"', "partial": b'"partial"'}

# The seal line of an attempt that was not recovered, as seal_line spells it.
_SEAL = _holes(
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
    ("number", "record", "outcome", "spend", "status", "bytes", "events", "head"),
)

# An end event's line after its ``{"prev":"<digest>"`` (checked with the chain), as
# the trajectory writer spells it.
_OPENING = b'{"prev":"'
_EVENT_OPENING = len(b'{"prev":"sha256:"') + 64  # an event's opening, up to its fields
_END_HOLES = ("seq", "outcome", "spend", "status")
_END_LINE = encode_event(
    placeholder("prev"),
    placeholder("seq"),  # type: ignore[arg-type]
    "end",
    {name: placeholder(name) for name in _END_HOLES[1:]},
)
_END = _holes(
    _END_LINE[_END_LINE.index(b'",', len(_OPENING)) + 1 :],
    _END_HOLES,
    {"seq": placeholder("seq").encode()}
    | {name: canonical_bytes(placeholder(name)) for name in _END_HOLES[1:]},
)


def _spend_bytes(spend: SpendRecord) -> bytes | None:
    """The spend as the writer writes it; None for a value no writer writes (a count
    below zero or beyond 2^53 - 1, a null where a count must be reported)."""
    spelled, counts_of = _SPENDS[tuple(value is None for value in _nulls(spend))]
    counts = counts_of(spend)
    try:
        if min(counts) < 0 or max(counts) > MAX_SAFE_INTEGER:
            return None
        return spelled % counts
    except TypeError:  # a null count that must be reported
        return None


def _outcome_bytes(outcome: Outcome | None) -> bytes:
    if outcome is None:
        return b"null"
    answer, detail = outcome.answer, outcome.detail
    return _OUTCOME % (
        b"null" if answer is None else json_string(answer),
        b"null" if detail is None else json_string(detail),
        _TERMINALS[outcome.terminal],
    )


def check_claimed(
    data: bytes,
    claim: AttemptEvidence,
    *,
    record: bytes,
    spec_fingerprint: str,
    first_spec: bytes | memoryview | None,
) -> memoryview | None:
    """Whether ``data`` is exactly the file a writer writes for ``claim``: its spec
    line if so (a view of ``data``, for the task's next attempt), else None (the full
    rebuild decides).

    ``claim`` is exactly typed (the caller checked the evidence object);
    ``spec_fingerprint`` is the one its entry claims, ``record`` the record line the
    replicate's facts give for this attempt with that fingerprint, and ``first_spec``
    the spec line of the task's first attempt (None for the first).
    """
    facts = claim.__dict__  # exactly typed: its plain values
    status = facts["status"]
    if facts["recovered"] or (status == "complete") is (facts["outcome"] is None):
        return None  # recovered, or a claim no seal makes: the full rebuild names it
    spec_end = data.find(b"\n") + 1
    record_end = spec_end + len(record)
    seal_start = data.rfind(b"\n", 0, len(data) - 1) + 1
    if (
        not spec_end
        or seal_start <= record_end
        or not data.startswith(record, spec_end)
        or not data.endswith(b"\n")
        or not data.startswith(SEAL_PREFIX, seal_start)
    ):
        return None
    view = memoryview(data)
    spec_line = view[: spec_end - 1]
    if (first_spec is not None and spec_line != first_spec) or (
        "sha256:" + sha256(spec_line).hexdigest() != spec_fingerprint
    ):
        return None
    record_digest = facts["record_digest"]
    head = b"sha256:" + hexlify(sha256(record).digest())
    if head != record_digest.encode():
        return None
    # The chain: each event opens with the digest of the line before it.
    find = data.find
    at = record_end
    count = 0
    last = -1
    while at < seal_start:
        if not data.startswith(b'{"prev":"%s"' % head, at):
            return None
        last = at
        at = find(b"\n", at, seal_start) + 1
        head = b"sha256:" + hexlify(sha256(view[last:at]).digest())
        count += 1
    if last < 0 or head != facts["trajectory_head"].encode() or count != facts["trajectory_events"]:
        return None
    try:
        outcome = _outcome_bytes(facts["outcome"])
    except (KeyError, FingerprintError):  # a terminal or text no writer writes
        return None
    spend = _spend_bytes(facts["spend"])
    quoted = _STATUSES.get(status)
    if spend is None or quoted is None:
        return None
    end = _END % (b"%d" % (count - 1), outcome, spend, quoted)
    fields = last + _EVENT_OPENING
    if fields + len(end) != seal_start or not data.startswith(end, fields):
        return None
    seal = _SEAL % (
        b"%d" % facts["attempt"],
        b'"%s"' % record_digest.encode(),  # a digest: equal to the record's, above
        outcome,
        spend,
        quoted,
        b"%d" % (seal_start - record_end),
        b"%d" % count,
        b'"%s"' % head,
    )
    if (
        len(data) - seal_start != len(seal)
        or not data.endswith(seal)
        or "sha256:" + sha256(seal).hexdigest() != facts["seal_digest"]
    ):
        return None
    return spec_line
