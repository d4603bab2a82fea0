"""The seal journal: which seals a store has committed, written ahead of them.

Each store keeps ``seal-journal.jsonl``, an append-only, hash-chained list of the
seals it has committed: one line per commit (a group commit's batch, or one seal),
``{"prev": <sha256 of the previous line>, "seals": [[position, attempt, digest], ...]}``
in canonical JSON. A line is written *before* the seals it lists are appended, and
is durable before they are (a group commit writes it ahead of the batch's first
sync). So:

- a seal in an attempt file that the journal does not list never happens, whatever
  the crash: it is refused (``seal-unjournaled``);
- a seal the journal lists but its file lacks is either a crash between the two
  writes (the attempt's end event then gives back exactly the listed seal, and a
  resume appends it: the outcome was committed) or a seal someone deleted
  (``seal-missing``: verification refuses it; a resume restores it when the end
  event is still there and refuses otherwise). Stripping the seals of failed
  attempts to have them run again is therefore caught, not rewarded.

A line cut short by a crash (no newline) listed seals that were never appended: a
reader ignores it, a writer cuts it off before appending.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import Any

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence._io import durable_dir, read_file, write_file

__all__ = [
    "JOURNAL_NAME",
    "SealJournal",
    "check_journaled",
    "journal_path",
    "journal_problems",
    "missing_seal",
    "read_journal",
]

JOURNAL_NAME = "seal-journal.jsonl"
_GENESIS = sha256_digest(b"xaytune.seal-journal/v1")
_KEYS = frozenset({"prev", "seals"})

Committed = dict[tuple[int, int], str]


def journal_path(task_dir: str | os.PathLike[str]) -> str:
    """The journal of the store that holds the task directory ``task_dir``
    (``<store>/tasks/<position>``)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.fspath(task_dir))), JOURNAL_NAME)


# A journal line as the writer writes it, matched without parsing: its prev digest,
# then seal entries of counts (canonical integers of at most 15 digits: below 2^53)
# and digests. Any other line is parsed and checked by _line_problem, which names
# what is wrong with it (or accepts it).
_DIGEST = rb"sha256:[0-9a-f]{64}"
_COUNT = rb"(?:0|[1-9][0-9]{0,14})"
_ENTRY = rb'\[%s,%s,"%s"\]' % (_COUNT, _COUNT, _DIGEST)
_LINE = re.compile(rb'\{"prev":"(%s)","seals":\[%s(?:,%s)*\]\}\n' % (_DIGEST, _ENTRY, _ENTRY))


def _parse(data: bytes, where: str) -> tuple[Committed, str, int]:
    """The seals ``data`` lists, its head digest and the length of its whole lines."""
    committed: Committed = {}
    head = _GENESIS
    end = data.rfind(b"\n") + 1  # a tail without newline was never committed
    start = 0
    number = 0
    match = _LINE.match
    while start < end:
        number += 1
        found = match(data, start, end)
        if found is not None and found.group(1) == head.encode():
            stop = found.end()
            line = data[start:stop]
            seals = json.loads(line)["seals"]  # (its form is the writer's: matched above)
        else:
            stop = data.index(b"\n", start) + 1
            line = data[start:stop]
            problem = _line_problem(line, head)
            if problem is not None:
                raise EvidenceError("journal-broken", f"{where}: line {number}: {problem}")
            seals = json.loads(line)["seals"]
        before = len(committed)
        committed.update(zip(map(_KEY, seals), map(_SEAL_DIGEST, seals), strict=True))
        if len(committed) != before + len(seals):  # a seal committed twice: name it
            position, attempt = _twice(seals, committed, before)
            raise EvidenceError(
                "journal-broken",
                f"{where}: line {number}: position {position} attempt {attempt:03d} "
                "is committed twice",
            )
        head = sha256_digest(line)
        start = stop
    return committed, head, end


# A seal entry's (position, attempt) and digest: the seals of a line are added in one
# dict.update (no loop in Python a seal), a seal committed twice found afterwards.
_KEY = itemgetter(0, 1)
_SEAL_DIGEST = itemgetter(2)


def _twice(seals: list[list[Any]], committed: Committed, before: int) -> tuple[int, int]:
    """The first seal of a line that is committed twice: by an earlier line (one of
    the first ``before`` keys of ``committed``, which the line's update kept in
    place) or earlier on the same line."""
    seen = set(itertools.islice(committed, before))
    for key in map(_KEY, seals):
        if key in seen:
            return key
        seen.add(key)
    raise AssertionError("no seal is committed twice")


def _line_problem(line: bytes, prev: str) -> str | None:
    try:
        value = json.loads(line)
    except ValueError:
        return "not JSON"
    if not isinstance(value, dict) or set(value) != _KEYS:
        return "not a journal line"
    if value["prev"] != prev:
        return "its chain is broken (prev is not the previous line's digest)"
    seals = value["seals"]
    if not isinstance(seals, list) or not seals:
        return "no seals"
    for seal in seals:
        if (
            not isinstance(seal, list)
            or len(seal) != 3
            or not all(type(n) is int and n >= 0 for n in seal[:2])
            or not isinstance(seal[2], str)
        ):
            return f"bad seal entry {seal!r}"
    if canonical_bytes(value) + b"\n" != line:
        return "not canonical"
    return None


def read_journal(store_root: str | os.PathLike[str]) -> Committed:
    """The seals a store's journal lists (none when it has no journal), by
    (position, attempt); refuses a broken journal (``journal-broken``)."""
    path = os.path.join(os.fspath(store_root), JOURNAL_NAME)
    try:
        data = read_file(path)
    except FileNotFoundError:
        return {}
    return _parse(data, path)[0]


def check_journaled(
    committed: Committed, *, position: int, number: int, seal_digest: str, where: str, task: str
) -> None:
    """Refuse a sealed attempt its store's journal does not list as committed
    (``seal-unjournaled``), or lists with another seal (``seal-mismatch``)."""
    listed = committed.get((position, number))
    if listed is None:
        raise EvidenceError(
            "seal-unjournaled",
            f"{where}: task {task} attempt {number:03d} is sealed, but its store's seal "
            "journal never committed that seal",
        )
    if listed != seal_digest:
        raise EvidenceError(
            "seal-mismatch",
            f"{where}: task {task} attempt {number:03d}: its seal is not the one its "
            f"store's journal committed ({listed})",
        )


def missing_seal(where: str, task: str, number: int, digest: str) -> EvidenceError:
    """A seal the journal committed that the attempt file does not hold."""
    return EvidenceError(
        "seal-missing",
        f"{where}: task {task} attempt {number:03d}: its committed seal {digest} is missing",
    )


def journal_problems(store_root: str | os.PathLike[str]) -> Iterator[EvidenceError]:
    """Every attempt file of a store against its journal, without rebuilding anything:
    a committed seal missing from its file, a seal never committed, another seal than
    the committed one (for a store whose evidence cannot be rebuilt, e.g. with its
    published subject gone: each problem named, not only the first)."""
    root = os.fspath(store_root)
    try:
        committed = dict(read_journal(root))
    except EvidenceError as error:
        yield error
        return
    tasks = os.path.join(root, "tasks")
    for name in sorted(os.listdir(tasks)) if os.path.isdir(tasks) else ():
        directory = os.path.join(tasks, name)
        for file in sorted(os.listdir(directory)):
            if not (name.isdigit() and file.endswith(".jsonl") and file[:-6].isdigit()):
                continue
            path = os.path.join(directory, file)
            key = (int(name), int(file[:-6]))
            listed = committed.pop(key, None)
            data = read_file(path)
            last = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]
            sealed = data.endswith(b"\n") and last.startswith(b'{"attempt":')
            task = f"at position {key[0]}"
            if listed is not None and not sealed:
                yield missing_seal(path, task, key[1], listed)
            elif sealed:
                try:
                    check_journaled(
                        {} if listed is None else {key: listed},
                        position=key[0],
                        number=key[1],
                        seal_digest=sha256_digest(last),
                        where=path,
                        task=task,
                    )
                except EvidenceError as error:
                    yield error
    for (position, number), digest in sorted(committed.items()):
        path = os.path.join(tasks, f"{position:06d}", f"{number:03d}.jsonl")
        yield missing_seal(path, f"at position {position}", number, digest)


# Appends of every journal of this process: one at a time (they are rare: one per
# group commit), so two journal objects of one store never interleave.
_APPENDING = threading.Lock()


class SealJournal:
    """A store's journal, open for appending (one writer process per tree: the tree
    lock). Several objects may open one store's journal in a process: each re-reads
    it before appending when it grew meanwhile, so the chain stays one."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._load()

    def _load(self) -> None:
        try:
            data = read_file(self.path)
        except FileNotFoundError:
            data = b""
        self.committed, self._head, whole = _parse(data, self.path)
        if whole < len(data):  # a line a crash cut short: nothing it lists was sealed
            os.truncate(self.path, whole)
        self._size = whole
        self.numbers: dict[int, set[int]] = {}
        for position, number in self.committed:
            self.numbers.setdefault(position, set()).add(number)

    def _current_size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            return 0

    @classmethod
    def of_task(cls, task_dir: str | os.PathLike[str]) -> SealJournal:
        return cls(journal_path(task_dir))

    def append(self, seals: Iterable[tuple[int, int, str]], *, durable: bool) -> None:
        """Commit ``seals`` (position, attempt, seal digest): one line, written (and
        made durable when ``durable``) before any of them is appended."""
        listed = [[position, attempt, digest] for position, attempt, digest in seals]
        if not listed:
            return
        with _APPENDING:
            if self._current_size() != self._size:
                self._load()  # another object of this process appended meanwhile
            for position, attempt, _ in listed:
                if (position, attempt) in self.committed:
                    raise EvidenceError(
                        "journal-broken",
                        f"{self.path}: position {position} attempt {attempt:03d} is "
                        "committed already",
                    )
            line = canonical_bytes({"prev": self._head, "seals": listed}) + b"\n"
            fresh = not os.path.exists(self.path)
            try:
                write_file(self.path, line, durable=durable, append=not fresh)
            except BaseException:
                # A partial line (a full disk) must not join the next one: cut it off.
                if not fresh and self._current_size() > self._size:
                    os.truncate(self.path, self._size)
                raise
            if fresh:
                durable_dir(os.path.dirname(self.path), durable=durable)
            self._head = sha256_digest(line)
            self._size += len(line)
            for position, attempt, digest in listed:
                self.committed[(position, attempt)] = digest
                self.numbers.setdefault(position, set()).add(attempt)
