"""Publishing evidence as a content-addressed in-toto Statement v1."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from _fixtures_run import refused

from xaytune.core.canonical import canonical_bytes
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.publish import (
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    PublishedSubject,
    load_published,
    publish_evidence,
)


def hex_of(digest: str) -> str:
    assert digest.startswith("sha256:")
    return digest.removeprefix("sha256:")


def test_publishing_twice_yields_the_same_subject(verified_run):
    first = publish_evidence(verified_run.evidence, verified_run.store)
    path = Path(first.path)
    raw, stat = path.read_bytes(), path.stat()
    second = publish_evidence(verified_run.evidence, verified_run.store)
    assert second == first
    assert (second.digest, second.path) == (first.digest, first.path)
    assert path.read_bytes() == raw
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    assert first.kind == "agent_run_evidence"
    assert first.digest == verified_run.evidence.digest
    assert path.parent == verified_run.store.published_dir
    assert path.name == f"{hex_of(first.digest)}.intoto.json"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_reassembled_evidence_publishes_to_the_same_subject(verified_run):
    first = publish_evidence(verified_run.evidence, verified_run.store)
    second = publish_evidence(verified_run.assemble(), verified_run.store)
    assert second == first


def test_statement_is_in_toto_v1(verified_run):
    evidence = verified_run.evidence
    subject = publish_evidence(evidence, verified_run.store)
    statement = json.loads(Path(subject.path).read_bytes())
    assert set(statement) == {"_type", "subject", "predicateType", "predicate"}
    assert statement["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == PREDICATE_TYPE
    assert HarnessRunEvidence.model_validate(statement["predicate"]) == evidence
    subjects = statement["subject"]
    for item in subjects:
        assert set(item) == {"name", "digest"}
        assert isinstance(item["name"], str) and item["name"]
        assert set(item["digest"]) == {"sha256"}
        assert len(item["digest"]["sha256"]) == 64
        int(item["digest"]["sha256"], 16)
    names = [item["name"] for item in subjects]
    assert len(names) == len(set(names))
    assert subjects[0] == {
        "name": "agent_run_evidence",
        "digest": {"sha256": hex_of(evidence.digest)},
    }
    # One record and one seal per attempt instance, nothing else.
    attempts = sum(len(entry.attempts) for entry in evidence.entries)
    assert len(subjects) == 1 + 2 * attempts


def test_every_subject_digest_is_its_bytes(verified_run, partial_run):
    for run in (verified_run, partial_run):
        evidence = run.evidence
        subject = publish_evidence(evidence, run.store)
        raw = Path(subject.path).read_bytes()
        statement = json.loads(raw)
        head, *files = statement["subject"]
        # The evidence subject is the digest of the predicate's canonical contents.
        contents = dict(statement["predicate"])
        del contents["digest"]
        assert head["digest"]["sha256"] == hashlib.sha256(canonical_bytes(contents)).hexdigest()
        # Every other subject is a line of an attempt file: its record or its seal.
        for item in files:
            name, _, part = item["name"].partition("#")
            path = run.store.root / name
            assert path.is_file(), item["name"]
            parts = AttemptParts.of(path.read_bytes(), str(path))
            assert parts.seal is not None, item["name"]
            line = {"record": parts.record, "seal": parts.seal}[part]
            assert hashlib.sha256(line).hexdigest() == item["digest"]["sha256"]
        expected = {
            f"tasks/{e.position:06d}/{a.attempt:03d}.jsonl#{part}"
            for e in evidence.entries
            for a in e.attempts
            for part in ("record", "seal")
        }
        assert {item["name"] for item in files} == expected


def test_loaded_subject_is_the_evidence_and_verifies(verified_run):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    loaded = load_published(PublishedSubject.model_validate_json(subject.model_dump_json()))
    assert loaded == verified_run.evidence
    verified_run.verify(loaded)


def _edit_statement(path: Path, edit) -> None:
    statement = json.loads(path.read_bytes())
    edit(statement)
    path.write_bytes(canonical_bytes(statement) + b"\n")


def _forge_answer(statement):
    statement["predicate"]["entries"][0]["attempts"][0]["outcome"]["answer"] = "424242"


def _forge_answer_and_digest(statement):
    _forge_answer(statement)
    forged = HarnessRunEvidence.model_validate(statement["predicate"]).sealed()
    statement["predicate"] = forged.model_dump(mode="json", by_alias=True)


def _drop_subject(statement):
    statement["subject"].pop()


def _retarget_subject(statement):
    statement["subject"][1]["digest"]["sha256"] = "0" * 64


def _predicate_type(statement):
    statement["predicateType"] = "https://example.org/other/v1"


def _statement_type(statement):
    statement["_type"] = "https://in-toto.io/Statement/v0.1"


@pytest.mark.parametrize(
    "edit",
    [
        _forge_answer,
        _forge_answer_and_digest,
        _drop_subject,
        _retarget_subject,
        _predicate_type,
        _statement_type,
    ],
)
def test_published_record_edited_on_disk_is_refused_when_loaded(verified_run, edit):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    _edit_statement(Path(subject.path), edit)
    refused(lambda: load_published(subject), "subject-tampered")
    # Publishing again does not paper over the edit either.
    refused(lambda: publish_evidence(verified_run.evidence, verified_run.store), "subject-tampered")


@pytest.mark.parametrize("raw", [b"", b"not json\n", b"[]\n", b'{"_type": 1}\n'])
def test_published_record_replaced_on_disk_is_refused(verified_run, raw):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    Path(subject.path).write_bytes(raw)
    refused(lambda: load_published(subject), "subject-tampered")


def test_published_record_reformatted_is_refused(verified_run):
    """Same JSON, other bytes: a subject is its exact bytes."""
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    path = Path(subject.path)
    path.write_text(json.dumps(json.loads(path.read_bytes()), indent=2))
    refused(lambda: load_published(subject), "subject-tampered")


def test_subject_pointing_elsewhere_is_refused(verified_run, partial_run):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    other = publish_evidence(partial_run.evidence, partial_run.store)
    swapped = subject.model_copy(update={"path": other.path})
    refused(lambda: load_published(swapped), "subject-tampered")
    Path(subject.path).unlink()
    refused(lambda: load_published(subject), "subject-missing")


def test_unsealed_evidence_is_not_published(verified_run):
    edited = verified_run.evidence.model_copy(update={"seed": 7})
    refused(lambda: publish_evidence(edited, verified_run.store), "digest-mismatch")
    assert not verified_run.store.published_dir.exists() or not any(
        verified_run.store.published_dir.iterdir()
    )
