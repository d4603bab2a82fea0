"""The v1 trajectory: an append-only, hash-chained JSONL of events.

Each line is one event, ``{"prev": <digest>, "seq": n, "type": ..., "v": {...}}``,
serialised with sorted keys and no spaces, so ``"prev"`` always opens the line.
``prev`` is the sha256 of the previous line's bytes (newline included); the first
event's ``prev`` is the digest of the attempt record, which binds the chain to its
attempt. The seal records the head (digest of the last line), the event count and
the byte length, so any edit, drop, swap or append is detected.

Verification reads each byte once: one sha256 per line and a fixed-offset check of
``prev``; only the last line is parsed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from xaytune.core.errors import EvidenceError
from xaytune.harness.spec import WRITER_V1

__all__ = ["TRAJECTORY_FILE", "WRITER", "ChainFacts", "TrajectoryWriter", "verify_chain"]

WRITER = WRITER_V1
TRAJECTORY_FILE = "trajectory.jsonl"

_PREFIX = b'{"prev":"sha256:'
_PREV_START = len(b'{"prev":"')
_PREV_END = _PREV_START + len("sha256:") + 64


def _line_digest(line: bytes) -> str:
    return "sha256:" + hashlib.sha256(line).hexdigest()


# json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False) and
# json.dumps(kind), without building an encoder per call.
_PAYLOAD = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_KIND = json.JSONEncoder()


def _encode(prev: str, seq: int, kind: str, payload: dict[str, Any]) -> bytes:
    # Keys are written in sorted order by hand ("prev" < "seq" < "type" < "v");
    # the payload is sorted too. Bytes are what is hashed and later verified.
    body = _PAYLOAD.encode(payload)
    return (f'{{"prev":"{prev}","seq":{seq},"type":{_KIND.encode(kind)},"v":{body}}}\n').encode()


class TrajectoryWriter:
    """Appends events to a new trajectory file; never rewrites a line."""

    def __init__(self, path: Path, *, genesis: str) -> None:
        self.path = path
        # Unbuffered: each event is one write, so a killed attempt keeps its events.
        self._handle: IO[bytes] = open(path, "xb", buffering=0)  # noqa: SIM115 - closed in close()
        self.head = genesis
        self.count = 0
        self.bytes = 0

    def append(self, kind: str, payload: dict[str, Any]) -> str:
        """Write one event; return its digest (the new head)."""
        line = _encode(self.head, self.count, kind, payload)
        self._handle.write(line)
        self.head = _line_digest(line)
        self.count += 1
        self.bytes += len(line)
        return self.head

    def flush(self, *, durable: bool) -> None:
        """Flush buffered events; fsync when ``durable``."""
        self._handle.flush()
        if durable:
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()


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
    last_line: bytes | None
    where: str

    @property
    def last_event(self) -> dict[str, Any] | None:
        """The parsed last event (None for an empty chain); ``chain-broken`` if invalid."""
        if self.last_line is None:
            return None
        try:
            event = json.loads(self.last_line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise EvidenceError("chain-broken", f"{self.where}: last event is not JSON") from None
        if not isinstance(event, dict) or event.get("seq") != self.count - 1:
            raise EvidenceError("chain-broken", f"{self.where}: last event has seq out of order")
        return event


def verify_chain(
    data: bytes, *, genesis: str, where: str, allow_torn_tail: bool = False
) -> ChainFacts:
    """Check a trajectory's hash chain from ``genesis``; refuse any break.

    With ``allow_torn_tail`` (an attempt recovered after a crash) an unterminated
    final fragment is left out of the facts instead of refused; it is never parsed.
    """
    head = genesis
    count = 0
    start = 0
    end = len(data)
    if allow_torn_tail and data and not data.endswith(b"\n"):
        end = data.rfind(b"\n") + 1
    elif data and not data.endswith(b"\n"):
        raise EvidenceError("trajectory-torn", f"{where}: last line is not terminated")
    last_start = -1
    while start < end:
        stop = data.index(b"\n", start) + 1
        line = data[start:stop]
        if not line.startswith(_PREFIX) or line[_PREV_START:_PREV_END] != head.encode():
            raise EvidenceError(
                "chain-broken", f"{where}: event {count} does not follow the previous event"
            )
        head = _line_digest(line)
        last_start = start
        start = stop
        count += 1
    last_line = data[last_start:end] if last_start >= 0 else None
    return ChainFacts(head=head, count=count, bytes=end, last_line=last_line, where=where)
