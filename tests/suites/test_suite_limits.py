"""Suite limits (issue 23): what the builder refuses, a loader refuses too, in one line.

Golden sizes are counted by hand: the canonical JSON of ``{"q": "x" * n}`` is
``{"q":"`` (6 bytes) + n + ``"}`` (2 bytes), so n = 999,992 is exactly the default
``MAX_TASK_INPUT_BYTES`` of 1,000,000.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from xaytune.core import limits
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import (
    MANIFEST_FILE,
    REFERENCES_FILE,
    SUITE_SCHEMA,
    TASKS_FILE,
    SuiteSource,
    suite_digest,
)
from xaytune.core.errors import SuiteError
from xaytune.suites import build_suite, build_suite_from_jsonl


def _refused(call: Any, *args: Any, **kwargs: Any) -> SuiteError:
    with pytest.raises(SuiteError) as caught:
        call(*args, **kwargs)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400
    return caught.value


def _nested(depth: int) -> Any:
    """A list nested ``depth`` deep, built without recursion."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _build(out: Path, task: dict[str, Any]) -> SuiteSource:
    return build_suite(
        out, name="s", version="1", tasks=[task], references=[{"id": task["id"], "answer": "1"}]
    )


def _write_suite(root: Path, task_lines: list[bytes]) -> Path:
    """A suite directory written by hand, with a manifest whose digests match."""
    root.mkdir()
    ids = [re.search(rb'"id":"([^"]+)"', line)[1].decode() for line in task_lines]  # type: ignore[index]
    files = {
        TASKS_FILE: b"".join(line + b"\n" for line in task_lines),
        REFERENCES_FILE: b"".join(
            canonical_bytes({"id": task_id, "answer": "1"}) + b"\n" for task_id in ids
        ),
    }
    digests = {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in files.items()}
    for name, data in files.items():
        (root / name).write_bytes(data)
    facts = {"name": "s", "version": "1", "task_count": len(ids), "files": digests}
    manifest = {"schema": SUITE_SCHEMA, **facts, "digest": suite_digest(**facts)}
    (root / MANIFEST_FILE).write_bytes(canonical_bytes(manifest))
    return root


# --- the Python entry ---------------------------------------------------------------


def test_metadata_at_the_depth_limit_builds_and_loads(tmp_path: Path):
    # The record is level 1, metadata level 2, 62 nested lists levels 3..64: exactly
    # MAX_JSON_DEPTH; one list more is refused.
    task = {"id": "a", "input": {"q": "x"}, "metadata": {"m": _nested(62)}}
    source = _build(tmp_path / "ok", task)
    assert SuiteSource(source.path).suite.task("a").metadata == {"m": _nested(62)}
    error = _refused(_build, tmp_path / "deep", {**task, "metadata": {"m": _nested(63)}})
    assert error.reason == "too-deep" and "task 'a'" in str(error)
    assert not (tmp_path / "deep").exists()


def test_python_metadata_nested_beyond_the_stack_is_refused_not_a_crash(tmp_path: Path):
    # Issue 23: RecursionError out of the builder.
    task = {"id": "a", "input": {"q": "x"}, "metadata": {"m": _nested(100_000)}}
    error = _refused(_build, tmp_path / "out", task)
    assert error.reason == "too-deep" and "task 'a'" in str(error)


def test_an_input_at_the_size_limit_builds_and_one_byte_more_is_refused(tmp_path: Path):
    at_limit = {"id": "a", "input": {"q": "x" * 999_992}}
    assert len(canonical_bytes(at_limit["input"])) == limits.MAX_TASK_INPUT_BYTES
    source = _build(tmp_path / "ok", at_limit)
    assert len(SuiteSource(source.path).suite.task("a").input["q"]) == 999_992
    error = _refused(_build, tmp_path / "big", {"id": "big", "input": {"q": "x" * 999_993}})
    assert error.reason == "too-large"
    assert "'big'" in str(error) and "MAX_TASK_INPUT_BYTES" in str(error)


def test_a_raised_input_limit_is_read_when_used(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_TASK_INPUT_BYTES", 2_000_000)
    _build(tmp_path / "ok", {"id": "a", "input": {"q": "x" * 1_500_000}})


@pytest.mark.parametrize(
    ("value", "reason"),
    [(2**60, "unsafe-integer"), (10**5000, "unsafe-integer"), (float("inf"), "non-finite")],
    ids=["2^60", "10^5000", "inf"],
)
def test_a_value_that_cannot_be_canonical_names_the_task(tmp_path: Path, value, reason):
    error = _refused(_build, tmp_path / "out", {"id": "t1", "input": {"q": value}})
    assert error.reason == reason and "task 't1'" in str(error)


def test_a_bad_id_quotes_at_most_80_characters(tmp_path: Path):
    error = _refused(_build, tmp_path / "out", {"id": "/" * 100_000, "input": {}})
    assert error.reason == "bad-id"
    assert "'" + "/" * 80 + "'... (100000 characters)" in str(error)


@pytest.mark.parametrize("version", ["1\udcff", "v" * 129, "1\x00"])
def test_a_version_that_is_not_short_printable_text_is_refused(tmp_path: Path, version):
    error = _refused(
        build_suite,
        tmp_path / "out",
        name="s",
        version=version,
        tasks=[{"id": "a", "input": {}}],
        references=[{"id": "a", "answer": "1"}],
    )
    assert error.reason == "bad-manifest"


# --- the JSONL source -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"id": "a", "input": {}, "answer": "1", "answer": "2"}', "bad-json"),
        ('{"id": "a", "input": {"q": NaN}, "answer": "1"}', "bad-json"),
        ('{"id": "a", "input": {"q": -Infinity}, "answer": "1"}', "bad-json"),
        ('{"id": "a", "input": {"q": 1e999}, "answer": "1"}', "out-of-range"),
        ('{"id": "a", "input": {"q": "\\udfff"}, "answer": "1"}', "not-text"),
        ('{"id": "a", "input": {"q": ' + "1" * 4_301 + '}, "answer": "1"}', "too-many-digits"),
        ('{"id": "a", "input": {}, "answer": "1", "metadata": ' + "[" * 65 + "]" * 65 + "}",
         "too-deep"),
    ],
)  # fmt: skip
def test_a_source_line_breaking_a_rule_is_refused_naming_the_line(tmp_path: Path, line, reason):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "ok", "input": {}, "answer": "1"}\n' + line + "\n")
    error = _refused(build_suite_from_jsonl, source, tmp_path / "out", name="s", version="1")
    assert error.reason == reason
    assert str(source) in str(error) and "line 2" in str(error)


def test_a_source_over_the_file_limit_is_refused_after_reading_no_more(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SUITE_FILE_BYTES", 10_000)
    source = tmp_path / "in.jsonl"
    row = json.dumps({"id": "a", "input": {}, "answer": "1"})
    source.write_text("\n".join([row.replace('"a"', f'"t{i}"') for i in range(1_000)]))
    error = _refused(build_suite_from_jsonl, source, tmp_path / "out", name="s", version="1")
    assert error.reason == "too-large" and "MAX_SUITE_FILE_BYTES" in str(error)


def test_a_source_with_more_tasks_than_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SUITE_TASKS", 3)
    source = tmp_path / "in.jsonl"
    rows = [json.dumps({"id": f"t{i}", "input": {}, "answer": "1"}) for i in range(5)]
    source.write_text("\n".join(rows))
    error = _refused(build_suite_from_jsonl, source, tmp_path / "out", name="s", version="1")
    assert error.reason == "too-large" and "line 4" in str(error)


# --- loading a suite from disk --------------------------------------------------------


def test_a_suite_on_disk_with_an_input_over_the_limit_is_refused_on_load(tmp_path, monkeypatch):
    line = canonical_bytes({"id": "big", "input": {"q": "x" * 5_000}})
    root = _write_suite(tmp_path / "suite", [line])
    SuiteSource(root)  # within the default limit
    monkeypatch.setattr(limits, "MAX_TASK_INPUT_BYTES", 1_000)
    error = _refused(SuiteSource, root)
    assert error.reason == "too-large" and "'big'" in str(error)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"id":"a","input":{},"metadata":{"m":' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
         "too-deep"),
        (b'{"id":"a","input":{"q":' + b"7" * 5_000 + b"}}", "too-many-digits"),
    ],
)  # fmt: skip
def test_a_suite_on_disk_breaking_a_limit_is_refused_naming_the_line(tmp_path, line, reason):
    root = _write_suite(tmp_path / "suite", [line])
    error = _refused(SuiteSource, root)
    assert error.reason == reason and f"{TASKS_FILE}: line 1" in str(error)


def test_a_suite_file_linked_to_dev_zero_is_refused_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SUITE_FILE_BYTES", 1_000_000)
    root = _write_suite(tmp_path / "suite", [canonical_bytes({"id": "a", "input": {}})])
    (root / TASKS_FILE).unlink()
    os.symlink("/dev/zero", root / TASKS_FILE)
    error = _refused(SuiteSource, root)
    assert error.reason == "too-large" and "MAX_SUITE_FILE_BYTES" in str(error)


def test_a_manifest_counting_more_tasks_than_the_limit_is_refused_before_reading(
    tmp_path, monkeypatch
):
    root = _write_suite(tmp_path / "suite", [canonical_bytes({"id": "a", "input": {}})])
    monkeypatch.setattr(limits, "MAX_SUITE_TASKS", 0)
    error = _refused(SuiteSource, root)
    assert error.reason == "too-large" and "MAX_SUITE_TASKS" in str(error)
