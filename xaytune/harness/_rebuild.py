"""Every fact of a run, rebuilt from the store alone (what verification compares).

Per assigned task, per attempt file: the spec it ran (attribution, fingerprint),
its record, its hash-chained events and its seal, and whether exactly one attempt
is sealed complete. Each file is read once and each byte hashed once.
:class:`Rebuild` yields the entries one task at a time, so a verification of
100,000 tasks holds one rebuilt entry at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from xaytune.core.canonical import canonical_bytes, fingerprint, sha256_digest
from xaytune.core.domain.benchmark import BenchmarkSuite, TaskAssignment
from xaytune.core.errors import EvidenceError
from xaytune.harness._attempt import attribution_facts, record_bytes
from xaytune.harness._evidence_records import AttemptEvidence, EvidenceEntry
from xaytune.harness._io import read_file
from xaytune.harness.attempt_file import SEAL_PREFIX, AttemptLayout, split_attempt
from xaytune.harness.store import AttemptRecord, AttemptSeal, HarnessEvidenceStore
from xaytune.harness.trajectory import verify_chain
from xaytune.models._protocol import ModelIdentity

__all__ = ["Rebuild", "check_quarantine", "refuse"]


def refuse(reason: str, message: str) -> EvidenceError:
    return EvidenceError(reason, message)


class _Expected:
    """What every attempt of one replicate must be attributed to (and, once the first
    record is read, the model it ran on and that model's canonical bytes)."""

    __slots__ = ("assignment", "harness_fingerprint", "model", "model_bytes", "replicate", "suite")

    def __init__(
        self,
        suite: BenchmarkSuite,
        assignment: TaskAssignment,
        harness_fingerprint: str,
        replicate: int,
    ) -> None:
        self.suite = suite
        self.assignment = assignment
        self.harness_fingerprint = harness_fingerprint
        self.replicate = replicate
        self.model: ModelIdentity | None = None
        self.model_bytes: bytes | None = None

    def attribution(self, *, task_id: str, position: int, spec_fingerprint: str) -> dict[str, Any]:
        return attribution_facts(
            suite_digest=self.suite.digest,
            assignment_digest=self.assignment.digest,
            task_id=task_id,
            position=position,
            seed=self.assignment.seed,
            replicate=self.replicate,
            harness_fingerprint=self.harness_fingerprint,
            spec_fingerprint=spec_fingerprint,
        )


class _Rebuilt:
    """Facts of one stored attempt, rebuilt from its file alone."""

    __slots__ = ("model", "record_digest", "seal", "seal_digest", "spec_fingerprint", "spec_line")

    def __init__(
        self,
        seal: AttemptSeal,
        seal_digest: str,
        record_digest: str,
        model: ModelIdentity | None,
        spec_line: bytes,
        spec_fingerprint: str,
    ) -> None:
        self.seal = seal
        self.seal_digest = seal_digest
        self.record_digest = record_digest
        self.model = model
        self.spec_line = spec_line
        self.spec_fingerprint = spec_fingerprint


def _check_record(
    record_raw: bytes, where: str, *, number: int, attribution: dict[str, Any], expected: _Expected
) -> ModelIdentity | None:
    """The record is the one these facts give; returns the model it names.

    Once the replicate's model is known a record is compared as bytes with the
    canonical record of the expected facts (what the writer wrote); a record that
    differs is parsed to name what differs.
    """
    if expected.model_bytes is not None and record_raw == record_bytes(
        number, attribution, expected.model_bytes
    ):
        return expected.model
    try:
        record = AttemptRecord.model_validate_json(record_raw)
    except ValueError as error:
        first = str(error).splitlines()[0]
        raise refuse("bad-record", f"{where}: record unreadable ({first})") from None
    actual = record.attribution
    for field, value in attribution.items():
        if getattr(actual, field) != value:
            raise refuse(
                "attribution-mismatch",
                f"{where}: record {field} is {getattr(actual, field)!r}, expected {value!r}",
            )
    if record.attempt != number:
        raise refuse("attribution-mismatch", f"{where}: record says attempt {record.attempt}")
    if expected.model_bytes is None:
        expected.model = record.model
        expected.model_bytes = canonical_bytes(
            None if record.model is None else record.model.model_dump(mode="json")
        )
    return record.model


def _refuse_unsealed(data: bytes, layout: AttemptLayout, where: str) -> NoReturn:
    """Name what a file without a final seal line is: an open attempt (what a crash
    leaves: whole events, perhaps a torn last one) or an edited one (bytes after its
    seal; a last line no writer could have left)."""
    size = len(data)
    if layout.torn:
        fragment = data.rfind(b"\n") + 1
        last = data.rfind(b"\n", 0, fragment - 1) + 1
        if last >= layout.record_end and data.startswith(SEAL_PREFIX, last):
            raise refuse("trajectory-torn", f"{where}: {size - fragment} bytes after its seal")
    else:
        last = data.rfind(b"\n", 0, size - 1) + 1
        if last >= layout.record_end:
            try:
                json.loads(data[last:])
            except ValueError:
                raise refuse("chain-broken", f"{where}: its last line is not JSON") from None
    raise refuse("open-attempt", f"{where}: open (no seal)")


def _rebuild_attempt(
    position: int,
    number: int,
    path: str,
    *,
    task_id: str,
    expected: _Expected,
    first_spec: bytes | None,
) -> _Rebuilt:
    where = f"task {task_id} attempt {number:03d} ({path})"
    try:
        data = read_file(path)
    except OSError as error:
        raise refuse("bad-record", f"{where}: unreadable ({error.strerror})") from None
    layout = split_attempt(data, where)
    if not layout.sealed:
        _refuse_unsealed(data, layout, where)
    spec_line = data[: layout.spec_end - 1]
    if first_spec is not None and spec_line != first_spec:
        raise refuse("attribution-mismatch", f"{where}: ran another spec than the first attempt")
    spec_fingerprint = sha256_digest(spec_line)
    record_raw = data[layout.spec_end : layout.record_end]
    attribution = expected.attribution(
        task_id=task_id, position=position, spec_fingerprint=spec_fingerprint
    )
    model = _check_record(
        record_raw, where, number=number, attribution=attribution, expected=expected
    )
    seal_raw = data[layout.events_end :]
    try:
        seal = AttemptSeal.model_validate_json(seal_raw)
    except ValueError as error:
        first = str(error).splitlines()[0]
        raise refuse("bad-seal", f"{where}: unreadable seal ({first})") from None
    record_digest = sha256_digest(record_raw)
    if seal.attempt_record != record_digest or seal.attempt != number:
        raise refuse("digest-mismatch", f"{where}: the seal is not this attempt's record's")
    chain = seal.trajectory
    events_end = layout.events_end
    if seal.recovered:
        # A recovered attempt may keep one terminated fragment after its chain.
        chain_end = layout.record_end + chain.bytes
        rest = data[chain_end:events_end] if chain_end <= events_end else b"?"
        if rest and rest.find(b"\n") != len(rest) - 1:
            raise refuse(
                "chain-head-mismatch",
                f"{where}: {events_end - layout.record_end} event bytes, seal says {chain.bytes}",
            )
        events_end = chain_end
    facts = verify_chain(
        data, genesis=record_digest, where=where, start=layout.record_end, end=events_end
    )
    if facts.head != chain.head or facts.count != chain.events or facts.bytes != chain.bytes:
        raise refuse(
            "chain-head-mismatch",
            f"{where}: trajectory has {facts.count} events, head {facts.head[:19]}...; "
            f"seal says {chain.events}, {chain.head[:19]}...",
        )
    _check_seal_claim(seal, facts.last_event, where)
    return _Rebuilt(
        seal, sha256_digest(seal_raw), record_digest, model, spec_line, spec_fingerprint
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


def _rebuild_entry(
    position: int,
    task_id: str,
    stored: Sequence[tuple[int, str]],
    expected: _Expected,
) -> tuple[EvidenceEntry, ModelIdentity | None]:
    if not stored:
        raise refuse("no-attempts", f"task {task_id} (position {position}): no attempts")
    rebuilt: list[_Rebuilt] = []
    first_spec: bytes | None = None
    for number, path in stored:
        attempt = _rebuild_attempt(
            position, number, path, task_id=task_id, expected=expected, first_spec=first_spec
        )
        first_spec = attempt.spec_line
        rebuilt.append(attempt)
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
        spec_fingerprint=rebuilt[0].spec_fingerprint,
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
    ) -> None:
        self.store = store
        self.expected = _Expected(suite, assignment, harness_fingerprint, replicate)
        self.quarantine_checked = quarantine_checked
        self.listings = listings
        self.model: ModelIdentity | None = None

    def entries(self) -> Iterator[EvidenceEntry]:
        store, assignment = self.store, self.expected.assignment
        if not self.quarantine_checked:
            check_quarantine(store, assignment)
        model: ModelIdentity | None = None
        listings = self.listings
        for position, task_id in enumerate(assignment.task_ids):
            stored = store.attempt_paths(position) if listings is None else listings[position]
            entry, entry_model = _rebuild_entry(position, task_id, stored, self.expected)
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
