"""The fast paths of evidence handling say exactly what the plain ones say.

Assembly, publishing and loading serialise a run a batch at a time, remember the
evidence's content digest, and share pydantic's fields-set between records; each is
checked here against the plain computation it stands for.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from xaytune.core.canonical import canonical_bytes, fingerprint
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence import _records as _evidence_records
from xaytune.harness.evidence.attempt import record_bytes
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.publish import (
    load_published,
    publish_evidence,
    statement_chunks,
    statement_for,
)


@pytest.fixture
def small_batches(monkeypatch):
    # Several batches over a 20-task run, a last one short.
    monkeypatch.setattr(_evidence_records, "_BATCH", 3)


@pytest.mark.usefixtures("small_batches")
def test_canonical_chunks_are_the_canonical_bytes_of_the_dump(verified_run):
    evidence = verified_run.evidence
    dump = evidence.model_dump(mode="json", by_alias=True)
    assert b"".join(evidence.canonical_chunks()) == canonical_bytes(dump)
    del dump["digest"]
    assert b"".join(evidence.canonical_chunks(digest=False)) == canonical_bytes(dump)
    assert evidence.content_digest() == fingerprint(dump)


@pytest.mark.usefixtures("small_batches")
def test_statement_chunks_are_the_canonical_statement(verified_run):
    evidence = verified_run.evidence
    expected = canonical_bytes(statement_for(evidence)) + b"\n"
    assert b"".join(statement_chunks(evidence)) == expected
    subject = publish_evidence(evidence, verified_run.store)
    with open(subject.path, "rb") as handle:
        assert handle.read() == expected
    assert load_published(subject) == evidence


def test_content_digest_is_recomputed_for_a_copy_with_other_contents(verified_run):
    evidence = verified_run.evidence
    assert evidence.content_digest() == evidence.digest
    edited = evidence.model_copy(update={"seed": evidence.seed + 1})
    assert edited.content_digest() != evidence.digest
    fewer = evidence.model_copy(update={"entries": evidence.entries[:-1]})
    assert fewer.content_digest() != evidence.digest
    # The model's parameters are a dict: an edit in place is seen too.
    copy = evidence.model_copy(deep=True)
    assert copy.content_digest() == evidence.digest
    copy.model.parameters["seed"] = -1
    assert copy.content_digest() != evidence.digest
    with pytest.raises(EvidenceError) as caught:
        verified_run.verify(copy)
    assert caught.value.reason == "digest-mismatch"


def test_a_model_equal_in_python_but_not_in_json_is_not_the_rebuilt_one(verified_run):
    # 0.0 == False in Python, not in canonical JSON: verification compares the model
    # the evidence names with the rebuilt one as JSON, as the rebuilt digest did.
    evidence = verified_run.evidence
    assert evidence.model.parameters["latency_s"] == 0.0
    parameters = {**evidence.model.parameters, "latency_s": False}
    model = evidence.model.model_copy(update={"parameters": parameters})
    forged = evidence.model_copy(update={"model": model}).sealed()
    assert forged.model == evidence.model and forged.digest != evidence.digest
    with pytest.raises(EvidenceError) as caught:
        verified_run.verify(forged)
    assert caught.value.reason == "digest-mismatch"


def test_records_built_in_bulk_share_a_fields_set_and_copies_do_not(verified_run):
    entries = verified_run.evidence.entries
    first, second = entries[0], entries[1]
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    edited = first.model_copy(update={"task_id": "other"})
    assert edited.__pydantic_fields_set__ is not first.__pydantic_fields_set__
    assert edited.model_fields_set == first.model_fields_set == second.model_fields_set
    with pytest.raises(ValueError, match="frozen"):
        first.task_id = "x"  # type: ignore[misc]
    assert "x" not in first.__pydantic_fields_set__


def test_attempt_record_bytes_are_its_canonical_bytes(verified_run):
    path = verified_run.attempt_file(0)
    raw = AttemptParts.of(path.read_bytes(), str(path)).record
    record = json.loads(raw)
    assert raw == canonical_bytes(record) + b"\n"
    rebuilt = record_bytes(
        record["attempt"], record["attribution"], canonical_bytes(record["model"])
    )
    assert rebuilt == raw


def test_a_statement_not_in_the_published_layout_is_parsed_whole_and_refused(verified_run):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    with open(subject.path, "rb") as handle:
        statement = json.loads(handle.read())
    # The same statement, pretty-printed: valid JSON, the same facts, not the bytes.
    with open(subject.path, "w") as handle:
        json.dump(statement, handle, indent=1)
    with pytest.raises(EvidenceError) as caught:
        load_published(subject)
    assert caught.value.reason == "subject-tampered"


def test_verification_refuses_what_the_store_does_not_support_before_a_claim(verified_run):
    # Verification compares entry by entry as it rebuilds, yet reports as when it
    # compared the whole rebuilt evidence: a store fault anywhere comes first.
    evidence = verified_run.evidence
    entries = list(evidence.entries)
    entries[3] = entries[3].model_copy(update={"spec_fingerprint": "sha256:" + "0" * 64})
    forged = evidence.model_copy(update={"entries": tuple(entries)}).sealed()
    with pytest.raises(EvidenceError) as caught:
        verified_run.verify(forged)
    assert caught.value.reason == "digest-mismatch"
    # The last event loses its newline: it runs into the seal, a line no writer leaves.
    path = verified_run.attempt_file(7)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    assert parts.seal is not None and parts.events
    torn = (*parts.events[:-1], parts.events[-1][:-1])
    path.write_bytes(replace(parts, events=torn).join())
    with pytest.raises(EvidenceError) as caught:
        verified_run.verify(forged)
    assert caught.value.reason == "chain-broken"
    assert "attempt 001" in str(caught.value) and str(path) in str(caught.value)


def test_a_spec_keeps_the_bytes_its_fingerprint_covers(verified_run):
    spec = verified_run.specs()[0]
    dump = spec.model_dump(mode="json", by_alias=True, exclude={"output_uri", "fingerprint"})
    assert spec.canonical == canonical_bytes(dump)
    assert fingerprint(dump) == spec.fingerprint
    # Read back only to be checked, a spec does not keep them; it serialises them again.
    checked = type(spec).model_validate_json(spec.canonical, context={"keep_canonical": False})
    assert checked.canonical == spec.canonical and checked.fingerprint == spec.fingerprint
