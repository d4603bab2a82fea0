"""The v1 trajectory: an append-only, hash-chained run of JSONL events.

Each line is one event, ``{"prev": <digest>, "seq": n, "type": ..., "v": {...}}``,
serialised with sorted keys and no spaces, so ``"prev"`` always opens the line.
``prev`` is the sha256 of the previous line's bytes (newline included); the first
event's ``prev`` is the digest of the attempt record, which binds the chain to its
attempt. The events live in the attempt's file, between its record and its seal
(:mod:`xaytune.harness.evidence.attempt_file`). The seal records the head (digest of the
last line), the event count and the byte length, so any edit, drop, swap or append
is detected.

Verification reads each byte once: one sha256 per line and a check that the
line opens with its ``prev``; only the last line is parsed.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence._io import write_all
from xaytune.harness.evidence.attempt_file import parse_line
from xaytune.harness.spec import WRITER_V1

__all__ = ["WRITER", "ChainFacts", "TrajectoryWriter", "end_event_line", "verify_chain"]

WRITER = WRITER_V1

_OPENING = b'{"prev":"'  # every event line starts so, then its prev digest


# json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False) and
# json.dumps(kind), without building an encoder per call.
_PAYLOAD = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_KIND = json.JSONEncoder()


def _encode(prev: str, seq: int, kind: str, payload: dict[str, Any]) -> bytes:
    # Keys are written in sorted order by hand ("prev" < "seq" < "type" < "v");
    # the payload is sorted too. Bytes are what is hashed and later verified.
    body = _PAYLOAD.encode(payload)
    return (f'{{"prev":"{prev}","seq":{seq},"type":{_KIND.encode(kind)},"v":{body}}}\n').encode()


def end_event_line(prev: str, seq: int, *, status: bytes, outcome: bytes, spend: bytes) -> bytes:
    """The end event ``_encode(prev, seq, "end", {"status": s, "outcome": o, "spend": p})``
    from its values' JSON bytes (``status``, ``outcome``, ``spend``: the compact,
    sorted-key JSON of ``s``, ``o`` and ``p``, as the seal spells them): the writer
    spells an attempt's outcome and spend once for its end event and its seal. ``seq``
    is an ``int``."""
    return b'{"prev":"%s","seq":%d,"type":"end","v":{"outcome":%s,"spend":%s,"status":%s}}\n' % (
        prev.encode(),
        seq,
        outcome,
        spend,
        status,
    )


class TrajectoryWriter:
    """Appends events to an attempt file (an open descriptor); never rewrites a line."""

    def __init__(self, fd: int, *, genesis: str, unwritten: bytes = b"") -> None:
        # Unbuffered: each event is one write, so a killed attempt keeps its events.
        # ``unwritten``: the file's lines before the events (its spec and record),
        # written with the first event (one write where there were two) or by flush().
        self.fd = fd
        self.head = genesis
        self.count = 0
        self.bytes = 0
        self.unwritten = unwritten

    def append(self, kind: str, payload: dict[str, Any]) -> str:
        """Write one event; return its digest (the new head)."""
        return self.append_line(_encode(self.head, self.count, kind, payload))

    def append_line(self, line: bytes) -> str:
        """Write one event already spelled from the current head and count (as
        :func:`end_event_line` spells one); return its digest (the new head)."""
        if self.unwritten:
            write_all(self.fd, self.unwritten + line)
            self.unwritten = b""
        else:
            write_all(self.fd, line)
        self.head = sha256_digest(line)
        self.count += 1
        self.bytes += len(line)
        return self.head

    def flush(self) -> None:
        """Write the lines before the events, if no event has written them yet."""
        if self.unwritten:
            unwritten, self.unwritten = self.unwritten, b""
            write_all(self.fd, unwritten)


@dataclass(frozen=True, slots=True)
class ChainFacts:
    """What a trajectory file proves: head, event count, bytes, and its last event.

    The last event is parsed only when asked for, so a caller compares the head
    with its seal first: an edited last line is a head mismatch, whatever byte
    changed, not sometimes a JSON error.
    """

    head: str
    count: int
    bytes: int
    last_line: builtins.bytes | None  # the field above shadows the builtin in this scope
    where: str

    @property
    def last_event(self) -> dict[str, Any] | None:
        """The parsed last event (None for an empty chain); ``chain-broken`` if invalid."""
        if self.last_line is None:
            return None
        try:
            event = parse_line(self.last_line)
        except ValueError:
            raise EvidenceError("chain-broken", f"{self.where}: last event is not JSON") from None
        if not isinstance(event, dict) or event.get("seq") != self.count - 1:
            raise EvidenceError("chain-broken", f"{self.where}: last event has seq out of order")
        return event


def verify_chain(
    data: bytes,
    *,
    genesis: str,
    where: str,
    start: int = 0,
    end: int | None = None,
    allow_torn_tail: bool = False,
) -> ChainFacts:
    """Check the hash chain of the events in ``data[start:end]`` from ``genesis``.

    With ``allow_torn_tail`` (an attempt recovered after a crash) an unterminated
    final fragment is left out of the facts instead of refused; it is never parsed.
    ``bytes`` in the facts counts from ``start``.
    """
    end = len(data) if end is None else end
    head = genesis
    count = 0
    at = start
    if end > start and data[end - 1] != 10:  # b"\n"
        if not allow_torn_tail:
            raise EvidenceError("trajectory-torn", f"{where}: last line is not terminated")
        end = max(data.rfind(b"\n", start, end) + 1, start)
    view = memoryview(data)
    sha256 = hashlib.sha256
    find = data.find
    opening = b'%s%s"' % (_OPENING, head.encode())  # how the next event must start
    last_start = -1
    while at < end:
        stop = find(b"\n", at, end) + 1
        if not data.startswith(opening, at):
            raise EvidenceError(
                "chain-broken", f"{where}: event {count} does not follow the previous event"
            )
        digest = sha256(view[at:stop]).hexdigest()
        opening = b'%ssha256:%s"' % (_OPENING, digest.encode())
        last_start = at
        at = stop
        count += 1
    head = opening[len(_OPENING) : -1].decode()
    last_line = data[last_start:end] if last_start >= 0 else None
    return ChainFacts(head=head, count=count, bytes=end - start, last_line=last_line, where=where)
