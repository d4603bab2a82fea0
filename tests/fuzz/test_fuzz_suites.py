"""Fuzzing the suite builder and loader: one line or a suite, never a traceback.

Through the Python entries (``build_suite_from_jsonl``, ``build_suite``,
``SuiteSource``) and, for a few sources, through ``python -m xaytune.suites build``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _fuzz_support import (
    FUZZ,
    FUZZ_TIMEOUT,
    HOSTILE_TEXT,
    JSON_TEXT,
    JSON_VALUES,
    KEYS,
    LONG,
    SCALARS,
    TEXT,
    bounded_memory,
    cli_env,
    embedded,
    one_line,
    snapshot,
    to_bytes,
    working_directory,
)
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import (
    MANIFEST_FILE,
    REFERENCES_FILE,
    SUITE_SCHEMA,
    TASKS_FILE,
    SuiteSource,
    suite_digest,
)
from xaytune.core.errors import XaytuneError
from xaytune.suites import build_suite, build_suite_from_jsonl

pytestmark = FUZZ_TIMEOUT

GOOD = '{"id": "ok", "input": {"question": "1 + 1"}, "answer": "2"}'
DEEP = "[" * 100_000 + "]" * 100_000
# A plausible record: valid ids and flat inputs, fuzzed metadata and answers.
PLAUSIBLE = st.fixed_dictionaries(
    {
        "id": st.from_regex(r"[a-z0-9][a-z0-9._-]{0,8}", fullmatch=True),
        "input": st.dictionaries(KEYS, SCALARS, max_size=3),
        "answer": st.one_of(TEXT, st.integers()),
    },
    optional={"metadata": st.dictionaries(KEYS, JSON_VALUES, max_size=3)},
).map(json.dumps)
# A source line: a plausible record, a real record with one field fuzzed, or fuzzed
# text whole.
SOURCE_LINES = st.one_of(
    PLAUSIBLE,
    embedded('{"id": "t1", "input": {"question": {}}, "answer": "1"}'),
    embedded('{"id": "t1", "input": {"question": "q"}, "answer": "1", "metadata": {}}'),
    embedded('{"id": {}, "input": {"question": "q"}, "answer": "1"}'),
    embedded('{"id": "t1", "input": {}, "answer": "1"}'),
    embedded('{"id": "t1", "input": {"question": "q"}, "answer": {}}'),
    embedded('{"id": "t1", "input": {"question": "q"}, "answer": "1", "attachments": {}}'),
    JSON_TEXT,
)


def _outcome_of_build(source: Path, out: Path) -> str:
    """Build, then check the property; returns "built" or the refusal's reason."""
    try:
        built = build_suite_from_jsonl(source, out, name="fuzz", version="1")
    except XaytuneError as error:
        assert one_line(str(error)) and len(str(error)) < 1_000, str(error)[:2_000]
        assert not out.exists()  # a refusal writes nothing
        return error.reason
    # What was built loads back, whole, and every task is what the source said.
    again = SuiteSource(out)
    assert again.digest == built.digest
    again.reference_strings()
    return "built"


@FUZZ
@given(
    lines=st.one_of(
        st.lists(PLAUSIBLE, min_size=1, max_size=3), st.lists(SOURCE_LINES, min_size=1, max_size=3)
    ),
    prefix=st.booleans(),
)
@example(lines=['{"id": "a", "input": {"q": ' + "9" * 5_000 + '}, "answer": "1"}'], prefix=True)
@example(lines=['{"id": "a", "input": {"q": ' + DEEP + '}, "answer": "1"}'], prefix=False)
@example(lines=['{"id": "a", "input": {}, "metadata": {"m": ' + DEEP + '}, "answer": "1"}'],
         prefix=True)  # fmt: skip
@example(lines=['{"id": "' + "/" * 100_000 + '", "input": {}, "answer": "1"}'], prefix=False)
@example(lines=['{"id": "a", "input": {"q": "\\ud800"}, "answer": "1"}'], prefix=False)
@example(lines=['{"id": "a", "input": {"q": NaN}, "answer": "1", "answer": "2"}'], prefix=False)
def test_a_fuzzed_source_is_built_or_refused_in_one_line(lines: list[str], prefix: bool) -> None:
    with tempfile.TemporaryDirectory() as temp, bounded_memory():
        root = Path(temp)
        source = root / "in.jsonl"
        source.write_bytes(to_bytes("\n".join([GOOD, *lines] if prefix else lines)))
        with working_directory(root):
            reason = _outcome_of_build(source, root / "out")
        event(reason)
        # Nothing beside the source and the suite (no staging directory left behind).
        expected = {"in.jsonl", "out"} if reason == "built" else {"in.jsonl"}
        assert {path.name for path in root.iterdir()} == expected


def _deep_python(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


TASK_RECORDS = st.fixed_dictionaries(
    {"id": st.one_of(st.just("t1"), JSON_VALUES), "input": JSON_VALUES},
    optional={"metadata": JSON_VALUES, "attachments": JSON_VALUES, "answer": JSON_VALUES},
)


@FUZZ
@given(task=TASK_RECORDS, answer=JSON_VALUES, depth=st.sampled_from([0, 10, 63, 70, 100_000]))
@example(task={"id": "t1", "input": {"q": 1}}, answer="1", depth=100_000)
@example(task={"id": "t1", "input": {"q": 10**5000}}, answer="1", depth=0)
@example(task={"id": "t1", "input": {"q": float("nan")}}, answer="1", depth=0)
@example(task={"id": "t1", "input": {"q": "\udc80"}}, answer="1", depth=0)
def test_python_records_are_built_or_refused_in_one_line(task: dict, answer: Any, depth: int):
    """``depth``: metadata nested that deep as Python values (built here, not drawn,
    so a failure report need not print it)."""
    if depth:
        task = {**task, "metadata": _deep_python(depth)}
    references = [{"id": task.get("id"), "answer": answer}]
    with tempfile.TemporaryDirectory() as temp, bounded_memory():
        out = Path(temp) / "out"
        try:
            build_suite(out, name="fuzz", version="1", tasks=[task], references=references)
        except XaytuneError as error:
            assert one_line(str(error)) and len(str(error)) < 1_000, str(error)[:2_000]
            assert not out.exists()
        else:
            SuiteSource(out).reference_strings()


def _write_suite(root: Path, tasks: bytes, references: bytes, task_count: int) -> None:
    """A suite directory by hand, whose manifest's digests match the fuzzed files."""
    files = {TASKS_FILE: tasks, REFERENCES_FILE: references}
    digests = {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in files.items()}
    for name, data in files.items():
        (root / name).write_bytes(data)
    facts = {"name": "fuzz", "version": "1", "task_count": task_count, "files": digests}
    manifest = {"schema": SUITE_SCHEMA, **facts, "digest": suite_digest(**facts)}
    (root / MANIFEST_FILE).write_bytes(canonical_bytes(manifest))


@FUZZ
@given(
    task_lines=st.lists(st.one_of(SOURCE_LINES, embedded('{"id": "t1", "input": {}}')), max_size=3),
    reference_line=st.one_of(embedded('{"id": "t1", "answer": {}}'), JSON_TEXT),
    task_count=st.integers(0, 3),
)
@example(task_lines=['{"id":"t1","input":{"q":' + DEEP + "}}"], reference_line="", task_count=1)
def test_a_fuzzed_suite_on_disk_loads_or_is_refused_in_one_line(
    task_lines: list[str], reference_line: str, task_count: int
) -> None:
    with tempfile.TemporaryDirectory() as temp, bounded_memory():
        root = Path(temp)
        tasks = to_bytes("".join(line + "\n" for line in task_lines))
        _write_suite(root, tasks, to_bytes(reference_line + "\n"), task_count)
        before = snapshot(root)
        try:
            SuiteSource(root).reference_strings()
        except XaytuneError as error:
            assert one_line(str(error)) and len(str(error)) < 1_000, str(error)[:2_000]
        assert snapshot(root) == before  # loading writes nothing


@settings(FUZZ, max_examples=200 if LONG else 4)
@given(line=st.one_of(HOSTILE_TEXT, SOURCE_LINES))
@example(line='{"id": "a", "input": {"q": ' + "9" * 5_000 + '}, "answer": "1"}')
def test_the_suites_cli_answers_a_fuzzed_source_in_one_line(line: str) -> None:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / "in.jsonl").write_bytes(to_bytes(line + "\n"))
        done = subprocess.run(
            [sys.executable, "-m", "xaytune.suites", "build", "in.jsonl", "--name", "fuzz",
             "--version", "1", "--out", "out"],
            cwd=root, env=cli_env(), capture_output=True, timeout=120, check=False,
        )  # fmt: skip
        stderr = done.stderr.decode("utf-8", "replace")
        assert "Traceback" not in stderr, stderr[-3_000:]
        if done.returncode == 0:
            assert stderr == "" and (root / "out" / MANIFEST_FILE).exists()
        else:
            assert done.returncode == 2 and done.stdout == b""
            assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr[:2_000]
            assert len(stderr) < 1_000
            assert {path.name for path in root.iterdir()} == {"in.jsonl"}
