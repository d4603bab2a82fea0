"""The local evidence store: one file per attempt, quarantine, published subjects.

Layout under the store root::

    xaytune-store.json                       marks the directory as a store
    tasks/<position>/<NNN>.jsonl             one attempt: the spec it ran, its record,
                                             its hash-chained events, its seal (last)
    quarantine/<position>-<NNN>.jsonl        attempts moved aside ...
    quarantine/<position>-<NNN>.reason.json  ... with the reason
    published/<hex>.intoto.json              published evidence subjects

An attempt is *open* until its file ends with a whole seal line (see
:mod:`xaytune.harness.evidence.attempt_file`). Everything a seal refers to is on disk before
the seal is appended, so a crash leaves at worst an open attempt, never a torn
sealed one. Nothing is overwritten: a retried or resumed task adds an attempt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import EvidenceError
from xaytune.core.frozen import FrozenRecord
from xaytune.harness.evidence._io import atomic_write, atomic_write_chunks, read_file
from xaytune.harness.evidence.attempt_file import ATTEMPT_SUFFIX, attempt_name, split_attempt
from xaytune.models.protocol import ModelIdentity

__all__ = [
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
    "attempt_paths",
    "claim_attempt",
    "remove_empty_claim",
]

QUARANTINE_SUFFIX = ".reason.json"
STORE_MARKER = "xaytune-store.json"
STORE_SCHEMA = "xaytune.evidence-store/v3"

Durability = Literal["fsync", "none"]
Terminal = Literal["answer", "budget-stop", "context-overflow", "model-error", "cancelled"]
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Attribution(BaseModel):
    """What an attempt is an attempt of."""

    model_config = _FROZEN

    suite_digest: str
    assignment_digest: str
    task_id: str
    position: int
    seed: int
    replicate: int
    harness_fingerprint: str
    spec_fingerprint: str
    intent: str | None


class AttemptRecord(BaseModel):
    """An attempt file's second line: written when the attempt opens; its digest
    starts the chain. Its attribution names the harness and the spec (whose
    fingerprint is the sha256 of the file's first line)."""

    model_config = _FROZEN

    schema_: Literal["xaytune.attempt/v3"] = Field(default="xaytune.attempt/v3", alias="schema")
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
    """What an attempt spent (mutable while it runs). Times are microseconds.

    ``model_calls`` counts the calls that replied, ``model_errors`` those that
    raised. ``cached_tokens`` and ``reasoning_tokens`` sum what the provider
    reported (parts of ``input_tokens`` and ``output_tokens``); each is None once a
    call did not report it (unknown, never zero). ``wall_time_us`` is the attempt's
    end-to-end time on a monotonic clock (for an attempt recovered after a crash: the
    time its recorded calls took, a lower bound like the rest of its spend).
    """

    turns: int = 0
    model_calls: int = 0
    model_errors: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int | None = 0
    reasoning_tokens: int | None = 0
    peak_context_tokens: int = 0
    model_time_us: int = 0
    tool_time_us: int = 0
    wall_time_us: int = 0

    def add_details(self, cached_tokens: int | None, reasoning_tokens: int | None) -> None:
        """Add one reply's usage details (an unreported one makes the sum unknown)."""
        if self.cached_tokens is not None:
            self.cached_tokens = (
                None if cached_tokens is None else self.cached_tokens + cached_tokens
            )
        if self.reasoning_tokens is not None:
            self.reasoning_tokens = (
                None if reasoning_tokens is None else self.reasoning_tokens + reasoning_tokens
            )

    def as_dict(self) -> dict[str, int | None]:
        return {
            "turns": self.turns,
            "model_calls": self.model_calls,
            "model_errors": self.model_errors,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "retries": self.retries,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "peak_context_tokens": self.peak_context_tokens,
            "model_time_us": self.model_time_us,
            "tool_time_us": self.tool_time_us,
            "wall_time_us": self.wall_time_us,
        }


class SpendRecord(FrozenRecord):
    """A sealed attempt's spend, as read back from disk (see :class:`Spend`).

    Every field is a count; ``cached_tokens`` and ``reasoning_tokens`` may be null
    (not reported). A seal names every field, none defaulted.
    """

    model_config = _FROZEN

    turns: int
    model_calls: int
    model_errors: int
    tool_calls: int
    tool_errors: int
    retries: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int | None
    reasoning_tokens: int | None
    peak_context_tokens: int
    model_time_us: int
    tool_time_us: int
    wall_time_us: int

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


SEAL_SCHEMA = "xaytune.attempt-seal/v2"


class AttemptSeal(FrozenRecord):
    """``seal.json``: the attempt's final word. ``complete`` iff an outcome exists."""

    model_config = _FROZEN

    schema_: Literal["xaytune.attempt-seal/v2"] = Field(default=SEAL_SCHEMA, alias="schema")
    attempt: int
    status: Literal["complete", "partial"]
    outcome: Outcome | None
    spend: SpendRecord
    trajectory: TrajectorySeal
    attempt_record: str
    recovered: bool = False


@dataclass(frozen=True, slots=True)
class StoredAttempt:
    """An attempt file as found in the store."""

    position: int
    number: int
    path: Path

    @property
    def name(self) -> str:
        return f"{self.position:06d}/{self.number:03d}"

    def read(self) -> bytes:
        """The attempt file's bytes."""
        return read_file(self.path)

    @property
    def is_open(self) -> bool:
        """True until the file ends with a whole seal line."""
        return not split_attempt(self.read(), str(self.path)).sealed


def _attempt_number(name: str) -> int | None:
    """The attempt number of an attempt file name (``NNN.jsonl``), else None."""
    stem = name[: -len(ATTEMPT_SUFFIX)] if name.endswith(ATTEMPT_SUFFIX) else ""
    return int(stem) if stem.isdigit() and stem.isascii() and len(stem) >= 3 else None


class HarnessEvidenceStore:
    """An evidence store on the local filesystem (H06 keeps nothing in a database)."""

    def __init__(self, root: str | Path, *, durability: Durability = "fsync") -> None:
        self.root = Path(root)
        self._tasks_dir = os.path.join(self.root, "tasks")
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
        if self._marked:
            self.check_schema()
        else:
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write(
                marker, canonical_bytes({"schema": STORE_SCHEMA}) + b"\n", durable=self.durable
            )
            self._marked = True

    def check_schema(self) -> None:
        """Refuse (``store-schema``) a store whose marker names another layout."""
        marker = self.root / STORE_MARKER
        if not marker.exists():
            return
        schema = _marker_schema(marker)
        if schema != STORE_SCHEMA:
            raise EvidenceError(
                "store-schema",
                f"{marker}: store schema {schema!r}, this xaytune reads and writes "
                f"{STORE_SCHEMA}; use a fresh output directory",
            )

    def task_output(self, position: int) -> Path:
        """The directory where the task at ``position`` writes its attempt files, made
        (with the store's marker) if missing."""
        path = self.task_dir(position)
        self._ensure_marker()
        path.mkdir(parents=True, exist_ok=True)
        return path

    def task_dir(self, position: int) -> Path:
        """Where the task at ``position`` writes its attempt files; nothing is made
        (:meth:`task_output` makes it)."""
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise EvidenceError("bad-position", f"task position {position!r} is not an index")
        return self.root / "tasks" / f"{position:06d}"

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

    def attempt_file(self, position: int, number: int) -> Path:
        """Where attempt ``number`` of the task at ``position`` is (or would be)."""
        return self.root / "tasks" / f"{position:06d}" / attempt_name(number)

    def attempt_paths(self, position: int) -> list[tuple[int, str]]:
        """(number, file) of each attempt of the task at ``position``, in order."""
        return attempt_paths(f"{self._tasks_dir}{os.sep}{position:06d}")

    def attempt_listings(self, count: int) -> list[tuple[tuple[int, str], ...]]:
        """:meth:`attempt_paths` of positions ``0 .. count - 1``, in one loop (a
        verification lists every task), each as a tuple: held through a whole
        verification, tuples of plain values are untracked by the collector."""
        tasks, sep, listdir = self._tasks_dir, os.sep, os.listdir
        first = _FIRST_ONLY[0]
        listings = []
        for position in range(count):
            directory = f"{tasks}{sep}{position:06d}"
            try:
                names = listdir(directory)
            except (FileNotFoundError, NotADirectoryError):
                names = []
            if names == _FIRST_ONLY:
                listings.append(((1, f"{directory}{sep}{first}"),))
            else:
                listings.append(tuple(_paths_of(directory, names)))
        return listings

    def quarantined(self) -> Iterator[tuple[int, int, str]]:
        """(position, attempt, reason) of every quarantined attempt."""
        directory = self.root / "quarantine"
        if not directory.is_dir():
            return
        for path in sorted(directory.iterdir()):
            if path.name.endswith(QUARANTINE_SUFFIX):
                continue
            position, _, number = path.name.removesuffix(ATTEMPT_SUFFIX).partition("-")
            if not (path.name.endswith(ATTEMPT_SUFFIX) and position.isdigit() and number.isdigit()):
                raise EvidenceError(
                    "unexpected-file", f"{path}: not a quarantined attempt of this store"
                )
            reason_path = directory / f"{position}-{number}{QUARANTINE_SUFFIX}"
            try:
                reason = str(json.loads(reason_path.read_bytes())["reason"])
            except (OSError, ValueError, KeyError, TypeError):
                # A crash between the move and the reason file: still quarantined.
                reason = f"no readable {reason_path.name}"
            yield int(position), int(number), reason

    def quarantine(self, position: int, number: int, *, reason: str) -> Path:
        """Move an attempt aside with a reason. Verification refuses the run after this."""
        source = self.attempt_file(position, number)
        if not source.is_file():
            raise EvidenceError("unknown-attempt", f"attempt {position:06d}/{number:03d} not found")
        target = self.root / "quarantine" / f"{position:06d}-{number:03d}{ATTEMPT_SUFFIX}"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        atomic_write(
            target.parent / f"{position:06d}-{number:03d}{QUARANTINE_SUFFIX}",
            canonical_bytes({"reason": reason}) + b"\n",
        )
        return target


_FIRST_ONLY = [f"{1:03d}{ATTEMPT_SUFFIX}"]  # a task directory with its first attempt alone


def attempt_paths(directory: str | Path) -> list[tuple[int, str]]:
    """(number, file) of each attempt file in a task directory, in attempt order.

    Plain strings: verification lists 100,000 tasks, and a ``Path`` costs more to
    build than the listing itself. Anything else in a task directory is refused
    (``unexpected-file``); a missing directory holds no attempts.
    """
    directory = os.fspath(directory)
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return _paths_of(directory, names)


def _paths_of(directory: str, names: list[str]) -> list[tuple[int, str]]:
    """:func:`attempt_paths` of ``directory``, listed as ``names``."""
    prefix = directory if directory.endswith(os.sep) else directory + os.sep
    if names == _FIRST_ONLY:  # one attempt, the common case: nothing to parse or sort
        return [(1, prefix + _FIRST_ONLY[0])]
    found = []
    for name in names:
        number = _attempt_number(name)
        if number is None:
            raise EvidenceError(
                "unexpected-file", f"{prefix}{name}: not an attempt file of this store"
            )
        found.append((number, prefix + name))
    found.sort()
    return found


def _marker_schema(marker: Path) -> object:
    """The schema the marker names; None when it is unreadable or not such JSON
    (nested too deeply to parse included), which ``check_schema`` refuses."""
    try:
        return json.loads(marker.read_bytes()).get("schema")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC


def claim_attempt(task_dir: Path | str) -> tuple[int, str, int]:
    """Claim the next attempt of the task in ``task_dir``: (number, file, open descriptor).

    The file is created exclusively, so two writers never share an attempt; the
    descriptor appends.
    """
    directory = os.fspath(task_dir)
    number = 1
    while True:
        path = os.path.join(directory, attempt_name(number))
        try:
            return number, path, os.open(path, _CREATE, 0o666)
        except FileExistsError:
            numbers = [n for n in map(_attempt_number, os.listdir(directory)) if n is not None]
            number = max(max(numbers, default=0), number) + 1
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)


def remove_empty_claim(attempt: StoredAttempt, data: bytes | None = None) -> bool:
    """Remove an attempt file in which nothing was recorded (no whole record line).

    The record is written before the first model call, so such a file spent
    nothing and proves nothing; it is what a crash between claim and record leaves.
    ``data`` is the file's bytes when the caller has read them.
    """
    try:
        split_attempt(attempt.read() if data is None else data, str(attempt.path))
    except EvidenceError:
        os.remove(attempt.path)
        return True
    return False
