"""A run's evidence: assembled from the store, verified against suite and store.

``HarnessRunEvidence`` records every attempt instance of each assigned task. An
entry is ``attested`` (exactly one attempt sealed complete, verifying) or
``no-attested-result`` (every attempt sealed partial, verifying: the outcome is
absent, the spend is kept). A false claim of a complete outcome is refused, never
downgraded. :func:`verify_run_evidence` is the one verification: it rebuilds every
fact from the suite, the source and the store, not from the evidence object.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from xaytune.core.canonical import fingerprint, sha256_digest
from xaytune.core.domain.benchmark import (
    BenchmarkSuite,
    SeededSample,
    SuiteSource,
    TaskAssignment,
    record_assignment,
)
from xaytune.core.errors import EvidenceError
from xaytune.harness._attempt import SPEC_FILE
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.harness.store import (
    AttemptSeal,
    HarnessEvidenceStore,
    Outcome,
    SpendRecord,
    StoredAttempt,
)
from xaytune.harness.trajectory import TRAJECTORY_FILE, verify_chain
from xaytune.models._protocol import ModelIdentity

__all__ = [
    "EVIDENCE_SCHEMA",
    "AttemptEvidence",
    "EvidenceEntry",
    "HarnessRunEvidence",
    "assemble_evidence",
    "verify_run_evidence",
]

EVIDENCE_SCHEMA = "xaytune.harness-run-evidence/v1"
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class AttemptEvidence(BaseModel):
    """One attempt instance as the evidence records it."""

    model_config = _FROZEN

    attempt: int
    status: Literal["complete", "partial"]
    outcome: Outcome | None
    spend: SpendRecord
    record_digest: str
    seal_digest: str
    trajectory_head: str
    trajectory_events: int
    recovered: bool


class EvidenceEntry(BaseModel):
    """One assigned task: every attempt of it, and whether one is attested."""

    model_config = _FROZEN

    task_id: str
    position: int
    spec_fingerprint: str
    status: Literal["attested", "no-attested-result"]
    attempts: tuple[AttemptEvidence, ...]

    @property
    def attested(self) -> AttemptEvidence | None:
        """The complete attempt of an attested entry, else None."""
        for attempt in self.attempts:
            if attempt.status == "complete":
                return attempt
        return None


class HarnessRunEvidence(BaseModel):
    """The verified evidence of one replicate (one harness, one seed)."""

    model_config = _FROZEN

    schema_: Literal["xaytune.harness-run-evidence/v1"] = Field(
        default=EVIDENCE_SCHEMA, alias="schema"
    )
    suite_name: str
    suite_digest: str
    sampling: SeededSample
    assignment_digest: str
    seed: int
    replicate: int
    harness_fingerprint: str
    model: ModelIdentity
    entries: tuple[EvidenceEntry, ...]
    digest: str = ""

    def content_digest(self) -> str:
        """The digest of everything but ``digest`` itself."""
        return fingerprint(self.model_dump(mode="json", by_alias=True, exclude={"digest"}))

    def sealed(self) -> HarnessRunEvidence:
        """A copy whose ``digest`` is its contents'."""
        return self.model_copy(update={"digest": self.content_digest()})


def _refuse(reason: str, message: str) -> EvidenceError:
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
    store: HarnessEvidenceStore,
    attempt: StoredAttempt,
    *,
    suite: BenchmarkSuite,
    assignment: TaskAssignment,
    task_id: str,
    replicate: int,
    spec_fingerprint: str,
) -> _Rebuilt:
    where = f"task {task_id} attempt {attempt.number:03d} ({attempt.path})"
    record, record_raw = store.read_record(attempt)
    attribution = record.attribution
    expected = {
        "suite_digest": suite.digest,
        "assignment_digest": assignment.digest,
        "task_id": task_id,
        "position": attempt.position,
        "seed": assignment.seed,
        "replicate": replicate,
        "spec_fingerprint": spec_fingerprint,
    }
    for field, value in expected.items():
        if getattr(attribution, field) != value:
            raise _refuse(
                "attribution-mismatch",
                f"{where}: {field} is {getattr(attribution, field)!r}, expected {value!r}",
            )
    if record.attempt != attempt.number:
        raise _refuse("attribution-mismatch", f"{where}: record says attempt {record.attempt}")
    if attempt.is_open:
        raise _refuse("open-attempt", f"{where}: open (no seal)")
    seal, seal_raw = store.read_seal(attempt)
    record_digest = sha256_digest(record_raw)
    if seal.attempt_record != record_digest or seal.attempt != attempt.number:
        raise _refuse("digest-mismatch", f"{where}: seal is not this attempt's record's")
    trajectory_path = attempt.path / TRAJECTORY_FILE
    try:
        data = trajectory_path.read_bytes()
    except FileNotFoundError:
        raise _refuse("chain-broken", f"{where}: {TRAJECTORY_FILE} is missing") from None
    facts = verify_chain(
        data,
        genesis=record_digest,
        where=f"{where} {TRAJECTORY_FILE}",
        allow_torn_tail=seal.recovered,
    )
    chain = seal.trajectory
    if (facts.head, facts.count, facts.bytes) != (chain.head, chain.events, chain.bytes):
        raise _refuse(
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
            raise _refuse("false-complete", f"{where}: a recovered attempt can only be partial")
        return
    end = last.get("v") if last is not None and last.get("type") == "end" else None
    if end is None:
        raise _refuse("false-complete", f"{where}: trajectory has no end event for its seal")
    if seal.status == "complete" and seal.outcome is None:
        raise _refuse("false-complete", f"{where}: sealed complete without an outcome")
    if seal.status == "partial" and seal.outcome is not None:
        raise _refuse("false-complete", f"{where}: sealed partial with an outcome")
    claimed = {
        "status": seal.status,
        "outcome": None if seal.outcome is None else seal.outcome.model_dump(mode="json"),
        "spend": seal.spend.model_dump(mode="json"),
    }
    if end != claimed:
        raise _refuse("false-complete", f"{where}: seal does not match the trajectory's end")


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
    path = store.root / "tasks" / f"{position:06d}" / SPEC_FILE
    try:
        spec = AgentExecutionSpec.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise _refuse("spec-missing", f"task {task_id}: {path} is missing") from None
    except ValueError:
        raise _refuse(
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
            raise _refuse(
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
    stored = store.attempts(position)
    if not stored:
        raise _refuse("no-attempts", f"task {task_id} (position {position}): no attempts")
    rebuilt = [
        _rebuild_attempt(
            store,
            attempt,
            suite=suite,
            assignment=assignment,
            task_id=task_id,
            replicate=replicate,
            spec_fingerprint=spec_fingerprint,
        )
        for attempt in stored
    ]
    complete = [r for r in rebuilt if r.seal.status == "complete"]
    if len(complete) > 1:
        raise _refuse(
            "multiple-complete",
            f"task {task_id}: {len(complete)} complete attempts; which one counts would be a "
            "choice after the fact",
        )
    models = {None if r.model is None else fingerprint(r.model) for r in rebuilt}
    if len(models) > 1:
        raise _refuse("model-mismatch", f"task {task_id}: attempts ran on different models")
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


def _check_cohort(suite: BenchmarkSuite, source: SuiteSource) -> None:
    if source.suite.digest != suite.digest:
        raise _refuse(
            "suite-mismatch",
            f"suite {suite.name} {suite.digest} is not the source's {source.digest}",
        )


def _quarantined_positions(store: HarnessEvidenceStore) -> dict[int, tuple[int, str]]:
    return {position: (number, reason) for position, number, reason in store.quarantined()}


def _check_quarantine(store: HarnessEvidenceStore, assignment: TaskAssignment) -> None:
    quarantined = _quarantined_positions(store)
    for position, task_id in enumerate(assignment.task_ids):
        if position in quarantined:
            number, reason = quarantined[position]
            raise _refuse(
                "quarantined-attempt",
                f"task {task_id} attempt {number:03d} is quarantined ({reason})",
            )


def _rebuild(
    store: HarnessEvidenceStore,
    *,
    suite: BenchmarkSuite,
    assignment: TaskAssignment,
    sampling: SeededSample,
    harness_fingerprint: str,
    replicate: int,
) -> HarnessRunEvidence:
    _check_quarantine(store, assignment)
    entries = []
    model: ModelIdentity | None = None
    for position, task_id in enumerate(assignment.task_ids):
        entry, entry_model = _rebuild_entry(
            store,
            suite=suite,
            assignment=assignment,
            position=position,
            task_id=task_id,
            harness_fingerprint=harness_fingerprint,
            replicate=replicate,
        )
        if model is None:
            model = entry_model
        elif entry_model != model:
            raise _refuse("model-mismatch", f"task {task_id}: ran on another model than task 0")
        entries.append(entry)
    extra = [p for p in store.positions() if p >= len(assignment.task_ids)]
    if extra:
        raise _refuse(
            "attempt-omitted",
            f"store has attempts at position {extra[0]}, "
            f"beyond the {len(assignment.task_ids)} assigned tasks",
        )
    if model is None:
        raise _refuse("no-attempts", "the run has no attempts")
    return HarnessRunEvidence(
        suite_name=suite.name,
        suite_digest=suite.digest,
        sampling=sampling,
        assignment_digest=assignment.digest,
        seed=assignment.seed,
        replicate=replicate,
        harness_fingerprint=harness_fingerprint,
        model=model,
        entries=tuple(entries),
    ).sealed()


def assemble_evidence(
    specs: Sequence[AgentExecutionSpec],
    suite: BenchmarkSuite,
    sampling: SeededSample,
    assignment: TaskAssignment,
    source: SuiteSource,
    store: HarnessEvidenceStore,
) -> HarnessRunEvidence:
    """Assemble one replicate's evidence from the store, then verify it.

    ``specs`` are the task-bound specs that were run, one per assigned task.
    """
    _check_cohort(suite, source)
    if assignment.suite_digest != suite.digest:
        raise _refuse("suite-mismatch", f"assignment seed {assignment.seed} is for another suite")
    if assignment.sampling != sampling:
        raise _refuse("assignment-mismatch", "the assignment was not recorded under this sampling")
    by_task: dict[str, AgentExecutionSpec] = {}
    for spec in specs:
        binding = spec.binding
        if binding is None:
            raise _refuse("unbound-spec", "a spec without a task binding has no evidence")
        if binding.assignment_digest != assignment.digest:
            raise _refuse(
                "assignment-mismatch", f"task {binding.task_id}: spec is for another assignment"
            )
        if binding.task_id in by_task:
            raise _refuse("task-added", f"task {binding.task_id}: two specs")
        by_task[binding.task_id] = spec
        expected = store.root / "tasks" / f"{binding.position:06d}"
        if spec.output_uri is None or Path(spec.output_uri).resolve() != expected.resolve():
            raise _refuse(
                "output-mismatch",
                f"task {binding.task_id}: output_uri {spec.output_uri} "
                f"is not the store's {expected}",
            )
    missing = [task_id for task_id in assignment.task_ids if task_id not in by_task]
    if missing:
        raise _refuse("task-omitted", f"task {missing[0]} is assigned but has no spec")
    harnesses = {spec.harness_fingerprint for spec in specs}
    replicates = {spec.replicate for spec in specs}
    if len(harnesses) != 1 or len(replicates) != 1:
        raise _refuse(
            "attribution-mismatch", "specs of one replicate differ in harness or replicate"
        )
    evidence = _rebuild(
        store,
        suite=suite,
        assignment=assignment,
        sampling=sampling,
        harness_fingerprint=harnesses.pop(),
        replicate=replicates.pop(),
    )
    verify_run_evidence(evidence, suite, source, store)
    return evidence


def verify_run_evidence(
    evidence: HarnessRunEvidence,
    suite: BenchmarkSuite,
    source: SuiteSource,
    store: HarnessEvidenceStore,
) -> None:
    """The one verification: rebuild every fact from suite, source and store; compare.

    Raises :class:`EvidenceError` with a stable reason naming task, attempt and file.
    """
    if evidence.digest != evidence.content_digest():
        raise _refuse("digest-mismatch", "the evidence digest is not its contents'")
    _check_cohort(suite, source)
    if evidence.suite_digest != suite.digest or evidence.suite_name != suite.name:
        raise _refuse(
            "suite-mismatch",
            f"evidence is for suite {evidence.suite_name} {evidence.suite_digest}, "
            f"not {suite.name} {suite.digest}",
        )
    assignment = record_assignment(suite, evidence.sampling, seed=evidence.seed)
    if assignment.digest != evidence.assignment_digest:
        raise _refuse("assignment-mismatch", f"seed {evidence.seed}: assignment digest differs")
    listed = [entry.task_id for entry in evidence.entries]
    assigned = set(assignment.task_ids)
    for task_id in listed:
        if task_id not in assigned:
            raise _refuse("task-added", f"task {task_id} is in the evidence but not assigned")
    for task_id in assignment.task_ids:
        if task_id not in listed:
            raise _refuse("task-omitted", f"task {task_id} is assigned but not in the evidence")
    if listed != list(assignment.task_ids) or any(
        entry.position != i for i, entry in enumerate(evidence.entries)
    ):
        raise _refuse("task-list-mismatch", "evidence entries are not in assignment order")
    for entry in evidence.entries:
        if not entry.attempts:
            raise _refuse("no-attempts", f"task {entry.task_id}: the entry lists no attempts")
    # Which attempts exist is compared before any is rebuilt: a deleted, added or
    # quarantined attempt is named as such, not by what rebuilding it would find.
    _check_quarantine(store, assignment)
    for entry in evidence.entries:
        _compare_attempt_numbers(
            entry.task_id,
            [a.attempt for a in entry.attempts],
            [a.number for a in store.attempts(entry.position)],
        )
    rebuilt = _rebuild(
        store,
        suite=suite,
        assignment=assignment,
        sampling=evidence.sampling,
        harness_fingerprint=evidence.harness_fingerprint,
        replicate=evidence.replicate,
    )
    for claimed, actual in zip(evidence.entries, rebuilt.entries, strict=True):
        _compare_entry(claimed, actual)
    if evidence.model != rebuilt.model:
        raise _refuse("model-mismatch", "evidence names another model than its attempts")
    if evidence.digest != rebuilt.digest:
        raise _refuse("digest-mismatch", "the evidence is not what the suite and store rebuild")


def _compare_attempt_numbers(
    task: str, claimed_numbers: list[int], actual_numbers: list[int]
) -> None:
    for number in actual_numbers:
        if number not in claimed_numbers:
            raise _refuse(
                "attempt-omitted",
                f"task {task} attempt {number:03d} is in the store but not in the evidence",
            )
    for number in claimed_numbers:
        if number not in actual_numbers:
            raise _refuse(
                "attempt-missing",
                f"task {task} attempt {number:03d} is in the evidence but not in the store",
            )


def _compare_entry(claimed: EvidenceEntry, actual: EvidenceEntry) -> None:
    task = claimed.task_id
    _compare_attempt_numbers(
        task, [a.attempt for a in claimed.attempts], [a.attempt for a in actual.attempts]
    )
    for mine, theirs in zip(claimed.attempts, actual.attempts, strict=True):
        if mine != theirs:
            raise _refuse(
                "digest-mismatch",
                f"task {task} attempt {mine.attempt:03d}: evidence "
                "does not match the stored attempt",
            )
    if claimed != actual:
        raise _refuse("digest-mismatch", f"task {task}: entry does not match the store")
