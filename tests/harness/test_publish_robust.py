"""Publishing and loading refuse bad input with a typed reason, never a traceback,
and leave nothing half-written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _fixtures_run import refused

from xaytune.harness.evidence import HarnessEvidenceStore
from xaytune.harness.evidence._io import atomic_write_chunks
from xaytune.harness.evidence.publish import load_published, publish_evidence
from xaytune.harness.evidence.store import STORE_MARKER

# Deeper than any recursion limit: json.loads raises RecursionError on it.
NESTED = b"[" * 100_000 + b"]" * 100_000


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_deeply_nested_predicate_value_is_refused(verified_run):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    path = Path(subject.path)
    raw = path.read_bytes()
    assert b'"detail":null' in raw
    path.write_bytes(raw.replace(b'"detail":null', b'"detail":' + NESTED, 1))
    error = refused(lambda: load_published(subject), "subject-tampered")
    assert str(path) in str(error)


def test_deeply_nested_statement_is_refused(verified_run):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    Path(subject.path).write_bytes(NESTED)
    error = refused(lambda: load_published(subject), "subject-tampered")
    assert subject.path in str(error)


def test_deeply_nested_store_marker_is_refused(verified_run):
    marker = verified_run.store.root / STORE_MARKER
    marker.write_bytes(NESTED)
    error = refused(verified_run.store.check_schema, "store-schema")
    assert str(marker) in str(error)


def _statement_with_value(path: Path, value: object) -> None:
    """Put ``value`` (which has no canonical JSON) into the first answer, written
    as plain sorted compact JSON (canonical_bytes would refuse it)."""
    statement = json.loads(path.read_bytes())
    statement["predicate"]["entries"][0]["attempts"][0]["outcome"]["answer"] = value
    path.write_text(json.dumps(statement, sort_keys=True, separators=(",", ":")) + "\n")


def _statement_with_seed(path: Path, value: object) -> None:
    statement = json.loads(path.read_bytes())
    statement["predicate"]["seed"] = value
    path.write_text(json.dumps(statement, sort_keys=True, separators=(",", ":")) + "\n")


@pytest.mark.parametrize(
    "edit",
    [
        lambda path: _statement_with_value(path, "\ud800"),
        lambda path: _statement_with_seed(path, 2**60),
    ],
    ids=["lone-surrogate", "unsafe-integer"],
)
def test_published_value_without_canonical_json_is_refused(verified_run, edit):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    edit(Path(subject.path))
    error = refused(lambda: load_published(subject), "subject-tampered")
    assert subject.path in str(error)


def test_subject_naming_another_store_is_refused(verified_run, partial_run):
    subject = publish_evidence(verified_run.evidence, verified_run.store)
    elsewhere = subject.model_copy(update={"store_root": str(partial_run.store.root)})
    error = refused(lambda: load_published(elsewhere), "subject-tampered")
    assert subject.path in str(error)
    # The same store named another way (relative, with a dot) still loads.
    relative = os.path.relpath(verified_run.store.root / ".")
    assert load_published(subject.model_copy(update={"store_root": relative}))


def test_published_path_that_is_a_file_is_refused(verified_run):
    published = verified_run.store.published_dir
    published.write_bytes(b"not a directory\n")
    error = refused(
        lambda: publish_evidence(verified_run.evidence, verified_run.store), "publish-failed"
    )
    assert str(published) in str(error)
    assert published.read_bytes() == b"not a directory\n"


def test_publish_target_that_is_a_directory_is_refused(verified_run):
    store = verified_run.store
    target = store.published_dir / f"{verified_run.evidence.digest[7:]}.intoto.json"
    target.mkdir(parents=True)
    error = refused(lambda: publish_evidence(verified_run.evidence, store), "publish-failed")
    assert str(target) in str(error)
    assert _files(store.published_dir) == [target.name]


def test_symlinked_published_directory_is_refused(verified_run, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    verified_run.store.published_dir.symlink_to(outside, target_is_directory=True)
    refused(lambda: publish_evidence(verified_run.evidence, verified_run.store), "publish-failed")
    assert _files(outside) == []


@pytest.mark.parametrize("exists", [True, False], ids=["to-a-file", "dangling"])
def test_symlinked_publish_target_is_refused(verified_run, tmp_path, exists):
    store = verified_run.store
    outside = tmp_path / "outside.json"
    if exists:
        outside.write_bytes(b"{}\n")
    target = store.published_dir / f"{verified_run.evidence.digest[7:]}.intoto.json"
    target.parent.mkdir()
    target.symlink_to(outside)
    error = refused(lambda: publish_evidence(verified_run.evidence, store), "publish-failed")
    assert str(target) in str(error)
    assert target.is_symlink()
    assert outside.read_bytes() == b"{}\n" if exists else not outside.exists()
    assert _files(store.published_dir) == [target.name]


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_forged_evidence_is_refused_before_anything_is_written(verified_run):
    evidence = verified_run.evidence
    attempt = evidence.entries[0].attempts[0].model_copy(update={"record_digest": 12345})
    entry = evidence.entries[0].model_copy(update={"attempts": (attempt,)})
    forged = evidence.model_copy(update={"entries": (entry, *evidence.entries[1:])}).sealed()
    refused(lambda: publish_evidence(forged, verified_run.store), "digest-mismatch")
    published = verified_run.store.published_dir
    assert not published.exists() or _files(published) == []


class _Interrupted(Exception):
    pass


@pytest.mark.parametrize("error", [_Interrupted, KeyboardInterrupt])
def test_failed_atomic_write_leaves_no_temp_file(tmp_path, error):
    target = tmp_path / "out.json"
    target.write_bytes(b"before\n")

    def chunks():
        yield b"x" * (2 << 20)  # past the first flush: the temp file holds bytes
        raise error

    with pytest.raises(error):
        atomic_write_chunks(target, chunks(), durable=False)
    assert _files(tmp_path) == ["out.json"]
    assert target.read_bytes() == b"before\n"


def test_failed_publish_leaves_no_temp_file(verified_run, monkeypatch):
    import xaytune.harness.evidence.publish as publish

    def failing(evidence):
        yield b"{"
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(publish, "statement_chunks", failing)
    store: HarnessEvidenceStore = verified_run.store
    refused(lambda: publish_evidence(verified_run.evidence, store), "publish-failed")
    assert _files(store.published_dir) == []
