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

from binascii import hexlify
from hashlib import sha256

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import FingerprintError
from xaytune.harness.evidence._records import AttemptEvidence
from xaytune.harness.evidence._seal import SEAL_FORMAT
from xaytune.harness.evidence._spell import outcome_bytes as _outcome_bytes
from xaytune.harness.evidence._spell import spend_bytes as _spend_bytes
from xaytune.harness.evidence._template import LineTemplate, placeholder
from xaytune.harness.evidence.trajectory import _encode as encode_event

__all__ = ["check_claimed"]


def _holes(line: bytes, names: tuple[str, ...], marks: dict[str, bytes] | None = None) -> bytes:
    """``line`` (spelled with ``placeholder(name)`` values) as a ``%s`` format of
    ``names``, which must be its holes in the line's order."""
    if marks is None:
        marks = {name: canonical_bytes(placeholder(name)) for name in names}
    return LineTemplate(line, marks).format(names)


_STATUSES = {"complete": b'"complete"', "partial": b'"partial"'}


def _typed(format_: bytes, kinds: tuple[bytes, ...]) -> bytes:
    """A ``%s`` format (of :func:`_holes` or ``SEAL_FORMAT``) with its holes, in
    order, made ``kinds`` (``%d`` for a count, ``"sha256:%s"`` for a digest given as
    hex): fewer small ``%`` per attempt."""
    parts = format_.split(b"%s")
    if len(parts) != len(kinds) + 1 or any(b"%" in part.replace(b"%%", b"") for part in parts):
        raise ValueError("not a format of exactly these holes")
    return b"".join(part + kind for part, kind in zip(parts, (*kinds, b""), strict=True))


_DIGEST_HOLE = b'"sha256:%s"'
# The seal line of an attempt that was not recovered, as seal_line spells it (the
# writer's own format of its holes: number, record, outcome, spend, status, bytes,
# events, head).
_SEAL = _typed(SEAL_FORMAT, (b"%d", _DIGEST_HOLE, b"%s", b"%s", b"%s", b"%d", b"%d", _DIGEST_HOLE))

# An end event's line after its ``{"prev":"<digest>"`` (checked with the chain), as
# the trajectory writer spells it.
_OPENING = b'{"prev":"'
_PREV = b'{"prev":"sha256:%s"'  # an event's opening, given the previous line's hex digest
_EVENT_OPENING = len(_PREV % (b"0" * 64))  # an event's opening, up to its fields
_END_HOLES = ("seq", "outcome", "spend", "status")
_END_LINE = encode_event(
    placeholder("prev"),
    placeholder("seq"),  # type: ignore[arg-type]
    "end",
    {name: placeholder(name) for name in _END_HOLES[1:]},
)
_END = _typed(
    _holes(
        _END_LINE[_END_LINE.index(b'",', len(_OPENING)) + 1 :],
        _END_HOLES,
        {"seq": placeholder("seq").encode()}
        | {name: canonical_bytes(placeholder(name)) for name in _END_HOLES[1:]},
    ),
    (b"%d", b"%s", b"%s", b"%s"),
)
_DIGEST = type(sha256()).digest


def check_claimed(
    data: bytes,
    claim: AttemptEvidence,
    *,
    record: bytes,
    spec_fingerprint: str,
    first_spec: bytes | None,
) -> bytes | None:
    """Whether ``data`` is exactly the file a writer writes for ``claim``: its spec
    line if so (for the task's next attempt), else None (the full rebuild decides).

    ``claim`` is exactly typed (the caller checked the evidence object);
    ``spec_fingerprint`` is the one its entry claims, ``record`` the record line the
    replicate's facts give for this attempt with that fingerprint, and ``first_spec``
    the spec line of the task's first attempt (None for the first).
    """
    facts = claim.__dict__  # exactly typed: its plain values
    status = facts["status"]
    outcome = facts["outcome"]
    if facts["recovered"] or (status == "complete") is (outcome is None):
        return None  # recovered, or a claim no seal makes: the full rebuild names it
    find = data.find
    spec_end = find(b"\n") + 1
    record_end = spec_end + len(record)
    # The seal is the last line (compared whole below, its newline included).
    seal_start = data.rfind(b"\n", 0, -1) + 1
    if not spec_end or seal_start <= record_end or not data.startswith(record, spec_end):
        return None
    spec_line = data[: spec_end - 1]
    if (first_spec is not None and spec_line != first_spec) or (
        "sha256:" + sha256(spec_line).hexdigest() != spec_fingerprint
    ):
        return None
    record_hex = head = hexlify(_DIGEST(sha256(record)))
    # The chain: each event opens with the digest of the line before it.
    startswith = data.startswith
    at = record_end
    count = 0
    last = at
    while at < seal_start:
        if not startswith(_PREV % head, at):
            return None
        last = at
        at = find(b"\n", at, seal_start) + 1
        head = hexlify(_DIGEST(sha256(data[last:at])))
        count += 1
    if (
        count != facts["trajectory_events"]
        or b"sha256:" + head != facts["trajectory_head"].encode()
        or b"sha256:" + record_hex != facts["record_digest"].encode()
    ):
        return None
    try:
        spelled = _outcome_bytes(outcome)
    except (KeyError, FingerprintError):  # a terminal or text no writer writes
        return None
    spend = _spend_bytes(facts["spend"])
    quoted = _STATUSES.get(status)
    if spend is None or quoted is None:
        return None
    end = _END % (count - 1, spelled, spend, quoted)
    if at - last != _EVENT_OPENING + len(end) or not startswith(end, last + _EVENT_OPENING):
        return None
    seal = _SEAL % (
        facts["attempt"],
        record_hex,  # the claimed record digest, compared above
        spelled,
        spend,
        quoted,
        seal_start - record_end,
        count,
        head,
    )
    if (
        len(data) - seal_start != len(seal)
        or not data.endswith(seal)
        or "sha256:" + sha256(seal).hexdigest() != facts["seal_digest"]
    ):
        return None
    return spec_line
