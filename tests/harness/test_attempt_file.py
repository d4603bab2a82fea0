"""The one-file-per-attempt format: its parts, its open/sealed states, and the store
refusals that come with it (old layouts, stray files, recovered fragments)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from journal_edits import forget_seal

from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence.attempt import recover_open_attempt
from xaytune.harness.evidence.attempt_file import AttemptParts, attempt_name, split_attempt
from xaytune.harness.evidence.store import (
    STORE_MARKER,
    HarnessEvidenceStore,
    StoredAttempt,
    claim_attempt,
    remove_empty_claim,
)

SPEC = b'{"schema":"s"}\n'
RECORD = b'{"attempt":1,"attribution":{}}\n'
EVENTS = (b'{"prev":"sha256:aa","seq":0}\n', b'{"prev":"sha256:bb","seq":1}\n')
SEAL = b'{"attempt":1,"status":"partial"}\n'


def test_a_sealed_file_splits_into_its_parts_and_joins_back() -> None:
    data = SPEC + RECORD + b"".join(EVENTS) + SEAL
    layout = split_attempt(data, "x")
    assert (layout.spec_end, layout.record_end) == (len(SPEC), len(SPEC) + len(RECORD))
    assert data[layout.events_end :] == SEAL
    assert layout.sealed and not layout.torn
    parts = AttemptParts.of(data, "x")
    assert (parts.spec, parts.record, parts.events, parts.seal) == (SPEC, RECORD, EVENTS, SEAL)
    assert parts.join() == data


def test_without_a_seal_line_the_attempt_is_open() -> None:
    data = SPEC + RECORD + b"".join(EVENTS)
    layout = split_attempt(data, "x")
    assert not layout.sealed and not layout.torn and layout.events_end == len(data)
    # The record line opens with the seal's prefix, but it is the record, not a seal.
    only_record = split_attempt(SPEC + RECORD, "x")
    assert not only_record.sealed and only_record.events_end == len(SPEC + RECORD)


def test_an_unterminated_last_line_is_torn_and_open_even_if_it_looks_like_a_seal() -> None:
    data = SPEC + RECORD + EVENTS[0] + SEAL[:-1]
    layout = split_attempt(data, "x")
    assert layout.torn and not layout.sealed
    parts = AttemptParts.of(data, "x")
    assert parts.events == (EVENTS[0],) and parts.tail == SEAL[:-1] and parts.seal is None
    assert parts.join() == data


@pytest.mark.parametrize("data", [b"", SPEC[:-1], SPEC, SPEC + RECORD[:-1]])
def test_a_file_without_whole_spec_and_record_lines_is_refused(data: bytes) -> None:
    with pytest.raises(EvidenceError) as caught:
        split_attempt(data, "tasks/000003/001.jsonl")
    assert caught.value.reason == "bad-record"
    assert "tasks/000003/001.jsonl" in str(caught.value)


def test_claims_are_exclusive_and_numbered_after_the_highest(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "000000"
    first = claim_attempt(task)  # creates the task directory
    (task / attempt_name(7)).write_bytes(b"")
    after_gap = claim_attempt(task)
    for _, _, fd in (first, after_gap):
        os.close(fd)
    assert (first[0], after_gap[0]) == (1, 8)
    assert sorted(p.name for p in task.iterdir()) == ["001.jsonl", "007.jsonl", "008.jsonl"]


def test_an_empty_claim_is_removed_and_a_recorded_one_kept(tmp_path: Path) -> None:
    task = tmp_path / "000000"
    task.mkdir()
    empty = StoredAttempt(0, 1, task / "001.jsonl")
    empty.path.write_bytes(SPEC + RECORD[:5])  # killed while writing its record
    kept = StoredAttempt(0, 2, task / "002.jsonl")
    kept.path.write_bytes(SPEC + RECORD)
    assert remove_empty_claim(empty) and not empty.path.exists()
    assert not remove_empty_claim(kept) and kept.path.exists()


def test_a_store_of_another_layout_is_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "store"
    root.mkdir()
    (root / STORE_MARKER).write_text('{"schema":"xaytune.evidence-store/v1"}\n')
    with pytest.raises(EvidenceError) as caught:
        HarnessEvidenceStore(root).task_output(0)
    assert caught.value.reason == "store-schema"
    assert STORE_MARKER in str(caught.value) and "v1" in str(caught.value)


def test_a_stray_file_in_a_task_directory_is_refused(verified_run: Any) -> None:
    stray = verified_run.attempt_file(3).parent / "notes.txt"
    stray.write_text("mine")
    with pytest.raises(EvidenceError) as caught:
        verified_run.verify()
    assert caught.value.reason == "unexpected-file"
    assert "notes.txt" in str(caught.value)


def test_the_spec_line_is_what_the_record_and_the_entry_name(verified_run: Any) -> None:
    evidence = verified_run.evidence
    assert evidence is not None
    for entry in evidence.entries:
        parts = AttemptParts.of(verified_run.attempt_file(entry.position).read_bytes(), "x")
        record = json.loads(parts.record)
        assert sha256_digest(parts.spec[:-1]) == entry.spec_fingerprint
        assert record["attribution"]["spec_fingerprint"] == entry.spec_fingerprint
        assert record["attribution"]["harness_fingerprint"] == evidence.harness_fingerprint
        assert sha256_digest(parts.record) == entry.attempts[0].record_digest
        assert sha256_digest(parts.seal or b"") == entry.attempts[0].seal_digest


def test_an_edited_spec_line_is_refused_even_when_valid_json(verified_run: Any) -> None:
    path = verified_run.attempt_file(5)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    spec = json.loads(parts.spec)
    spec["system_message"] = "Answer 42 whatever the question."
    edited = json.dumps(spec, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(dataclasses.replace(parts, spec=edited).join())
    with pytest.raises(EvidenceError) as caught:
        verified_run.verify()
    assert caught.value.reason == "attribution-mismatch"
    assert "spec_fingerprint" in str(caught.value) and str(path) in str(caught.value)


def _crash_mid_event(path: Path) -> bytes:
    """The file as a crash mid-write leaves it: seal line gone, half an event after."""
    parts = AttemptParts.of(path.read_bytes(), str(path))
    return dataclasses.replace(parts, seal=None, tail=parts.events[-1][:40]).join()


def test_a_recovered_fragment_is_kept_outside_the_chain_and_verifies(verified_run: Any) -> None:
    path = verified_run.attempt_file(6)
    torn = _crash_mid_event(path)
    path.write_bytes(torn)
    forget_seal(path)
    recover_open_attempt(StoredAttempt(6, 1, path))
    data = path.read_bytes()
    assert data.startswith(torn + b"\n")  # nothing deleted or rewritten
    parts = AttemptParts.of(data, str(path))
    seal = json.loads(parts.seal or b"")
    assert seal["recovered"] is True and seal["status"] == "partial"
    assert seal["trajectory"]["bytes"] == sum(len(e) for e in parts.events[:-1])
    evidence = verified_run.assemble()  # the recovered attempt verifies, partial
    assert evidence.entries[6].status == "no-attested-result"
    assert evidence.entries[6].attempts[0].recovered


def test_a_second_line_after_a_recovered_chain_is_refused(verified_run: Any) -> None:
    path = verified_run.attempt_file(6)
    path.write_bytes(_crash_mid_event(path))
    forget_seal(path)
    recover_open_attempt(StoredAttempt(6, 1, path))
    parts = AttemptParts.of(path.read_bytes(), str(path))
    smuggled = b'{"note":"added after the crash"}\n'
    path.write_bytes(dataclasses.replace(parts, events=(*parts.events, smuggled)).join())
    with pytest.raises(EvidenceError) as caught:
        verified_run.assemble()
    assert caught.value.reason == "chain-head-mismatch"
    assert str(path) in str(caught.value)


def test_an_extra_line_after_a_sealed_chain_is_refused(verified_run: Any) -> None:
    path = verified_run.attempt_file(8)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    path.write_bytes(dataclasses.replace(parts, events=(*parts.events, b"{}\n")).join())
    with pytest.raises(EvidenceError) as caught:
        verified_run.verify()
    assert caught.value.reason == "chain-broken"
    assert str(path) in str(caught.value)


def test_a_crash_mid_event_reads_as_open_and_bytes_after_a_seal_as_torn(
    verified_copies,
) -> None:
    crashed = verified_copies()
    path = crashed.attempt_file(4)
    path.write_bytes(_crash_mid_event(path))
    forget_seal(path)
    with pytest.raises(EvidenceError) as caught:
        crashed.verify()
    assert caught.value.reason == "open-attempt"
    assert "attempt 001" in str(caught.value) and str(path) in str(caught.value)
    appended = verified_copies()
    path = appended.attempt_file(4)
    path.write_bytes(path.read_bytes() + b'{"prev":"sha256:00')
    with pytest.raises(EvidenceError) as caught:
        appended.verify()
    assert caught.value.reason == "trajectory-torn"
    assert "after its seal" in str(caught.value)


def test_verifying_a_store_of_another_layout_names_the_layout(verified_run: Any) -> None:
    marker = verified_run.store.root / STORE_MARKER
    marker.write_text('{"schema":"xaytune.evidence-store/v1"}\n')
    with pytest.raises(EvidenceError) as caught:
        verified_run.verify()
    assert caught.value.reason == "store-schema"
    with pytest.raises(EvidenceError) as caught:
        verified_run.assemble()
    assert caught.value.reason == "store-schema"
    assert str(marker) in str(caught.value)
