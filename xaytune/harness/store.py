"""The local evidence store: attempts, their records, trajectories and seals.

Layout under the store root::

    xaytune-store.json                       marks the directory as a store
    tasks/<position>/attempts/<NNN>/
        attempt.json                         attribution (written when the attempt opens)
        trajectory.jsonl                     hash-chained events (appended while it runs)
        seal.json                            status, outcome, spend, chain head (last)
    quarantine/<position>-<NNN>/             attempts moved aside, with quarantine.json
    published/<hex>.intoto.json              published evidence subjects

An attempt is *open* until ``seal.json`` exists. Every file a seal refers to is
flushed to disk before the seal is written (temp file, fsync, rename), so a crash
leaves at worst an open attempt, never a torn sealed one. Nothing is overwritten:
a retried or resumed task adds an attempt.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from xaytune.core._frozen import FrozenRecord
from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import EvidenceError
from xaytune.models._protocol import ModelIdentity

__all__ = [
    "ATTEMPT_FILE",
    "SEAL_FILE",
    "AttemptRecord",
    "AttemptSeal",
    "Attribution",
    "Durability",
    "HarnessEvidenceStore",
    "Outcome",
    "Spend",
    "SpendRecord",
    "StoredAttempt",
    "Terminal",
    "TrajectorySeal",
    "atomic_write",
    "atomic_write_chunks",
    "write_file",
]

ATTEMPT_FILE = "attempt.json"
SEAL_FILE = "seal.json"
QUARANTINE_FILE = "quarantine.json"
STORE_MARKER = "xaytune-store.json"
STORE_SCHEMA = "xaytune.evidence-store/v1"

Durability = Literal["fsync", "none"]
Terminal = Literal["answer", "budget-stop", "context-overflow", "model-error", "cancelled"]
_FROZEN = ConfigDict(frozen=True, extra="forbid")


def atomic_write(path: Path | str, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` whole or not at all (temp file, fsync, rename)."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    write_file(tmp, data, durable=durable)
    os.replace(tmp, path)


def atomic_write_chunks(path: Path | str, chunks: Iterable[bytes], *, durable: bool) -> None:
    """:func:`atomic_write` of the concatenated ``chunks``, never held whole."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        pending: list[bytes] = []
        size = 0
        for chunk in chunks:  # written in pieces of about a MiB
            pending.append(chunk)
            size += len(chunk)
            if size >= 1 << 20:
                _write_all(fd, b"".join(pending))
                pending, size = [], 0
        _write_all(fd, b"".join(pending))
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file(path: Path | str, data: bytes, *, durable: bool, exclusive: bool = False) -> None:
    """Create (or truncate) ``path`` and write ``data``; fsync it when ``durable``.

    Plain ``os`` calls: no buffered file object, no tty probe, no seek.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o666)
    try:
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path | str) -> None:
    """Flush a file already written to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path | str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Attribution(BaseModel):
    """What an attempt is an attempt of."""

    model_config = _FROZEN

    suite_digest: str
    assignment_digest: str
    task_id: str
    position: int
    seed: int
    replicate: int
    spec_fingerprint: str


class AttemptRecord(BaseModel):
    """``attempt.json``: written when an attempt opens; its digest starts the chain."""

    model_config = _FROZEN

    schema_: Literal["xaytune.attempt/v1"] = Field(default="xaytune.attempt/v1", alias="schema")
    attempt: int
    attribution: Attribution
    model: ModelIdentity | None
    writer: str


class Outcome(FrozenRecord):
    """How a complete attempt ended. ``answer`` is the extracted answer, if any."""

    model_config = _FROZEN

    terminal: Terminal
    answer: str | None = None
    detail: str | None = None


@dataclass(slots=True)
class Spend:
    """What an attempt spent (mutable while it runs). Times are microseconds."""

    turns: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    peak_context_tokens: int = 0
    model_time_us: int = 0
    tool_time_us: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "turns": self.turns,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "retries": self.retries,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "peak_context_tokens": self.peak_context_tokens,
            "model_time_us": self.model_time_us,
            "tool_time_us": self.tool_time_us,
        }


class SpendRecord(FrozenRecord):
    """A sealed attempt's spend, as read back from disk."""

    model_config = _FROZEN

    turns: int
    model_calls: int
    tool_calls: int
    tool_errors: int
    retries: int
    input_tokens: int
    output_tokens: int
    peak_context_tokens: int
    model_time_us: int
    tool_time_us: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class TrajectorySeal(FrozenRecord):
    """The chain facts a seal commits to."""

    model_config = _FROZEN

    writer: str
    events: int
    bytes: int
    head: str


class AttemptSeal(FrozenRecord):
    """``seal.json``: the attempt's final word. ``complete`` iff an outcome exists."""

    model_config = _FROZEN

    schema_: Literal["xaytune.attempt-seal/v1"] = Field(
        default="xaytune.attempt-seal/v1", alias="schema"
    )
    attempt: int
    status: Literal["complete", "partial"]
    outcome: Outcome | None
    spend: SpendRecord
    trajectory: TrajectorySeal
    attempt_record: str
    recovered: bool = False


@dataclass(frozen=True, slots=True)
class StoredAttempt:
    """An attempt directory as found in the store."""

    position: int
    number: int
    path: Path

    @property
    def name(self) -> str:
        return f"{self.position:06d}/{self.number:03d}"

    @property
    def is_open(self) -> bool:
        return not (self.path / SEAL_FILE).exists()


class HarnessEvidenceStore:
    """An evidence store on the local filesystem (H06 keeps nothing in a database)."""

    def __init__(self, root: str | Path, *, durability: Durability = "fsync") -> None:
        self.root = Path(root)
        self.durability: Durability = durability
        self._marked = False  # the marker file is known to exist

    @property
    def durable(self) -> bool:
        return self.durability == "fsync"

    def _ensure_marker(self) -> None:
        if self._marked:
            return
        marker = self.root / STORE_MARKER
        self._marked = marker.exists()
        if not self._marked:
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write(
                marker, canonical_bytes({"schema": STORE_SCHEMA}) + b"\n", durable=self.durable
            )
            self._marked = True

    def task_output(self, position: int) -> Path:
        """The directory where the task at ``position`` writes its attempts."""
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise EvidenceError("bad-position", f"task position {position!r} is not an index")
        self._ensure_marker()
        path = self.root / "tasks" / f"{position:06d}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def published_dir(self) -> Path:
        return self.root / "published"

    def positions(self) -> list[int]:
        """Positions that have a task directory."""
        tasks = self.root / "tasks"
        if not tasks.is_dir():
            return []
        return sorted(int(p.name) for p in tasks.iterdir() if p.name.isdigit())

    def attempts(self, position: int) -> list[StoredAttempt]:
        """Attempts of the task at ``position``, in attempt order."""
        return [
            StoredAttempt(position, number, Path(path))
            for number, path in self.attempt_paths(position)
        ]

    def attempt_numbers(self, position: int) -> list[int]:
        """The attempt numbers of the task at ``position``, ascending."""
        return [number for number, _ in self.attempt_paths(position)]

    def attempt_paths(self, position: int) -> list[tuple[int, str]]:
        """(number, directory) of each attempt of the task at ``position``, in order.

        Plain strings: verification lists 100,000 tasks, and a ``Path`` costs more
        to build than the listing itself.
        """
        directory = os.path.join(self.root, "tasks", f"{position:06d}", "attempts")
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for name in names:
            path = os.path.join(directory, name)
            if not name.isdigit():
                raise EvidenceError(
                    "unexpected-file", f"{path}: not an attempt directory of this store"
                )
            found.append((int(name), path))
        found.sort()
        return found

    def quarantined(self) -> Iterator[tuple[int, int, str]]:
        """(position, attempt, reason) of every quarantined attempt."""
        directory = self.root / "quarantine"
        if not directory.is_dir():
            return
        for path in sorted(directory.iterdir()):
            position, _, number = path.name.partition("-")
            if not (position.isdigit() and number.isdigit()):
                raise EvidenceError(
                    "unexpected-file", f"{path}: not a quarantined attempt of this store"
                )
            try:
                reason = str(json.loads((path / QUARANTINE_FILE).read_bytes())["reason"])
            except (OSError, ValueError, KeyError, TypeError):
                # A crash between the move and the reason file: still quarantined.
                reason = f"no readable {QUARANTINE_FILE}"
            yield int(position), int(number), reason

    def quarantine(self, position: int, number: int, *, reason: str) -> Path:
        """Move an attempt aside with a reason. Verification refuses the run after this."""
        source = self.root / "tasks" / f"{position:06d}" / "attempts" / f"{number:03d}"
        if not source.is_dir():
            raise EvidenceError("unknown-attempt", f"attempt {position:06d}/{number:03d} not found")
        target = self.root / "quarantine" / f"{position:06d}-{number:03d}"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        atomic_write(target / QUARANTINE_FILE, canonical_bytes({"reason": reason}) + b"\n")
        return target

    def read_record(self, attempt: StoredAttempt) -> tuple[AttemptRecord, bytes]:
        """The attempt record and its bytes; refused with ``bad-record`` if unreadable."""
        path = attempt.path / ATTEMPT_FILE
        try:
            raw = path.read_bytes()
            return AttemptRecord.model_validate_json(raw), raw
        except (OSError, ValueError) as error:
            raise EvidenceError(
                "bad-record", f"{path}: attempt {attempt.name} record unreadable ({error})"
            ) from None

    def read_seal(self, attempt: StoredAttempt) -> tuple[AttemptSeal, bytes]:
        """The attempt's seal and its bytes; ``open-attempt`` when there is none."""
        path = attempt.path / SEAL_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise EvidenceError(
                "open-attempt", f"attempt {attempt.name} ({attempt.path}) is open: no seal"
            ) from None
        try:
            return AttemptSeal.model_validate_json(raw), raw
        except ValueError as error:
            first = str(error).splitlines()[0]
            raise EvidenceError("bad-seal", f"{path}: unreadable seal ({first})") from None


def seal_bytes(seal: dict[str, Any]) -> bytes:
    """Canonical bytes of a seal dict (validated on the way out of the store, not in)."""
    return canonical_bytes(seal) + b"\n"


def claim_attempt(task_dir: Path | str) -> tuple[int, Path]:
    """Claim the next attempt number under ``task_dir`` (exclusive mkdir)."""
    attempts = os.path.join(task_dir, "attempts")
    try:
        os.mkdir(attempts)
        number = 1  # a directory this call created holds no attempt yet
    except FileExistsError:
        numbers = [int(name) for name in os.listdir(attempts) if name.isdigit()]
        number = max(numbers, default=0) + 1
    except FileNotFoundError:
        os.makedirs(attempts, exist_ok=True)
        number = 1
    while True:
        path = os.path.join(attempts, f"{number:03d}")
        try:
            os.mkdir(path)
        except FileExistsError:
            number += 1
            continue
        return number, Path(path)


def remove_empty_claim(path: Path) -> bool:
    """Remove an attempt directory in which nothing was recorded (no record file).

    The record is written before the first model call, so such a directory spent
    nothing and proves nothing; it is what a crash between claim and record leaves.
    """
    if (path / ATTEMPT_FILE).exists():
        return False
    shutil.rmtree(path)
    return True


def durable_dir(path: Path | str, *, durable: bool) -> None:
    """fsync a directory (so a rename in it is durable) when ``durable``."""
    if durable:
        _fsync_dir(path)
