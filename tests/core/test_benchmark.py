"""Pinned suites on disk: SuiteSource verifies every digest and is the only door to references."""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from xaytune.core.domain.benchmark import (
    MANIFEST_FILE,
    REFERENCES_FILE,
    SUITE_SCHEMA,
    TASKS_FILE,
    Attachment,
    BenchmarkSuite,
    Reference,
    SuiteSource,
    Task,
    suite_digest,
)
from xaytune.core.errors import SuiteError

Build = Callable[..., Path]


def _refusal(path: Path) -> SuiteError:
    with pytest.raises(SuiteError) as caught:
        SuiteSource(path)
    assert "\n" not in str(caught.value)
    return caught.value


def _edit_byte(path: Path, index: int, new: int) -> bytes:
    """Set one byte of ``path``; return the original bytes."""
    original = path.read_bytes()
    edited = bytearray(original)
    edited[index] = new
    path.write_bytes(bytes(edited))
    return original


def _write_consistent_suite(directory: Path, tasks: bytes, references: bytes, count: int) -> None:
    """A suite whose manifest matches its files, whatever they hold (digests by hashlib)."""
    directory.mkdir()
    (directory / TASKS_FILE).write_bytes(tasks)
    (directory / REFERENCES_FILE).write_bytes(references)
    files = {
        TASKS_FILE: "sha256:" + hashlib.sha256(tasks).hexdigest(),
        REFERENCES_FILE: "sha256:" + hashlib.sha256(references).hexdigest(),
    }
    manifest = {
        "schema": SUITE_SCHEMA,
        "name": "crafted",
        "version": "1",
        "task_count": count,
        "files": files,
        "digest": suite_digest(name="crafted", version="1", task_count=count, files=files),
    }
    (directory / MANIFEST_FILE).write_text(json.dumps(manifest))


# --- loading ------------------------------------------------------------------------------


def test_a_built_suite_loads_with_its_tasks_and_digest(build: Build, suites: Any):
    source = SuiteSource(build())
    suite = source.suite
    assert isinstance(suite, BenchmarkSuite)
    assert (suite.name, suite.version) == ("tiny", "1")
    assert suite.task_ids == tuple(suites.answers)
    assert suite.digest == source.digest == source.manifest.digest
    assert suite.digest.startswith("sha256:") and len(suite.digest) == 71
    assert suite.task("t02").input == {"question": "What is t02?"}
    assert "t03" in suite and "t99" not in suite


def test_the_suite_digest_pins_name_version_and_content(build: Build, suites: Any):
    base = SuiteSource(build()).digest
    assert SuiteSource(build()).digest == base  # same facts, same digest
    assert SuiteSource(build(version="2")).digest != base
    assert SuiteSource(build(name="other")).digest != base
    changed = suites.reference_records({**suites.answers, "t01": "ANSWER-changed"})
    assert SuiteSource(build(references=changed)).digest != base
    reworded = suites.task_records()
    reworded[0] = {**reworded[0], "input": {"question": "What is t01 ?"}}
    assert SuiteSource(build(tasks=reworded)).digest != base


# --- one-byte edits ----------------------------------------------------------------------


@pytest.mark.parametrize("file", [TASKS_FILE, REFERENCES_FILE])
def test_every_one_byte_edit_of_a_data_file_is_refused_naming_the_file(
    build: Build, suites: Any, file: str
):
    two = {"t1": "A1", "t2": "A2"}  # small files: every byte is tried
    directory = build(tasks=suites.task_records(two), references=suites.reference_records(two))
    path = directory / file
    size = len(path.read_bytes())
    for index in range(size):
        original = _edit_byte(path, index, path.read_bytes()[index] ^ 0x01)
        error = _refusal(directory)
        assert error.reason == "digest-mismatch", index
        assert file in str(error)
        path.write_bytes(original)
    SuiteSource(directory)  # restored: loads again


@pytest.mark.parametrize("file", [TASKS_FILE, REFERENCES_FILE])
def test_appending_one_byte_to_a_data_file_is_refused(build: Build, file: str):
    directory = build()
    with (directory / file).open("ab") as handle:
        handle.write(b"\n")
    error = _refusal(directory)
    assert error.reason == "digest-mismatch"
    assert file in str(error)


@pytest.mark.parametrize(
    ("field", "old", "new"),
    [
        ("version", '"version":"1"', '"version":"2"'),
        ("name", '"name":"tiny"', '"name":"tinY"'),
        ("task_count", '"task_count":4', '"task_count":5'),
    ],
)
def test_a_one_byte_edit_of_a_manifest_fact_is_a_digest_mismatch(
    build: Build, field: str, old: str, new: str
):
    manifest = build() / MANIFEST_FILE
    text = manifest.read_text()
    assert text.count(old) == 1, field
    manifest.write_text(text.replace(old, new))
    error = _refusal(manifest.parent)
    assert error.reason == "digest-mismatch"
    assert MANIFEST_FILE in str(error)


@pytest.mark.parametrize("key", ["digest", "tasks.jsonl", "references.jsonl"])
def test_a_one_byte_edit_of_a_manifest_digest_is_a_digest_mismatch(build: Build, key: str):
    manifest = build() / MANIFEST_FILE
    text = manifest.read_text()
    start = text.index(f'"{key}":"sha256:') + len(f'"{key}":"sha256:')
    _edit_byte(manifest, start, ord("0") if text[start] != "0" else ord("1"))
    error = _refusal(manifest.parent)
    assert error.reason == "digest-mismatch"
    assert MANIFEST_FILE in str(error)


def test_every_one_byte_edit_of_the_manifest_is_refused(build: Build):
    # A byte in a fact or a digest is a digest mismatch; a byte that breaks the JSON
    # or a key is a bad manifest. No single-byte edit loads.
    directory = build()
    manifest = directory / MANIFEST_FILE
    reasons = set()
    for index in range(len(manifest.read_bytes())):
        original = _edit_byte(manifest, index, manifest.read_bytes()[index] ^ 0x01)
        error = _refusal(directory)
        assert error.reason in {"digest-mismatch", "bad-manifest"}, index
        assert MANIFEST_FILE in str(error)
        reasons.add(error.reason)
        manifest.write_bytes(original)
    assert reasons == {"digest-mismatch", "bad-manifest"}


def test_a_reference_edit_after_open_is_refused_when_read(build: Build):
    directory = build()
    source = SuiteSource(directory)
    path = directory / REFERENCES_FILE
    _edit_byte(path, 5, path.read_bytes()[5] ^ 0x01)
    with pytest.raises(SuiteError) as caught:
        source.reference("t01")
    assert caught.value.reason == "digest-mismatch"
    assert REFERENCES_FILE in str(caught.value)


# --- missing and malformed -----------------------------------------------------------------


@pytest.mark.parametrize("file", [MANIFEST_FILE, TASKS_FILE, REFERENCES_FILE])
def test_a_missing_file_is_refused_naming_it(build: Build, file: str):
    directory = build()
    (directory / file).unlink()
    error = _refusal(directory)
    assert error.reason == "suite-missing"
    assert file in str(error)


def test_a_missing_directory_is_refused(tmp_path: Path):
    assert _refusal(tmp_path / "nowhere").reason == "suite-missing"


def test_a_manifest_listing_other_files_is_refused(build: Build):
    manifest = build() / MANIFEST_FILE
    facts = json.loads(manifest.read_text())
    facts["files"]["extra.jsonl"] = facts["files"][TASKS_FILE]
    manifest.write_text(json.dumps(facts))
    assert _refusal(manifest.parent).reason == "bad-manifest"


def test_a_manifest_of_another_schema_is_refused(build: Build):
    manifest = build() / MANIFEST_FILE
    manifest.write_text(manifest.read_text().replace(SUITE_SCHEMA, "xaytune.suite/v2"))
    assert _refusal(manifest.parent).reason == "bad-manifest"


def test_a_task_count_that_is_not_the_files_is_refused(tmp_path: Path):
    tasks = b'{"id":"a","input":{}}\n{"id":"b","input":{}}\n'
    references = b'{"answer":"1","id":"a"}\n{"answer":"2","id":"b"}\n'
    _write_consistent_suite(tmp_path / "s", tasks, references, count=3)
    assert _refusal(tmp_path / "s").reason == "task-count-mismatch"


def test_a_pinned_tasks_file_with_a_traversal_id_is_refused(tmp_path: Path):
    tasks = b'{"id":"../x","input":{}}\n'
    _write_consistent_suite(tmp_path / "s", tasks, b'{"answer":"1","id":"../x"}\n', count=1)
    error = _refusal(tmp_path / "s")
    assert error.reason == "bad-record"
    assert TASKS_FILE in str(error) and "line 1" in str(error)


def test_a_pinned_tasks_file_with_a_duplicate_id_is_refused(tmp_path: Path):
    tasks = b'{"id":"a","input":{}}\n{"id":"a","input":{}}\n'
    references = b'{"answer":"1","id":"a"}\n'
    _write_consistent_suite(tmp_path / "s", tasks, references, count=2)
    assert _refusal(tmp_path / "s").reason == "duplicate-task"


def test_references_that_do_not_cover_the_tasks_are_refused(tmp_path: Path):
    tasks = b'{"id":"a","input":{}}\n{"id":"b","input":{}}\n'
    _write_consistent_suite(tmp_path / "s", tasks, b'{"answer":"1","id":"a"}\n', count=2)
    source = SuiteSource(tmp_path / "s")
    with pytest.raises(SuiteError) as caught:
        source.reference("a")
    assert caught.value.reason == "reference-mismatch"


# --- the public part and the only door ---------------------------------------------------


def test_the_benchmark_suite_holds_no_reference(build: Build, suites: Any):
    directory = build()
    source = SuiteSource(directory)
    source.reference_strings()  # references loaded: still nothing reaches the suite
    suite = source.suite
    public = [
        suite.model_dump_json(),
        repr(suite),
        str(suite.__pydantic_private__),
        (directory / TASKS_FILE).read_text(),
    ]
    pickled = pickle.dumps(suite)
    for answer in suites.answers.values():
        for text in public:
            assert answer not in text
        assert answer.encode() not in pickled
    assert set(BenchmarkSuite.model_fields) == {"name", "version", "digest", "tasks"}
    # An agent benchmark's public parts (later user turns, declared tools, environment).
    agent = {"turns", "tools", "environment"}
    assert set(Task.model_fields) == {"id", "input", "attachments", "metadata", *agent}


def test_suite_source_reference_is_the_only_door(build: Build, suites: Any):
    source = SuiteSource(build())
    for task_id, answer in suites.answers.items():
        reference = source.reference(task_id)
        assert isinstance(reference, Reference)
        assert reference.answer == answer
    assert set(source.reference_strings()) == set(suites.answers.values())
    with pytest.raises(SuiteError) as caught:
        source.reference("t99")
    assert caught.value.reason == "unknown-task"
    # Nothing reachable from the public suite leads back to the source.
    assert not any(isinstance(v, SuiteSource) for v in vars(source.suite).values())


def test_a_task_cannot_carry_its_answer_in_the_public_file():
    with pytest.raises(ValueError):  # extra="forbid": a pydantic ValidationError
        Task.model_validate({"id": "a", "input": {}, "answer": "4"})


def test_a_task_may_declare_attachments(build: Build, suites: Any):
    tasks = suites.task_records()
    tasks[1] = {
        **tasks[1],
        "attachments": [{"name": "table.csv", "media_type": "text/csv", "sha256": None}],
    }
    source = SuiteSource(build(tasks=tasks))
    (attachment,) = source.suite.task("t02").attachments
    assert attachment == Attachment(name="table.csv", media_type="text/csv")
    assert source.suite.task("t01").attachments == ()
    assert Attachment(name="x").media_type == "application/octet-stream"


def test_the_suite_model_refuses_duplicate_and_unknown_tasks(suites: Any):
    with pytest.raises(SuiteError) as caught:
        suites.memory(["a", "b", "a"])
    assert caught.value.reason == "duplicate-task"
    with pytest.raises(SuiteError) as caught:
        suites.memory(["a"]).task("b")
    assert caught.value.reason == "unknown-task"


def test_suite_records_are_frozen(build: Build):
    suite = SuiteSource(build()).suite
    with pytest.raises(ValueError):
        suite.tasks[0].id = "other"  # type: ignore[misc]
    with pytest.raises(ValueError):
        suite.digest = "sha256:" + "0" * 64  # type: ignore[misc]
