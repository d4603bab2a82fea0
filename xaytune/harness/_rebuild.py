"""Every fact of a run, rebuilt from the store alone (what verification compares).

Per assigned task: its stored spec (attribution, fingerprint), every attempt's
record, seal and hash-chained trajectory, and whether exactly one attempt is
sealed complete. :class:`Rebuild` yields the entries one task at a time, so a
verification of 100,000 tasks holds one rebuilt entry at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from xaytune.core.canonical import fingerprint, sha256_digest
from xaytune.core.domain.benchmark import BenchmarkSuite, TaskAssignment
from xaytune.core.errors import EvidenceError
from xaytune.harness._attempt import SPEC_FILE
from xaytune.harness._evidence_records import AttemptEvidence, EvidenceEntry
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.harness.store import (
    ATTEMPT_FILE,
    SEAL_FILE,
    AttemptRecord,
    AttemptSeal,
    HarnessEvidenceStore,
)
from xaytune.harness.trajectory import TRAJECTORY_FILE, verify_chain
from xaytune.models._protocol import ModelIdentity

__all__ = ["Rebuild", "check_quarantine", "refuse"]


def refuse(reason: str, message: str) -> EvidenceError:
    return EvidenceError(reason, message)


class _Rebuilt:
    """Facts of one stored attempt, rebuilt from its files alone."""

    __slots__ = ("model", "record_digest", "seal", "seal_digest", "spec_fingerprint")

    def __init__(
        self,
        seal: AttemptSeal,
        seal_digest: str,
        record_digest: str,
        model: ModelIdentity | None,
        spec_fingerprint: str,
    ) -> None:
        self.seal = seal
        self.seal_digest = seal_digest
        self.record_digest = record_digest
        self.model = model
        self.spec_fingerprint = spec_fingerprint


def _rebuild_attempt(
    position: int,
    number: int,
    directory: str,
    *,
    suite: BenchmarkSuite,
    assignment: TaskAssignment,
    task_id: str,
    replicate: int,
    spec_fingerprint: str,
) -> _Rebuilt:
    where = f"task {task_id} attempt {number:03d} ({directory})"
    record_path = os.path.join(directory, ATTEMPT_FILE)
    try:
        with open(record_path, "rb") as handle:
            record_raw = handle.read()
        record = AttemptRecord.model_validate_json(record_raw)
    except (OSError, ValueError) as error:
        raise refuse(
            "bad-record",
            f"{record_path}: attempt {position:06d}/{number:03d} record unreadable ({error})",
        ) from None
    attribution = record.attribution
    expected = (
        ("suite_digest", attribution.suite_digest, suite.digest),
        ("assignment_digest", attribution.assignment_digest, assignment.digest),
        ("task_id", attribution.task_id, task_id),
        ("position", attribution.position, position),
        ("seed", attribution.seed, assignment.seed),
        ("replicate", attribution.replicate, replicate),
        ("spec_fingerprint", attribution.spec_fingerprint, spec_fingerprint),
    )
    for field, actual, value in expected:
        if actual != value:
            raise refuse(
                "attribution-mismatch", f"{where}: {field} is {actual!r}, expected {value!r}"
            )
    if record.attempt != number:
        raise refuse("attribution-mismatch", f"{where}: record says attempt {record.attempt}")
    seal_path = os.path.join(directory, SEAL_FILE)
    try:
        with open(seal_path, "rb") as handle:
            seal_raw = handle.read()
    except FileNotFoundError:
        raise refuse("open-attempt", f"{where}: open (no seal)") from None
    try:
        seal = AttemptSeal.model_validate_json(seal_raw)
    except ValueError as error:
        first = str(error).splitlines()[0]
        raise refuse("bad-seal", f"{seal_path}: unreadable seal ({first})") from None
    record_digest = sha256_digest(record_raw)
    if seal.attempt_record != record_digest or seal.attempt != number:
        raise refuse("digest-mismatch", f"{where}: seal is not this attempt's record's")
    try:
        with open(os.path.join(directory, TRAJECTORY_FILE), "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise refuse("chain-broken", f"{where}: {TRAJECTORY_FILE} is missing") from None
    facts = verify_chain(
        data,
        genesis=record_digest,
        where=f"{where} {TRAJECTORY_FILE}",
        allow_torn_tail=seal.recovered,
    )
    chain = seal.trajectory
    if facts.head != chain.head or facts.count != chain.events or facts.bytes != chain.bytes:
        raise refuse(
            "chain-head-mismatch",
            f"{where}: trajectory has {facts.count} events, head {facts.head[:19]}...; "
            f"seal says {chain.events}, {chain.head[:19]}...",
        )
    _check_seal_claim(seal, facts.last_event, where)
    return _Rebuilt(
        seal, sha256_digest(seal_raw), record_digest, record.model, attribution.spec_fingerprint
    )


def _check_seal_claim(seal: AttemptSeal, last: dict[str, Any] | None, where: str) -> None:
    """A seal's status and outcome must be what its trajectory's end event says."""
    if seal.recovered:
        # A recovered attempt was sealed after a crash: never complete, whatever its
        # trajectory says (an end event that was never sealed attests nothing).
        if seal.status != "partial" or seal.outcome is not None:
            raise refuse("false-complete", f"{where}: a recovered attempt can only be partial")
        return
    end = last.get("v") if last is not None and last.get("type") == "end" else None
    if end is None:
        raise refuse("false-complete", f"{where}: trajectory has no end event for its seal")
    if seal.status == "complete" and seal.outcome is None:
        raise refuse("false-complete", f"{where}: sealed complete without an outcome")
    if seal.status == "partial" and seal.outcome is not None:
        raise refuse("false-complete", f"{where}: sealed partial with an outcome")
    claimed = {
        "status": seal.status,
        "outcome": None if seal.outcome is None else seal.outcome.model_dump(mode="json"),
        "spend": seal.spend.model_dump(mode="json"),
    }
    if end != claimed:
        raise refuse("false-complete", f"{where}: seal does not match the trajectory's end")


def _check_spec(
    store: HarnessEvidenceStore,
    position: int,
    task_id: str,
    *,
    harness_fingerprint: str,
    replicate: int,
    assignment: TaskAssignment,
) -> str:
    """Read the task's stored spec, check its attribution; return its fingerprint."""
    path = os.path.join(store.root, "tasks", f"{position:06d}", SPEC_FILE)
    try:
        with open(path, "rb") as handle:
            spec = AgentExecutionSpec.model_validate_json(
                handle.read(), context={"keep_canonical": False}
            )
    except FileNotFoundError:
        raise refuse("spec-missing", f"task {task_id}: {path} is missing") from None
    except ValueError:
        raise refuse(
            "digest-mismatch", f"task {task_id}: {path} is not its fingerprint's"
        ) from None
    binding = spec.binding
    checks = {
        "harness_fingerprint": (spec.harness_fingerprint, harness_fingerprint),
        "seed": (spec.seed, assignment.seed),
        "replicate": (spec.replicate, replicate),
        "task_id": (None if binding is None else binding.task_id, task_id),
        "position": (None if binding is None else binding.position, position),
        "assignment_digest": (
            None if binding is None else binding.assignment_digest,
            assignment.digest,
        ),
    }
    for field, (actual, expected) in checks.items():
        if actual != expected:
            raise refuse(
                "attribution-mismatch",
                f"task {task_id}: spec {field} is {actual!r}, expected {expected!r} ({path})",
            )
    return spec.fingerprint


def _rebuild_entry(
    store: HarnessEvidenceStore,
    *,
    suite: BenchmarkSuite,
    assignment: TaskAssignment,
    position: int,
    task_id: str,
    harness_fingerprint: str,
    replicate: int,
) -> tuple[EvidenceEntry, ModelIdentity | None]:
    spec_fingerprint = _check_spec(
        store,
        position,
        task_id,
        harness_fingerprint=harness_fingerprint,
        replicate=replicate,
        assignment=assignment,
    )
    stored = store.attempt_paths(position)
    if not stored:
        raise refuse("no-attempts", f"task {task_id} (position {position}): no attempts")
    rebuilt = [
        _rebuild_attempt(
            position,
            number,
            directory,
            suite=suite,
            assignment=assignment,
            task_id=task_id,
            replicate=replicate,
            spec_fingerprint=spec_fingerprint,
        )
        for number, directory in stored
    ]
    complete = [r for r in rebuilt if r.seal.status == "complete"]
    if len(complete) > 1:
        raise refuse(
            "multiple-complete",
            f"task {task_id}: {len(complete)} complete attempts; which one counts would be a "
            "choice after the fact",
        )
    models = (
        {None if r.model is None else fingerprint(r.model) for r in rebuilt}
        if len(rebuilt) > 1
        else ()
    )
    if len(models) > 1:
        raise refuse("model-mismatch", f"task {task_id}: attempts ran on different models")
    entry = EvidenceEntry(
        task_id=task_id,
        position=position,
        spec_fingerprint=spec_fingerprint,
        status="attested" if complete else "no-attested-result",
        attempts=tuple(
            AttemptEvidence(
                attempt=r.seal.attempt,
                status=r.seal.status,
                outcome=r.seal.outcome,
                spend=r.seal.spend,
                record_digest=r.record_digest,
                seal_digest=r.seal_digest,
                trajectory_head=r.seal.trajectory.head,
                trajectory_events=r.seal.trajectory.events,
                recovered=r.seal.recovered,
            )
            for r in rebuilt
        ),
    )
    return entry, rebuilt[0].model


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
    ran on.
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
    ) -> None:
        self.store = store
        self.suite = suite
        self.assignment = assignment
        self.harness_fingerprint = harness_fingerprint
        self.replicate = replicate
        self.quarantine_checked = quarantine_checked
        self.model: ModelIdentity | None = None

    def entries(self) -> Iterator[EvidenceEntry]:
        store, assignment = self.store, self.assignment
        if not self.quarantine_checked:
            check_quarantine(store, assignment)
        model: ModelIdentity | None = None
        for position, task_id in enumerate(assignment.task_ids):
            entry, entry_model = _rebuild_entry(
                store,
                suite=self.suite,
                assignment=assignment,
                position=position,
                task_id=task_id,
                harness_fingerprint=self.harness_fingerprint,
                replicate=self.replicate,
            )
            if model is None:
                model = entry_model
            elif entry_model != model:
                raise refuse("model-mismatch", f"task {task_id}: ran on another model than task 0")
            yield entry
        extra = [p for p in store.positions() if p >= len(assignment.task_ids)]
        if extra:
            raise refuse(
                "attempt-omitted",
                f"store has attempts at position {extra[0]}, "
                f"beyond the {len(assignment.task_ids)} assigned tasks",
            )
        if model is None:
            raise refuse("no-attempts", "the run has no attempts")
        self.model = model
