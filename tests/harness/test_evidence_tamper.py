"""Tampering with a verified run: each mutation is refused with its own reason word.

Every test starts from its own copy of a verified 20-task run, mutates it once, and
checks that ``verify_run_evidence`` (which rebuilds every fact from the suite, the
source and the store) refuses it with the mutation's reason. A fresh copy of the
untouched run still verifies afterwards.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from _fixtures_run import refused
from journal_edits import forget_seal

from xaytune.harness.evidence import EvidenceEntry, HarnessRunEvidence
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.publish import load_published, publish_evidence

POSITION = 5


@pytest.fixture
def untouched(verified_copies):
    """After the test: a fresh copy of the untouched run still verifies."""
    yield
    verified_copies().verify()


def parts_of(path: Path) -> AttemptParts:
    return AttemptParts.of(path.read_bytes(), str(path))


def read_events(path: Path) -> list[bytes]:
    """The event lines of a sealed attempt file (each with its newline)."""
    parts = parts_of(path)
    assert parts.seal is not None and not parts.tail
    return list(parts.events)


def write_events(path: Path, events: list[bytes]) -> None:
    """Rewrite the attempt file with ``events`` between its record and its seal."""
    path.write_bytes(replace(parts_of(path), events=tuple(events)).join())


def flip_byte(line: bytes, index: int | None = None) -> bytes:
    """``line`` with one byte flipped (the middle one by default), newline kept."""
    index = (len(line) - 1) // 2 if index is None else index
    assert line[index : index + 1] != b"\n"
    flipped = bytearray(line)
    flipped[index] ^= 0x01
    return bytes(flipped)


def reseal(evidence: HarnessRunEvidence, **update) -> HarnessRunEvidence:
    return evidence.model_copy(update=update).sealed()


# -- trajectories -------------------------------------------------------------------


@pytest.mark.usefixtures("untouched")
def test_flipped_byte_in_a_middle_event_breaks_the_chain(verified_run):
    path = verified_run.attempt_file(POSITION)
    lines = read_events(path)
    middle = len(lines) // 2
    assert 0 < middle < len(lines) - 1
    lines[middle] = flip_byte(lines[middle])
    write_events(path, lines)
    error = refused(verified_run.verify, "chain-broken")
    assert f"event {middle + 1}" in str(error)


@pytest.mark.usefixtures("untouched")
def test_flipped_byte_in_the_last_event_mismatches_the_sealed_head(verified_run):
    path = verified_run.attempt_file(POSITION)
    lines = read_events(path)
    lines[-1] = flip_byte(lines[-1])
    write_events(path, lines)
    refused(verified_run.verify, "chain-head-mismatch")


@pytest.mark.usefixtures("untouched")
@pytest.mark.parametrize("where", ["first", "last"])
def test_flipped_structural_byte_in_the_last_event_mismatches_the_sealed_head(verified_run, where):
    """A flip that also breaks the last line's JSON is still an edit against the seal."""
    path = verified_run.attempt_file(POSITION)
    lines = read_events(path)
    lines[-1] = flip_byte(lines[-1], 0 if where == "first" else len(lines[-1]) - 2)
    write_events(path, lines)
    # Flipping the first byte also breaks the line's own prefix: chain-broken names
    # the event that no longer follows; flipping the closing brace only breaks JSON.
    refused(verified_run.verify, "chain-broken" if where == "first" else "chain-head-mismatch")


@pytest.mark.usefixtures("untouched")
@pytest.mark.parametrize(
    ("line", "reason"), [("middle", "chain-broken"), ("last", "chain-head-mismatch")]
)
def test_flipped_high_bit_is_refused_not_crashed(verified_run, line, reason):
    """A flip that makes a line invalid UTF-8 is a refusal, not a UnicodeDecodeError."""
    path = verified_run.attempt_file(POSITION)
    lines = read_events(path)
    index = len(lines) // 2 if line == "middle" else -1
    raw = bytearray(lines[index])
    raw[len(raw) // 2] ^= 0x80
    lines[index] = bytes(raw)
    write_events(path, lines)
    refused(verified_run.verify, reason)


@pytest.mark.usefixtures("untouched")
def test_dropped_last_line_mismatches_the_sealed_head(verified_run):
    path = verified_run.attempt_file(POSITION)
    write_events(path, read_events(path)[:-1])
    refused(verified_run.verify, "chain-head-mismatch")


@pytest.mark.usefixtures("untouched")
def test_swapped_events_break_the_chain(verified_run):
    path = verified_run.attempt_file(POSITION)
    lines = read_events(path)
    lines[2], lines[3] = lines[3], lines[2]
    write_events(path, lines)
    refused(verified_run.verify, "chain-broken")


@pytest.mark.usefixtures("untouched")
def test_appended_fragment_on_a_sealed_attempt_is_torn(verified_run):
    """A torn last line is tolerated only for recovered attempts (see test_resume)."""
    path = verified_run.attempt_file(POSITION)
    parts = parts_of(path)
    assert parts.seal is not None and not parts.tail
    path.write_bytes(replace(parts, tail=b'{"prev":"sha256:00').join())
    refused(verified_run.verify, "trajectory-torn")


# -- attempts in the store ----------------------------------------------------------


@pytest.mark.usefixtures("untouched")
def test_deleted_attempt_file_is_missing(verified_run):
    verified_run.attempt_file(POSITION).unlink()
    error = refused(verified_run.verify, "attempt-missing")
    assert verified_run.evidence.entries[POSITION].task_id in str(error)


@pytest.mark.usefixtures("untouched")
@pytest.mark.parametrize("other", ["other-seed", "other-harness"])
def test_attempt_copied_in_from_another_run(verified_run, foreign_runs, other):
    foreign = foreign_runs[other]
    shutil.copyfile(foreign.attempt_file(POSITION), verified_run.attempt_file(POSITION, 2))
    # Without re-assembly the evidence no longer lists everything the store holds.
    refused(verified_run.verify, "attempt-omitted")
    # Re-assembled, the stranger is refused for what it is an attempt of.
    error = refused(verified_run.assemble, "attribution-mismatch")
    assert "attempt 002" in str(error)
    verified_run.attempt_file(POSITION, 2).unlink()
    verified_run.verify()


@pytest.mark.usefixtures("untouched")
def test_partial_seal_edited_to_complete_is_a_false_complete(partial_run, partial_position):
    entry = partial_run.evidence.entries[partial_position]
    assert entry.status == "no-attested-result"
    path = partial_run.attempt_file(partial_position)
    parts = parts_of(path)
    assert parts.seal is not None and b'"status":"partial"' in parts.seal
    edited = parts.seal.replace(b'"status":"partial"', b'"status":"complete"')
    path.write_bytes(replace(parts, seal=edited).join())
    refused(partial_run.verify, "false-complete")
    refused(partial_run.assemble, "false-complete")


@pytest.mark.usefixtures("untouched")
def test_partial_seal_edited_to_complete_with_an_outcome_is_a_false_complete(
    partial_run, partial_position
):
    path = partial_run.attempt_file(partial_position)
    parts = parts_of(path)
    assert parts.seal is not None
    data = json.loads(parts.seal)
    data.update(status="complete", outcome={"terminal": "answer", "answer": "7", "detail": None})
    edited = json.dumps(data, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(replace(parts, seal=edited).join())
    refused(partial_run.verify, "false-complete")


@pytest.mark.usefixtures("untouched")
def test_changed_seed_in_attempt_record_is_an_attribution_mismatch(verified_run):
    path = verified_run.attempt_file(POSITION)
    parts = parts_of(path)
    assert parts.record.count(b'"seed":101') == 2  # attribution and the model's parameters
    assert parts.record.count(b'"seed":101,"spec') == 1
    edited = parts.record.replace(b'"seed":101,"spec', b'"seed":102,"spec')
    path.write_bytes(replace(parts, record=edited).join())
    error = refused(verified_run.verify, "attribution-mismatch")
    assert "seed" in str(error)


@pytest.mark.usefixtures("untouched")
def test_attempt_left_open_is_refused(verified_run):
    path = verified_run.attempt_file(POSITION)
    parts = parts_of(path)
    assert parts.seal is not None
    path.write_bytes(replace(parts, seal=None).join())
    # Its seal was committed: a deleted seal, not a crash (the file is named).
    assert str(path) in str(refused(verified_run.verify, "seal-missing"))
    refused(verified_run.assemble, "seal-missing")
    forget_seal(path)  # as if the crash came before the commit
    refused(verified_run.verify, "open-attempt")
    refused(verified_run.assemble, "open-attempt")


@pytest.mark.usefixtures("untouched")
def test_quarantined_attempt_is_refused(verified_run):
    verified_run.store.quarantine(POSITION, 1, reason="operator: suspicious tool output")
    error = refused(verified_run.verify, "quarantined-attempt")
    assert "suspicious tool output" in str(error)
    refused(verified_run.assemble, "quarantined-attempt")


@pytest.mark.usefixtures("untouched")
def test_quarantine_interrupted_before_its_reason_is_still_refused(verified_run):
    target = verified_run.store.quarantine(POSITION, 1, reason="operator")
    reason = target.with_name(f"{POSITION:06d}-001.reason.json")
    reason.unlink()  # a crash between the move and the reason
    error = refused(verified_run.verify, "quarantined-attempt")
    assert reason.name in str(error)


# -- the evidence object ------------------------------------------------------------


@pytest.mark.usefixtures("untouched")
def test_removed_task_is_omitted(verified_run):
    evidence = verified_run.evidence
    omitted = reseal(evidence, entries=evidence.entries[:-1])
    assert omitted.digest == omitted.content_digest()
    error = refused(lambda: verified_run.verify(omitted), "task-omitted")
    assert evidence.entries[-1].task_id in str(error)


@pytest.mark.usefixtures("untouched")
def test_added_task_is_refused(verified_run):
    evidence = verified_run.evidence
    assigned = {entry.task_id for entry in evidence.entries}
    stranger = next(t.id for t in verified_run.suite.tasks if t.id not in assigned)
    extra = evidence.entries[0].model_copy(
        update={"task_id": stranger, "position": len(evidence.entries)}
    )
    added = reseal(evidence, entries=(*evidence.entries, extra))
    error = refused(lambda: verified_run.verify(added), "task-added")
    assert stranger in str(error)


@pytest.mark.usefixtures("untouched")
def test_duplicated_entry_is_refused(verified_run):
    evidence = verified_run.evidence
    doubled = reseal(evidence, entries=(*evidence.entries, evidence.entries[0]))
    refused(lambda: verified_run.verify(doubled), "task-list-mismatch")


@pytest.mark.usefixtures("untouched")
def test_entry_without_attempts_is_refused(verified_run):
    evidence = verified_run.evidence
    entries = list(evidence.entries)
    entries[POSITION] = entries[POSITION].model_copy(update={"attempts": ()})
    empty = reseal(evidence, entries=tuple(entries))
    error = refused(lambda: verified_run.verify(empty), "no-attempts")
    assert entries[POSITION].task_id in str(error)


@pytest.mark.usefixtures("untouched")
@pytest.mark.parametrize(
    ("field", "value"),
    [("suite_name", "arith-tools-renamed"), ("seed", 102), ("replicate", 1)],
)
def test_field_changed_without_resealing_is_a_digest_mismatch(verified_run, field, value):
    """An unsealed edit is named as such first, whatever else it would break."""
    edited = verified_run.evidence.model_copy(update={field: value})
    refused(lambda: verified_run.verify(edited), "digest-mismatch")


@pytest.mark.usefixtures("untouched")
def test_forged_answer_is_refused_sealed_or_not(verified_run):
    evidence = verified_run.evidence
    entry = evidence.entries[POSITION]
    attempt = entry.attempts[0]
    forged_attempt = attempt.model_copy(
        update={"outcome": attempt.outcome.model_copy(update={"answer": "424242"})}
    )
    entries = list(evidence.entries)
    entries[POSITION] = EvidenceEntry.model_validate(
        {**entry.model_dump(), "attempts": (forged_attempt.model_dump(),)}
    )
    unsealed = evidence.model_copy(update={"entries": tuple(entries)})
    refused(lambda: verified_run.verify(unsealed), "digest-mismatch")
    refused(lambda: verified_run.verify(unsealed.sealed()), "digest-mismatch")


@pytest.mark.usefixtures("untouched")
@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("suite_name", "arith-tools-renamed", "suite-mismatch"),
        ("suite_digest", "sha256:" + "0" * 64, "suite-mismatch"),
        ("seed", 102, "assignment-mismatch"),
        ("sampling", {"count": 19}, "assignment-mismatch"),
        ("assignment_digest", "sha256:" + "0" * 64, "assignment-mismatch"),
        ("replicate", 1, "attribution-mismatch"),
        ("harness_fingerprint", "sha256:" + "0" * 64, "attribution-mismatch"),
        (
            "model",
            {"provider": "xaytune-sim", "model": "other", "revision": "v1"},
            "model-mismatch",
        ),
    ],
)
def test_resealed_run_field_is_rebuilt_and_refused(verified_run, field, value, reason):
    """Every field is rebuilt from the suite and the store; resealing does not help."""
    evidence = verified_run.evidence
    data = evidence.model_dump(mode="json", by_alias=True)
    data[field] = value
    forged = HarnessRunEvidence.model_validate(data).sealed()
    refused(lambda: verified_run.verify(forged), reason)


@pytest.mark.usefixtures("untouched")
def test_published_subject_edited_on_disk_is_tampered(verified_run):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    path = Path(subject.path)
    statement = json.loads(path.read_bytes())
    statement["predicate"]["entries"][POSITION]["attempts"][0]["outcome"]["answer"] = "424242"
    path.write_bytes(json.dumps(statement, sort_keys=True, separators=(",", ":")).encode() + b"\n")
    refused(lambda: load_published(subject), "subject-tampered")
