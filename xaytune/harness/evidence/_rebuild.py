"""Every fact of a run, rebuilt from the store alone (what verification compares).

Per assigned task, per attempt file: the spec it ran (attribution, fingerprint),
its record, its hash-chained events and its seal, and whether exactly one attempt
is sealed complete. Each file is read once and each byte hashed once.
:class:`Rebuild` yields the entries one task at a time, so a verification of
100,000 tasks holds one rebuilt entry at a time.

Compared with claimed entries (:meth:`Rebuild.compare`), a task whose every attempt
file is byte for byte what its claimed attempt implies, and whose journal lists
each claimed seal, is taken as claimed (:func:`_as_claimed`); any other task is
rebuilt in full and compared, which names what differs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Literal

from xaytune.core.canonical import fingerprint
from xaytune.core.domain.benchmark import BenchmarkSuite, TaskAssignment
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence._claimed import check_claimed
from xaytune.harness.evidence._io import read_file
from xaytune.harness.evidence._records import AttemptEvidence, EvidenceEntry
from xaytune.harness.evidence.attempt import RecordTemplate
from xaytune.harness.evidence.journal import check_journaled, missing_seal, read_journal
from xaytune.harness.evidence.rebuild_attempt import (
    Expected,
    RebuiltAttempt,
    rebuild_attempt,
    refuse,
)
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.models.protocol import ModelIdentity

__all__ = ["Rebuild", "check_quarantine", "compare_attempt_numbers"]

EntryStatus = Literal["attested", "no-attested-result"]


class _TaskFacts:
    """One assigned task as the store has it: every attempt rebuilt, and its status."""

    __slots__ = ("attempts", "position", "status", "task_id")

    def __init__(
        self, position: int, task_id: str, attempts: list[RebuiltAttempt], status: EntryStatus
    ) -> None:
        self.position = position
        self.task_id = task_id
        self.attempts = attempts
        self.status = status

    @property
    def model(self) -> ModelIdentity | None:
        return self.attempts[0].model

    def entry(self) -> EvidenceEntry:
        """The evidence entry these facts are."""
        return EvidenceEntry(
            task_id=self.task_id,
            position=self.position,
            spec_fingerprint=self.attempts[0].spec_fingerprint,
            status=self.status,
            attempts=tuple(AttemptEvidence(**attempt.fields()) for attempt in self.attempts),
        )

    def check(self, claimed: EvidenceEntry) -> None:
        """Refuse ``claimed`` unless it is :meth:`entry`, compared without building it.

        ``claimed`` holds exactly what validation gives (the caller checked it with
        :func:`~xaytune.core.exact.exactly_typed`: no subclass, no value of another
        type, so comparing values is what ``==`` on records would do), and each of
        its attempts must match its rebuilt attempt.
        """
        task = claimed.task_id
        numbers = [a.attempt for a in claimed.attempts]
        stored = [r.number for r in self.attempts]
        if numbers != stored:
            compare_attempt_numbers(task, numbers, stored)
        for mine, rebuilt in zip(claimed.attempts, self.attempts, strict=True):
            if not rebuilt.matches(mine):
                raise refuse(
                    "digest-mismatch",
                    f"{rebuilt.where}: the evidence's attempt is not the stored one",
                )
        if (
            claimed.task_id != self.task_id
            or claimed.position != self.position
            or claimed.spec_fingerprint != self.attempts[0].spec_fingerprint
            or claimed.status != self.status
        ):
            raise refuse("digest-mismatch", f"task {task}: entry does not match the store")


def compare_attempt_numbers(task: str, claimed: list[int], actual: list[int]) -> None:
    """Refuse an attempt in ``actual`` (the store) but not ``claimed``, or the reverse,
    or one ``claimed`` twice (its second instance is not in the store)."""
    if len(set(claimed)) != len(claimed):
        twice = next(n for n in claimed if claimed.count(n) > 1)
        raise refuse("attempt-missing", f"task {task} attempt {twice:03d} is in the evidence twice")
    for number in actual:
        if number not in claimed:
            raise refuse(
                "attempt-omitted",
                f"task {task} attempt {number:03d} is in the store but not in the evidence",
            )
    for number in claimed:
        if number not in actual:
            raise refuse(
                "attempt-missing",
                f"task {task} attempt {number:03d} is in the evidence but not in the store",
            )


def _as_claimed(
    position: int,
    task_id: str,
    stored: Sequence[tuple[int, str]],
    claimed: EvidenceEntry,
    records: RecordTemplate,
    committed: dict[tuple[int, int], str],
) -> bool:
    """Whether the task's attempt files are exactly what ``claimed`` (exactly typed)
    implies, each seal committed by the journal, and the entry's status theirs: what
    rebuilding the task and comparing would find, found without parsing. Its
    journal entries are then taken out of ``committed``; on False nothing is, and
    the caller rebuilds the task in full. ``records``: the replicate's record
    template."""
    facts = claimed.__dict__  # exactly typed: its plain values
    attempts = facts["attempts"]
    if (
        len(attempts) != len(stored)
        or facts["task_id"] != task_id
        or facts["position"] != position
        or (position, len(stored) + 1) in committed
    ):
        return False
    spec_fingerprint = facts["spec_fingerprint"]
    if len(stored) == 1:  # one attempt (most tasks): the loop below, written out
        ((number, path),) = stored
        (claim,) = attempts
        key = (position, number)
        claimed_facts = claim.__dict__
        if (
            claimed_facts["attempt"] != number
            or committed.get(key) != claimed_facts["seal_digest"]
            or facts["status"]
            != ("attested" if claimed_facts["status"] == "complete" else "no-attested-result")
        ):
            return False
        try:
            data = read_file(path)
        except OSError:
            return False
        record = records.line(
            number, task_id=task_id, position=position, spec_fingerprint=spec_fingerprint
        )
        if (
            check_claimed(
                data, claim, record=record, spec_fingerprint=spec_fingerprint, first_spec=None
            )
            is None
        ):
            return False
        del committed[key]
        return True
    first_spec: bytes | None = None
    complete = 0
    for (number, path), claim in zip(stored, attempts, strict=True):
        key = (position, number)
        if claim.attempt != number or committed.get(key) != claim.seal_digest:
            return False
        try:
            data = read_file(path)
        except OSError:
            return False
        first_spec = check_claimed(
            data,
            claim,
            record=records.line(
                number, task_id=task_id, position=position, spec_fingerprint=spec_fingerprint
            ),
            spec_fingerprint=spec_fingerprint,
            first_spec=first_spec,
        )
        if first_spec is None:
            return False
        complete += claim.status == "complete"
    if complete > 1 or facts["status"] != ("attested" if complete else "no-attested-result"):
        return False
    for number, _ in stored:
        del committed[(position, number)]
    return True


def _rebuild_task(
    position: int,
    task_id: str,
    stored: Sequence[tuple[int, str]],
    expected: Expected,
    committed: dict[tuple[int, int], str],
    store: HarnessEvidenceStore,
) -> _TaskFacts:
    if committed.get((position, len(stored) + 1)) is not None or any(
        (position, n) not in committed for n in range(1, len(stored) + 1)
    ):
        _check_listed(position, task_id, stored, committed, store)
    if not stored:
        raise refuse("no-attempts", f"task {task_id} (position {position}): no attempts")
    rebuilt: list[RebuiltAttempt] = []
    first_spec: bytes | None = None
    for number, path in stored:
        listed = committed.pop((position, number), None)
        try:
            attempt = rebuild_attempt(
                position, number, path, task_id=task_id, expected=expected, first_spec=first_spec
            )
        except EvidenceError as error:
            if listed is not None and error.reason == "open-attempt":
                raise missing_seal(path, task_id, number, listed) from None
            raise
        if listed != attempt.seal_digest:
            check_journaled(
                {} if listed is None else {(position, number): listed},
                position=position,
                number=number,
                seal_digest=attempt.seal_digest,
                where=path,
                task=task_id,
            )
        first_spec = attempt.spec_line
        rebuilt.append(attempt)
    complete = sum(r.complete for r in rebuilt)
    if complete > 1:
        raise refuse(
            "multiple-complete",
            f"task {task_id}: {complete} complete attempts; which one counts would be a "
            "choice after the fact",
        )
    if len(rebuilt) > 1:
        models = {None if r.model is None else fingerprint(r.model) for r in rebuilt}
        if len(models) > 1:
            raise refuse("model-mismatch", f"task {task_id}: attempts ran on different models")
    status: EntryStatus = "attested" if complete else "no-attested-result"
    return _TaskFacts(position, task_id, rebuilt, status)


def _check_listed(
    position: int,
    task_id: str,
    stored: Sequence[tuple[int, str]],
    committed: dict[tuple[int, int], str],
    store: HarnessEvidenceStore,
) -> None:
    """Refuse a committed attempt of the task that is not in its directory."""
    numbers = {number for number, _ in stored}
    for (at, number), digest in sorted(committed.items()):
        if at == position and number not in numbers:
            raise missing_seal(str(store.attempt_file(position, number)), task_id, number, digest)


def _positions_from(store: HarnessEvidenceStore, first: int) -> list[int]:
    """The store's task positions from ``first`` on, ascending (``store.positions()``
    without a ``Path`` per name, which costs more than the listing). Called once every
    position below ``first`` was found in its directory: when only those are named
    by digits, there is none beyond."""
    try:
        names = os.listdir(os.path.join(store.root, "tasks"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    if sum(map(str.isdigit, names)) <= first:
        return []
    return sorted(p for p in map(int, filter(str.isdigit, names)) if p >= first)


def _quarantined_positions(store: HarnessEvidenceStore) -> dict[int, tuple[int, str]]:
    return {position: (number, reason) for position, number, reason in store.quarantined()}


def check_quarantine(store: HarnessEvidenceStore, assignment: TaskAssignment) -> None:
    quarantined = _quarantined_positions(store)
    for position, task_id in enumerate(assignment.task_ids):
        if position in quarantined:
            number, reason = quarantined[position]
            raise refuse(
                "quarantined-attempt",
                f"task {task_id} attempt {number:03d} is quarantined ({reason})",
            )


class Rebuild:
    """The entries of a run rebuilt from ``store``, in assignment order, one at a time.

    Iterating :meth:`entries` refuses what the store does not support (the first
    failing task, in position order); once it is exhausted, attempts beyond the
    assigned positions are refused and :attr:`model` is the model every attempt
    ran on. ``listings`` are the attempt files of each position when the caller
    has listed them already.
    """

    def __init__(
        self,
        store: HarnessEvidenceStore,
        *,
        suite: BenchmarkSuite,
        assignment: TaskAssignment,
        harness_fingerprint: str,
        replicate: int,
        quarantine_checked: bool = False,
        listings: Sequence[Sequence[tuple[int, str]]] | None = None,
        intent: str | None = None,
    ) -> None:
        self.store = store
        self.expected = Expected(suite, assignment, harness_fingerprint, replicate, intent=intent)
        self.quarantine_checked = quarantine_checked
        self.listings = listings
        self.model: ModelIdentity | None = None

    def entries(self) -> Iterator[EvidenceEntry]:
        """The rebuilt entries (what assembly records)."""
        for task in self._tasks():
            yield task.entry()

    def compare(self, claimed: Sequence[EvidenceEntry]) -> None:
        """Refuse the first entry of ``claimed`` (exactly typed, one per assigned task)
        the store does not rebuild.

        A difference is raised after the whole rebuild, as when the rebuilt evidence
        was compared whole: what the store does not support is refused first. (The
        loop of :meth:`_tasks`, written out: it runs once per attempt of a run.)
        """
        store, expected = self.store, self.expected
        if not self.quarantine_checked:
            check_quarantine(store, expected.assignment)
        listings = self.listings
        committed = read_journal(store.root)
        difference: EvidenceError | None = None
        model: ModelIdentity | None = None
        for position, (task_id, mine) in enumerate(
            zip(expected.assignment.task_ids, claimed, strict=True)
        ):
            stored = store.attempt_paths(position) if listings is None else listings[position]
            records = expected.records  # None until task 0's record taught the model
            if records is not None and _as_claimed(
                position, task_id, stored, mine, records, committed
            ):
                # Every record was the template's: the replicate's model, from task 0.
                task_model = expected.model
            else:
                task = _rebuild_task(position, task_id, stored, expected, committed, store)
                task_model = task.model
                if difference is None:
                    try:
                        task.check(mine)
                    except EvidenceError as error:
                        difference = error
            if position == 0:
                model = task_model
            elif task_model is not model and task_model != model:
                raise refuse("model-mismatch", f"task {task_id}: ran on another model than task 0")
        self._finish(committed, model)
        if difference is not None:
            raise difference

    def _tasks(self) -> Iterator[_TaskFacts]:
        """Each task rebuilt, in position order."""
        store, expected = self.store, self.expected
        if not self.quarantine_checked:
            check_quarantine(store, expected.assignment)
        model: ModelIdentity | None = None
        listings = self.listings
        committed = read_journal(store.root)
        for position, task_id in enumerate(expected.assignment.task_ids):
            stored = store.attempt_paths(position) if listings is None else listings[position]
            task = _rebuild_task(position, task_id, stored, expected, committed, store)
            if position == 0:
                model = task.model
            elif task.model != model:
                raise refuse("model-mismatch", f"task {task_id}: ran on another model than task 0")
            yield task
        self._finish(committed, model)

    def _finish(self, committed: dict[tuple[int, int], str], model: ModelIdentity | None) -> None:
        """Once every assigned task is rebuilt or taken as claimed (``committed``: the
        journal's seals not found in their files): refuse a committed seal the store
        no longer has, or attempts beyond the assigned tasks; learn the run's model."""
        store, task_ids = self.store, self.expected.assignment.task_ids
        if committed:  # committed seals of attempts the store no longer has
            (position, number), digest = min(committed.items())
            task_id = task_ids[position] if position < len(task_ids) else f"at position {position}"
            raise missing_seal(str(store.attempt_file(position, number)), task_id, number, digest)
        extra = _positions_from(store, len(task_ids))
        if extra:
            raise refuse(
                "attempt-omitted",
                f"store has attempts at position {extra[0]}, "
                f"beyond the {len(task_ids)} assigned tasks",
            )
        if model is None:
            raise refuse("no-attempts", "the run has no attempts")
        self.model = model
