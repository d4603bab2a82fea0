"""One attempt, one file: the spec it ran, its record, its events and its seal.

An attempt file ``tasks/<position>/<NNN>.jsonl`` holds, one canonical JSON value
per line:

    line 1      the spec the attempt ran (its sha256, newline excluded, is the spec
                fingerprint the record names)
    line 2      the attempt record (attribution; its digest starts the chain)
    lines 3..   the hash-chained events (:mod:`xaytune.harness.evidence.trajectory`)
    last line   the seal (status, outcome, spend, chain head), once sealed

The file is only ever appended to. An attempt is *open* until its last line is a
whole seal: events start ``{"prev":``, a seal ``{"attempt":``. The seal is appended
only once every byte before it is on disk, so a crash leaves at worst an open
attempt, never a torn sealed one. A recovered attempt (sealed after a crash) may
hold one unterminated fragment, terminated by its recovery, between its last whole
event and its seal; the seal's byte count leaves it outside the chain.

Reading an attempt is one read of one file; every byte is hashed once (the spec
line, the record line, each event line, the seal line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from xaytune.core.errors import EvidenceError

__all__ = [
    "ATTEMPT_SUFFIX",
    "SEAL_PREFIX",
    "AttemptLayout",
    "AttemptParts",
    "attempt_name",
    "parse_line",
    "split_attempt",
]

ATTEMPT_SUFFIX = ".jsonl"
SEAL_PREFIX = b'{"attempt":'


def attempt_name(number: int) -> str:
    """The file name of attempt ``number`` in its task directory."""
    return f"{number:03d}{ATTEMPT_SUFFIX}"


@dataclass(frozen=True, slots=True)
class AttemptLayout:
    """Where an attempt file's parts are: byte offsets into its data.

    ``data[:spec_end - 1]`` is the spec, ``data[spec_end:record_end]`` the record
    line, ``data[record_end:events_end]`` the events (and, when recovered, a
    terminated fragment), ``data[events_end:]`` the seal line when ``sealed``.
    ``torn`` is an unterminated last fragment (a crash mid-write: open).
    """

    spec_end: int
    record_end: int
    events_end: int
    sealed: bool
    torn: bool


_DECODER = json.JSONDecoder()
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def parse_line(line: bytes) -> Any:
    """The one JSON value on ``line`` (its newline, if any, excluded).

    ``json.loads`` without its detours (encoding detection, whitespace): a line
    of an attempt file is canonical JSON. ``ValueError`` if it is anything else,
    including nesting too deep to parse and a lone surrogate (``"\\ud800"``: no
    UTF-8 text holds one, so no writer wrote one).
    """
    text = line.decode()
    try:
        value, end = _DECODER.raw_decode(text)
        if "\\u" in text:
            # Canonical JSON escapes control characters only; any escape is checked
            # to decode to UTF-8 text.
            _ENCODER.encode(value).encode()
    except RecursionError:
        raise ValueError("not one JSON value: nested too deeply") from None
    except UnicodeEncodeError:
        raise ValueError("not UTF-8 text: a lone surrogate") from None
    if end != len(text) and text[end:] != "\n":
        raise ValueError(f"not one JSON value: extra data at {end}")
    return value


def split_attempt(data: bytes, where: str) -> AttemptLayout:
    """The layout of an attempt file's ``data``; ``bad-record`` without a whole record."""
    spec_end = data.find(b"\n") + 1
    record_end = data.find(b"\n", spec_end) + 1 if spec_end else 0
    if not record_end:
        raise EvidenceError("bad-record", f"{where}: no whole spec and record lines")
    size = len(data)
    if not data.endswith(b"\n"):
        return AttemptLayout(spec_end, record_end, size, sealed=False, torn=True)
    last = data.rfind(b"\n", 0, size - 1) + 1
    if last >= record_end and data.startswith(SEAL_PREFIX, last):
        return AttemptLayout(spec_end, record_end, last, sealed=True, torn=False)
    return AttemptLayout(spec_end, record_end, size, sealed=False, torn=False)


@dataclass(frozen=True, slots=True)
class AttemptParts:
    """An attempt file's lines by part, each with its newline (for tools and tests).

    ``events`` are the lines between the record and the seal (a recovered
    attempt's terminated fragment included); ``tail`` is an unterminated last
    fragment of an open attempt. ``b"".join`` of the parts, in order, is the file.
    """

    spec: bytes
    record: bytes
    events: tuple[bytes, ...]
    seal: bytes | None
    tail: bytes = b""

    @classmethod
    def of(cls, data: bytes, where: str) -> AttemptParts:
        layout = split_attempt(data, where)
        body = data[layout.record_end : layout.events_end]
        tail = b""
        if layout.torn:
            cut = body.rfind(b"\n") + 1
            body, tail = body[:cut], body[cut:]
        return cls(
            spec=data[: layout.spec_end],
            record=data[layout.spec_end : layout.record_end],
            events=tuple(body.splitlines(keepends=True)),
            seal=data[layout.events_end :] if layout.sealed else None,
            tail=tail,
        )

    def join(self) -> bytes:
        return b"".join((self.spec, self.record, *self.events, self.seal or b"", self.tail))
