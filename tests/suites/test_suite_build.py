"""The suite builder: build_suite, build_suite_from_jsonl and ``python -m xaytune.suites``."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import (
    MANIFEST_FILE,
    REFERENCES_FILE,
    TASKS_FILE,
    SuiteSource,
)
from xaytune.core.errors import SuiteError, XaytuneError
from xaytune.suites import build_suite, build_suite_from_jsonl

REPO = Path(__file__).resolve().parents[2]
SECRET = "ANSWER-secret-{}"


def _tasks(*ids: str) -> list[dict[str, Any]]:
    return [{"id": task_id, "input": {"question": f"q {task_id}"}} for task_id in ids]


def _references(*ids: str) -> list[dict[str, Any]]:
    return [{"id": task_id, "answer": SECRET.format(task_id)} for task_id in ids]


def _jsonl_rows(*ids: str) -> list[str]:
    return [
        json.dumps({"id": task_id, "input": {"question": f"q {task_id}"}, "answer": f"A-{task_id}"})
        for task_id in ids
    ]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _refused(call: Any, *args: Any, **kwargs: Any) -> XaytuneError:
    with pytest.raises(XaytuneError) as caught:
        call(*args, **kwargs)
    assert "\n" not in str(caught.value)
    return caught.value


def _assert_nothing_written(parent: Path, out: Path, before: set[str]) -> None:
    """No output directory and no staging directory left beside it."""
    assert not out.exists()
    assert {p.name for p in parent.iterdir()} == before


# --- build_suite ---------------------------------------------------------------------------


def test_build_suite_writes_a_pinned_suite_that_loads(tmp_path: Path):
    out = tmp_path / "suite"
    source = build_suite(
        out, name="built", version="1.0", tasks=_tasks("a", "b"), references=_references("a", "b")
    )
    assert isinstance(source, SuiteSource)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [MANIFEST_FILE, REFERENCES_FILE, TASKS_FILE]
    )
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    for file in (TASKS_FILE, REFERENCES_FILE):
        data = (out / file).read_bytes()
        assert manifest["files"][file] == "sha256:" + hashlib.sha256(data).hexdigest()
        for line in data.splitlines():  # one canonical record a line
            assert canonical_bytes(json.loads(line)) == line
    assert (out / MANIFEST_FILE).read_bytes() == canonical_bytes(manifest) + b"\n"
    assert manifest["task_count"] == 2 and manifest["name"] == "built"
    assert SuiteSource(out).suite == source.suite
    assert SECRET.format("a") not in (out / TASKS_FILE).read_text()
    assert source.reference("a").answer == SECRET.format("a")


@pytest.mark.parametrize(
    ("tasks", "references", "reason"),
    [
        (_tasks("a", "b", "a"), _references("a", "b"), "duplicate-task"),
        (_tasks("a", "b"), _references("a", "b", "a"), "duplicate-task"),
        (_tasks("a", "b"), _references("a"), "missing-reference"),
        (_tasks("a"), _references("a", "z"), "orphan-reference"),
        ([], [], "empty-suite"),
        (_tasks("../x"), _references("../x"), "bad-id"),
        (_tasks("a/b"), _references("a/b"), "bad-id"),
        (_tasks(""), _references(""), "bad-id"),
        (_tasks(".hidden"), _references(".hidden"), "bad-id"),
        (_tasks("x" * 129), _references("x" * 129), "bad-id"),
        ([{"id": 5, "input": {}}], [{"id": 5, "answer": "1"}], "bad-id"),
        ([{"input": {}}], [], "bad-record"),
        ([{"id": "a", "input": {}, "answer": "4"}], _references("a"), "bad-record"),
        ([{"id": "a", "input": {"q": [1, 2]}}], _references("a"), "bad-record"),
        (["a"], _references("a"), "bad-record"),
        (_tasks("a"), [{"id": "a"}], "bad-record"),
        (_tasks("a"), [{"id": "a", "answer": 4}], "bad-record"),
        ([{"id": "a", "input": {"x": float("nan")}}], _references("a"), "non-finite"),
        ([{"id": "a", "input": {"x": 2**60}}], _references("a"), "unsafe-integer"),
    ],
)
def test_build_suite_refusals_write_nothing(tmp_path: Path, tasks, references, reason):
    out = tmp_path / "nested" / "suite"
    error = _refused(build_suite, out, name="s", version="1", tasks=tasks, references=references)
    assert error.reason == reason
    _assert_nothing_written(tmp_path, out, set())


@pytest.mark.parametrize(
    ("name", "version", "reason"),
    [
        ("../evil", "1", "bad-id"),
        ("a/b", "1", "bad-id"),
        ("", "1", "bad-id"),
        ("ok", "", "bad-manifest"),
        ("ok", "1 0", "bad-manifest"),
    ],
)
def test_build_suite_refuses_a_bad_name_or_version(tmp_path: Path, name, version, reason):
    out = tmp_path / "suite"
    error = _refused(
        build_suite, out, name=name, version=version, tasks=_tasks("a"), references=_references("a")
    )
    assert error.reason == reason
    _assert_nothing_written(tmp_path, out, set())


def test_build_suite_never_overwrites_an_existing_directory(tmp_path: Path):
    out = tmp_path / "suite"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    error = _refused(
        build_suite, out, name="s", version="1", tasks=_tasks("a"), references=_references("a")
    )
    assert error.reason == "exists"
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"
    assert {p.name for p in tmp_path.iterdir()} == {"suite"}


def test_a_build_that_fails_while_writing_leaves_nothing(tmp_path: Path, monkeypatch):
    import xaytune.suites._build as build_module

    calls = []

    def failing_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(build_module.os, "fsync", failing_fsync)
    out = tmp_path / "suite"
    error = _refused(
        build_suite, out, name="s", version="1", tasks=_tasks("a"), references=_references("a")
    )
    assert error.reason == "write-failed"
    assert str(out) in str(error)
    _assert_nothing_written(tmp_path, out, set())


def test_an_output_path_under_a_file_is_refused(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    error = _refused(
        build_suite,
        blocker / "suite",
        name="s",
        version="1",
        tasks=_tasks("a"),
        references=_references("a"),
    )
    assert error.reason == "write-failed"
    assert {p.name for p in tmp_path.iterdir()} == {"file"}


# --- build_suite_from_jsonl -----------------------------------------------------------------


def test_build_from_jsonl_puts_answers_only_in_the_reference_file(tmp_path: Path):
    source_file = _write(
        tmp_path / "in.jsonl",
        [
            json.dumps({"id": "a", "input": {"q": "2+2"}, "answer": "ANSWER-four"}),
            "",  # blank lines are skipped
            json.dumps(
                {
                    "id": "b",
                    "input": {"q": "6*7"},
                    "answer": 42,
                    "metadata": {"level": 1},
                    "attachments": [{"name": "t.csv"}],
                }
            ),
        ],
    )
    source = build_suite_from_jsonl(source_file, tmp_path / "out", name="from-jsonl", version="1")
    assert source.suite.task_ids == ("a", "b")
    assert source.reference("a").answer == "ANSWER-four"
    assert source.reference("b").answer == "42"  # integers become their decimal string
    assert source.suite.task("b").metadata == {"level": 1}
    assert source.suite.task("b").attachments[0].name == "t.csv"
    assert "ANSWER-four" not in (tmp_path / "out" / TASKS_FILE).read_text()
    assert "ANSWER-four" not in source.suite.model_dump_json()


@pytest.mark.parametrize(
    ("lines", "reason", "line"),
    [
        (['{"id": "a", "input": {}, "answer": "1"}', '{"id": "b", "input": {'], "bad-json", 2),
        (['{"id": "a", "input": {}, "answer": "1"}', "", "not json"], "bad-json", 3),
        (['[1, 2]'], "bad-json", 1),
        (['{"id": "a", "input": {}, "answer": "1"}', '{"id": "b", "input": {}}'],
         "missing-reference", 2),
        (['{"id": "a", "input": {}, "answer": "1", "hint": "x"}'], "bad-record", 1),
        (['{"id": "a", "input": {}, "answer": true}'], "bad-record", 1),
        (['{"id": "a", "input": {}, "answer": 1.5}'], "bad-record", 1),
    ],
)  # fmt: skip
def test_build_from_jsonl_refusals_name_the_file_and_line(tmp_path: Path, lines, reason, line):
    source_file = _write(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out"
    error = _refused(build_suite_from_jsonl, source_file, out, name="s", version="1")
    assert error.reason == reason
    assert str(source_file) in str(error) and f"line {line}:" in str(error)
    _assert_nothing_written(tmp_path, out, {"in.jsonl"})


def test_build_from_jsonl_refuses_bytes_that_are_not_utf8(tmp_path: Path):
    source_file = tmp_path / "in.jsonl"
    source_file.write_bytes(b'{"id": "a", "input": {}, "answer": "1"}\n{"id": "\xff"}\n')
    error = _refused(build_suite_from_jsonl, source_file, tmp_path / "out", name="s", version="1")
    assert error.reason == "bad-json"
    assert "line 2:" in str(error)


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        ([], "empty-suite"),
        (["", "   "], "empty-suite"),
        (_jsonl_rows("a", "b", "a"), "duplicate-task"),
        (_jsonl_rows("a", "../x"), "bad-id"),
    ],
)
def test_build_from_jsonl_refusals_name_the_file(tmp_path: Path, lines, reason):
    source_file = _write(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out"
    error = _refused(build_suite_from_jsonl, source_file, out, name="s", version="1")
    assert error.reason == reason
    assert str(source_file) in str(error)
    _assert_nothing_written(tmp_path, out, {"in.jsonl"})


def test_build_from_jsonl_refuses_a_missing_source(tmp_path: Path):
    error = _refused(
        build_suite_from_jsonl, tmp_path / "nope.jsonl", tmp_path / "out", name="s", version="1"
    )
    assert error.reason == "suite-missing"
    assert isinstance(error, SuiteError)
    assert not (tmp_path / "out").exists()


# --- the CLI, run as a user runs it ------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    out: Path | None


# case -> (reason, strings the one-line error must name)
CLI_REFUSALS = {
    "duplicate": ("duplicate-task", ["dup.jsonl", "'a'"]),
    "missing-reference": ("missing-reference", ["noanswer.jsonl", "line 2:"]),
    "bad-json": ("bad-json", ["broken.jsonl", "line 3:"]),
    "empty": ("empty-suite", ["empty.jsonl"]),
    "exists": ("exists", ["already"]),
    "bad-id": ("bad-id", ["badid.jsonl", "'../x'"]),
    "verify-edited": ("digest-mismatch", [REFERENCES_FILE]),
    "verify-missing": ("suite-missing", [TASKS_FILE]),
    # Issue 23: each of these ended in a traceback, a MemoryError or a 100 KB line.
    "big-int": ("too-many-digits", ["bigint.jsonl", "line 2", "MAX_INT_DIGITS"]),
    "deep-input": ("too-deep", ["deepinput.jsonl", "line 1", "MAX_JSON_DEPTH"]),
    "deep-metadata": ("too-deep", ["deepmeta.jsonl", "line 2"]),
    "dev-zero": ("line-too-long", ["/dev/zero", "line 1", "MAX_SUITE_LINE_BYTES"]),
    "long-id": ("bad-id", ["longid.jsonl", "(100000 characters)"]),
    "big-question": ("too-large", ["bigquestion.jsonl", "'big'", "MAX_TASK_INPUT_BYTES"]),
}


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every CLI case, started together (each is a fresh interpreter) and collected."""
    root = tmp_path_factory.mktemp("cli")
    good = _write(root / "good.jsonl", _jsonl_rows("a", "b", "c"))
    _write(root / "dup.jsonl", _jsonl_rows("a", "b", "a"))
    _write(root / "noanswer.jsonl", [_jsonl_rows("a")[0], '{"id": "b", "input": {}}'])
    _write(root / "broken.jsonl", [*_jsonl_rows("a", "b"), '{"id": "c", "input": '])
    _write(root / "empty.jsonl", [])
    _write(root / "badid.jsonl", _jsonl_rows("a", "../x"))
    _write(
        root / "bigint.jsonl",
        [_jsonl_rows("a")[0], '{"id": "b", "input": {"q": ' + "9" * 5_000 + '}, "answer": "1"}'],
    )
    _write(
        root / "deepinput.jsonl",
        ['{"id": "a", "input": {"q": ' + "[" * 100_000 + "]" * 100_000 + '}, "answer": "1"}'],
    )
    _write(
        root / "deepmeta.jsonl",
        [
            _jsonl_rows("a")[0],
            '{"id": "b", "input": {}, "answer": "1", "metadata": {"m": '
            + "{" * 100_000
            + "}" * 100_000
            + "}}",
        ],
    )
    _write(root / "longid.jsonl", [json.dumps({"id": "/" * 100_000, "input": {}, "answer": "1"})])
    _write(
        root / "bigquestion.jsonl",
        [json.dumps({"id": "big", "input": {"question": "x" * 10_000_000}, "answer": "1"})],
    )
    (root / "already").mkdir()
    for name in ("pinned", "edited", "missing"):
        build_suite_from_jsonl(good, root / name, name="cli", version="1")
    references = root / "edited" / REFERENCES_FILE
    data = bytearray(references.read_bytes())
    data[3] ^= 0x01
    references.write_bytes(bytes(data))
    (root / "missing" / TASKS_FILE).unlink()

    def build(source: str, out: str) -> list[str]:
        return ["build", str(root / source), "--name", "cli", "--version", "1", "--out", out]

    cases: dict[str, tuple[list[str], Path | None]] = {
        "build-ok": (build("good.jsonl", str(root / "out-ok")), root / "out-ok"),
        "verify-ok": (["verify", str(root / "pinned")], None),
        "duplicate": (build("dup.jsonl", str(root / "out-dup")), root / "out-dup"),
        "missing-reference": (build("noanswer.jsonl", "out-noanswer"), root / "out-noanswer"),
        "bad-json": (build("broken.jsonl", str(root / "out-broken")), root / "out-broken"),
        "empty": (build("empty.jsonl", str(root / "out-empty")), root / "out-empty"),
        "exists": (build("good.jsonl", str(root / "already")), None),
        "bad-id": (build("badid.jsonl", str(root / "out-badid")), root / "out-badid"),
        "verify-edited": (["verify", str(root / "edited")], None),
        "verify-missing": (["verify", str(root / "missing")], None),
        "big-int": (build("bigint.jsonl", str(root / "out-bigint")), root / "out-bigint"),
        "deep-input": (build("deepinput.jsonl", str(root / "out-di")), root / "out-di"),
        "deep-metadata": (build("deepmeta.jsonl", str(root / "out-dm")), root / "out-dm"),
        "dev-zero": (build("/dev/zero", str(root / "out-zero")), root / "out-zero"),
        "long-id": (build("longid.jsonl", str(root / "out-longid")), root / "out-longid"),
        "big-question": (build("bigquestion.jsonl", str(root / "out-bigq")), root / "out-bigq"),
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    started = {
        case: subprocess.Popen(
            [sys.executable, "-m", "xaytune.suites", *args],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for case, (args, _) in cases.items()
    }
    runs = {}
    for case, process in started.items():
        stdout, stderr = process.communicate(timeout=120)
        runs[case] = Run(process.returncode, stdout, stderr, cases[case][1])
    return runs


def test_cli_build_pins_a_suite_that_verifies(cli: dict[str, Run]):
    built = cli["build-ok"]
    assert built.returncode == 0, built.stderr
    assert built.stderr == ""
    assert built.out is not None
    source = SuiteSource(built.out)
    assert source.suite.task_ids == ("a", "b", "c")
    assert source.digest in built.stdout
    verified = cli["verify-ok"]
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("ok cli 1: 3 tasks")


@pytest.mark.parametrize("case", sorted(CLI_REFUSALS))
def test_cli_refusal_is_one_line_exit_2_and_writes_nothing(cli: dict[str, Run], case: str):
    run = cli[case]
    reason, names = CLI_REFUSALS[case]
    assert run.returncode == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    assert run.stderr.endswith("\n") and run.stderr.count("\n") == 1, run.stderr
    match = re.match(r"error: ([a-z-]+): ", run.stderr)
    assert match is not None, run.stderr
    assert match.group(1) == reason
    for name in names:
        assert name in run.stderr
    assert len(run.stderr) < 400  # quotes at most 80 characters of what it refuses
    if run.out is not None:
        assert not run.out.exists()
    root = cli["build-ok"].out.parent  # type: ignore[union-attr]
    assert not [p.name for p in root.iterdir() if p.name.startswith(".")]  # no staging left
    assert not any((root / "already").iterdir())  # the existing directory is untouched
