"""A run's evidence: assembled from the store, verified against suite and store.

``HarnessRunEvidence`` records every attempt instance of each assigned task. An
entry is ``attested`` (exactly one attempt sealed complete, verifying) or
``no-attested-result`` (every attempt sealed partial, verifying: the outcome is
absent, the spend is kept). A false claim of a complete outcome is refused, never
downgraded. :func:`verify_run_evidence` is the one verification: it rebuilds every
fact from the suite, the source and the store, not from the evidence object.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import (
    BenchmarkSuite,
    SeededSample,
    SuiteSource,
    TaskAssignment,
    record_assignment,
)
from xaytune.core.errors import FingerprintError, SuiteError
from xaytune.core.exact import exactly_typed
from xaytune.harness.evidence._rebuild import Rebuild, check_quarantine, compare_attempt_numbers
from xaytune.harness.evidence._records import (
    EVIDENCE_SCHEMA,
    AttemptEvidence,
    EvidenceEntry,
    HarnessRunEvidence,
)
from xaytune.harness.evidence.rebuild_attempt import refuse
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.harness.spec import AgentExecutionSpec

__all__ = [
    "EVIDENCE_SCHEMA",
    "AttemptEvidence",
    "EvidenceEntry",
    "HarnessEvidenceStore",
    "HarnessRunEvidence",
    "assemble_evidence",
    "verify_run_evidence",
]


def _check_cohort(suite: BenchmarkSuite, source: SuiteSource) -> None:
    if source.suite.digest != suite.digest:
        raise refuse(
            "suite-mismatch",
            f"suite {suite.name} {suite.digest} is not the source's {source.digest}",
        )


def _rebuild(
    store: HarnessEvidenceStore,
    *,
    suite: BenchmarkSuite,
    assignment: TaskAssignment,
    sampling: SeededSample,
    harness_fingerprint: str,
    replicate: int,
    intent: str | None,
) -> HarnessRunEvidence:
    """The whole evidence the store supports, sealed."""
    rebuild = Rebuild(
        store,
        suite=suite,
        assignment=assignment,
        harness_fingerprint=harness_fingerprint,
        replicate=replicate,
        intent=intent,
    )
    entries = tuple(rebuild.entries())
    assert rebuild.model is not None
    return HarnessRunEvidence(
        suite_name=suite.name,
        suite_digest=suite.digest,
        sampling=sampling,
        assignment_digest=assignment.digest,
        seed=assignment.seed,
        replicate=replicate,
        harness_fingerprint=harness_fingerprint,
        model=rebuild.model,
        intent=intent,
        entries=entries,
    ).sealed()


def assemble_evidence(
    specs: Sequence[AgentExecutionSpec],
    suite: BenchmarkSuite,
    sampling: SeededSample,
    assignment: TaskAssignment,
    source: SuiteSource,
    store: HarnessEvidenceStore,
    *,
    intent: str | None = None,
) -> HarnessRunEvidence:
    """Assemble one replicate's evidence from the store, then verify it.

    ``specs`` are the task-bound specs that were run, one per assigned task;
    ``intent`` the digest of the run's intent record every attempt record carries
    (None outside an experiment).
    """
    _check_cohort(suite, source)
    if assignment.suite_digest != suite.digest:
        raise refuse("suite-mismatch", f"assignment seed {assignment.seed} is for another suite")
    if assignment.sampling != sampling:
        raise refuse("assignment-mismatch", "the assignment was not recorded under this sampling")
    by_task: dict[str, AgentExecutionSpec] = {}
    for spec in specs:
        binding = spec.binding
        if binding is None:
            raise refuse("unbound-spec", "a spec without a task binding has no evidence")
        if binding.assignment_digest != assignment.digest:
            raise refuse(
                "assignment-mismatch", f"task {binding.task_id}: spec is for another assignment"
            )
        if binding.task_id in by_task:
            raise refuse("task-added", f"task {binding.task_id}: two specs")
        by_task[binding.task_id] = spec
        expected = store.root / "tasks" / f"{binding.position:06d}"
        if spec.output_uri is None or (
            spec.output_uri != str(expected)
            and Path(spec.output_uri).resolve() != expected.resolve()
        ):
            raise refuse(
                "output-mismatch",
                f"task {binding.task_id}: output_uri {spec.output_uri} "
                f"is not the store's {expected}",
            )
    missing = [task_id for task_id in assignment.task_ids if task_id not in by_task]
    if missing:
        raise refuse("task-omitted", f"task {missing[0]} is assigned but has no spec")
    harnesses = {spec.harness_fingerprint for spec in specs}
    replicates = {spec.replicate for spec in specs}
    if len(harnesses) != 1 or len(replicates) != 1:
        raise refuse(
            "attribution-mismatch", "specs of one replicate differ in harness or replicate"
        )
    store.check_schema()
    evidence = _rebuild(
        store,
        suite=suite,
        assignment=assignment,
        sampling=sampling,
        harness_fingerprint=harnesses.pop(),
        replicate=replicates.pop(),
        intent=intent,
    )
    # The one verification; the facts it would rebuild from this store are the ones
    # just rebuilt, so it is told not to read them twice.
    _verify(evidence, suite, source, store, just_rebuilt=True)
    return evidence


def verify_run_evidence(
    evidence: HarnessRunEvidence,
    suite: BenchmarkSuite,
    source: SuiteSource,
    store: HarnessEvidenceStore,
) -> None:
    """The one verification: rebuild every fact from suite, source and store; compare.

    Every attempt record must carry the evidence's ``intent`` (the digest of the
    run's intent record; None outside an experiment). Raises :class:`EvidenceError`
    with a stable reason naming task, attempt and file.
    """
    _verify(evidence, suite, source, store, just_rebuilt=False)


def _verify(
    evidence: HarnessRunEvidence,
    suite: BenchmarkSuite,
    source: SuiteSource,
    store: HarnessEvidenceStore,
    *,
    just_rebuilt: bool,
) -> None:
    """:func:`verify_run_evidence`; ``just_rebuilt``: the caller (assemble_evidence)
    rebuilt and sealed this very object from this store and suite in this call, so
    only the claims against the source are left to check."""
    if not just_rebuilt:
        check_evidence_object(evidence)
    assignment = _check_claims(evidence, suite, source)
    if just_rebuilt:
        return
    store.check_schema()
    # Which attempts exist is compared before any is rebuilt: a deleted, added or
    # quarantined attempt is named as such, not by what rebuilding it would find.
    check_quarantine(store, assignment)
    entries = evidence.entries
    listings = store.attempt_listings(len(entries))  # (entry i is at position i)
    if not _one_attempt_each(entries, listings):
        for entry, stored in zip(entries, listings, strict=True):
            attempts = entry.attempts
            if len(stored) == len(attempts) == 1 and stored[0][0] == attempts[0].attempt:
                continue  # (one attempt, in both)
            compare_attempt_numbers(
                entry.task_id, [a.attempt for a in attempts], [number for number, _ in stored]
            )
    rebuild = Rebuild(
        store,
        suite=suite,
        assignment=assignment,
        harness_fingerprint=evidence.harness_fingerprint,
        replicate=evidence.replicate,
        quarantine_checked=True,
        listings=listings,
        intent=evidence.intent,
    )
    # Entry by entry, holding one rebuilt task at a time.
    rebuild.compare(evidence.entries)
    if evidence.model != rebuild.model:
        raise refuse("model-mismatch", "evidence names another model than its attempts")
    # Every other fact of the rebuilt evidence is this evidence's own, each compared
    # above (suite, assignment and seed in _check_claims, every typed entry here), so
    # its digest is this evidence's content digest, checked first, unless the models
    # are equal in Python but not in JSON (0.0 == False): compared as JSON.
    if canonical_bytes(evidence.model) != canonical_bytes(rebuild.model):
        raise refuse("digest-mismatch", "the evidence is not what the suite and store rebuild")


def check_evidence_object(evidence: HarnessRunEvidence) -> None:
    """Refuse (``digest-mismatch``) an evidence object that is not a record validation
    gives, or whose digest is not its contents'. Used by verification and publishing.

    Every comparison after this one compares values: a record made without
    validation (``model_copy(update=...)``, ``model_construct``) may hold a value
    of another type, a subclass or an extra value, which ``==`` on JSON values
    would not see.
    """
    if type(evidence) is not HarnessRunEvidence or not exactly_typed(evidence):
        raise refuse(
            "digest-mismatch",
            f"{_first_part_failing(evidence, _exact_record, 'the evidence object')} holds a "
            "value validation would refuse "
            "(of another type, a subclass or an extra value)",
        )
    try:
        content = evidence.content_digest()
    except (FingerprintError, ValueError, RecursionError):
        # A value with no canonical JSON (a lone surrogate, an integer beyond 2^53, a
        # value that is not JSON at all): which part holds it is found only now.
        whole = "the evidence's facts (suite, sampling, seed, model)"
        part = _first_part_failing(evidence, _canonical, whole)
        raise refuse("digest-mismatch", f"{part} has no canonical JSON form") from None
    if evidence.digest != content:
        raise refuse("digest-mismatch", "the evidence digest is not its contents'")


def _first_part_failing(
    evidence: HarnessRunEvidence, ok: Callable[[object], bool], whole: str
) -> str:
    """Which part of an evidence object fails ``ok``, for a message: its first such
    attempt, or entry, or else ``whole``. Reads what it is given warily: the object
    may not be a validated record."""
    entries = getattr(evidence, "entries", None)
    for entry in entries if type(entries) is tuple else ():
        if ok(entry):
            continue
        task = getattr(entry, "task_id", None)
        attempts = getattr(entry, "attempts", None)
        for index, attempt in enumerate(attempts if type(attempts) is tuple else (), 1):
            if not ok(attempt):
                number = getattr(attempt, "attempt", None)
                named = f"{number:03d}" if type(number) is int else f"#{index} ({number!r})"
                return f"task {task!s} attempt {named} (in the evidence)"
        return f"task {task!s} (its entry)"
    return whole


def _exact_record(value: Any) -> bool:
    return type(value) in (EvidenceEntry, AttemptEvidence) and exactly_typed(value)


def _canonical(record: Any) -> bool:
    try:
        canonical_bytes(record.model_dump(mode="json", by_alias=True))
    except (FingerprintError, ValueError, RecursionError):
        return False
    return True


def _check_claims(
    evidence: HarnessRunEvidence, suite: BenchmarkSuite, source: SuiteSource
) -> TaskAssignment:
    """What the evidence claims about its suite and its assignment (no store)."""
    _check_cohort(suite, source)
    if evidence.suite_digest != suite.digest or evidence.suite_name != suite.name:
        raise refuse(
            "suite-mismatch",
            f"evidence is for suite {evidence.suite_name} {evidence.suite_digest}, "
            f"not {suite.name} {suite.digest}",
        )
    try:
        assignment = record_assignment(suite, evidence.sampling, seed=evidence.seed)
    except (SuiteError, ValueError) as error:
        # A sampling or seed no assignment of this suite has (a count beyond the
        # suite, or one validation would refuse).
        raise refuse(
            "assignment-mismatch", f"seed {evidence.seed}: no assignment of this suite ({error})"
        ) from None
    if assignment.digest != evidence.assignment_digest:
        raise refuse("assignment-mismatch", f"seed {evidence.seed}: assignment digest differs")
    entries = evidence.entries
    listed = list(map(_TASK_ID, entries))  # (no loop in Python: one entry per task)
    if listed != list(assignment.task_ids):
        assigned = set(assignment.task_ids)
        for task_id in listed:
            if task_id not in assigned:
                raise refuse("task-added", f"task {task_id} is in the evidence but not assigned")
        listed_set = set(listed)
        for task_id in assignment.task_ids:
            if task_id not in listed_set:
                raise refuse("task-omitted", f"task {task_id} is assigned but not in the evidence")
        raise refuse("task-list-mismatch", "evidence entries are not in assignment order")
    if list(map(_POSITION, entries)) != list(range(len(entries))):
        raise refuse("task-list-mismatch", "evidence entries are not in assignment order")
    if not all(map(_ATTEMPTS, entries)):
        empty = next(entry for entry in entries if not entry.attempts)
        raise refuse("no-attempts", f"task {empty.task_id}: the entry lists no attempts")
    return assignment


_TASK_ID = attrgetter("task_id")
_POSITION = attrgetter("position")
_ATTEMPTS = attrgetter("attempts")
_FIRST = itemgetter(0)
_NUMBER = attrgetter("attempt")


def _one_attempt_each(
    entries: Sequence[EvidenceEntry], listings: Sequence[Sequence[tuple[int, str]]]
) -> bool:
    """Whether each task has one attempt, in the store and in the evidence, of the same
    number (most runs: checked for all tasks at once, with no loop in Python)."""
    attempts = list(map(_ATTEMPTS, entries))
    return set(map(len, listings)) == {1} == set(map(len, attempts)) and list(
        map(_FIRST, map(_FIRST, listings))
    ) == list(map(_NUMBER, map(_FIRST, attempts)))
