"""The suite how-tos of docs/guides/own-data.md ("Your tasks as a suite": a suite, From a
CSV, From a Hugging Face dataset file; "Agent tasks": a task with an environment) run as
written.

The first section's fenced blocks are the how-tos: ``jsonl`` and
``csv`` blocks with a ``title`` are files, written at their titles; ``sh`` blocks are
commands, run in order from one empty directory (``python`` is this interpreter; a
backslash continues a line). The Parquet file the third how-to starts from is a
dataset's download, not part of the page: the test writes one with the columns the
command names (and a list column the command leaves out).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_TITLED = re.compile(r'(jsonl|csv) title="([^"]+)"')


PAGE = REPO_ROOT / "docs" / "guides" / "own-data.md"


def _howtos() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Your tasks as a suite")
    return text[start : text.index("\n## ", start + 1)]


def _commands(block: str) -> list[list[str]]:
    joined = block.replace("\\\n", " ")
    return [shlex.split(line) for line in joined.splitlines() if line.strip()]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT)
    env.pop("HYDRA_FULL_ERROR", None)
    env["COLUMNS"] = "160"
    return env


def _hf_parquet(path: Path) -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "qid": ["hf-1", "hf-2", "hf-3"],
            "question": ["What is 2 plus 2?", "What is 3 times 3?", "What is 10 minus 7?"],
            "choices": [["3", "4"], ["9", "6"], ["3", "2"]],
            "answer": ["4", "9", "3"],
        }
    )
    pq.write_table(table, path)


def test_the_suite_howtos_run_as_written(tmp_path: Path):
    _hf_parquet(tmp_path / "test-00000-of-00001.parquet")
    outputs = []
    for match in _FENCE.finditer(_howtos()):
        info, body = match[1].strip(), match[2]
        titled = _TITLED.fullmatch(info)
        if titled:
            (tmp_path / titled[2]).write_text(body, encoding="utf-8")
            continue
        assert info == "sh", info
        for command in _commands(body):
            assert command[0] == "python", command
            done = subprocess.run(
                [sys.executable, *command[1:]],
                cwd=tmp_path,
                env=_env(),
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, f"{shlex.join(command)}\n{done.stdout}\n{done.stderr}"
            outputs.append(done.stdout)
    text = "\n".join(outputs)
    # The 5-task suite ran under the quickstart's 20-task sampling: every task, said so.
    assert "note: sampling asks for 20 tasks; suite my-suite has 5" in text
    assert "relation" in text
    trees = list((tmp_path / "experiments" / "quickstart").iterdir())
    assert len(trees) == 1
    verified = subprocess.run(
        [sys.executable, "-m", "xaytune.verify", str(trees[0])],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # Answers only in the held-out files.
    capitals = tmp_path / "suites" / "capitals"
    assert "Nairobi" in (capitals / "references.jsonl").read_text()
    assert "Nairobi" not in (capitals / "tasks.jsonl").read_text()
    assert "France (Europe)" in (capitals / "tasks.jsonl").read_text()
    hf = (tmp_path / "suites" / "my-hf-set" / "tasks.jsonl").read_text()
    assert '"hf-2"' in hf and "choices" not in hf


def _environment_howto() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Agent tasks: turns, tools, environments")
    return text[start : text.index("\n## ", start + 1)]


def test_the_environment_howto_builds_a_suite_that_pins_the_environment(tmp_path: Path):
    commands = []
    for match in _FENCE.finditer(_environment_howto()):
        info, body = match[1].strip(), match[2]
        titled = re.fullmatch(r'(python|jsonl) title="([^"]+)"', info)
        if titled:
            path = tmp_path / titled[2]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        else:
            assert info == "sh", info
            commands += _commands(body)
    assert commands
    for command in commands:
        done = subprocess.run(
            [sys.executable, *command[1:]],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"{shlex.join(command)}\n{done.stdout}\n{done.stderr}"
    task = (tmp_path / "suites" / "counter" / "tasks.jsonl").read_text()
    code = json.loads(task)["environment"]["code"]
    assert code["target"] == "my_parts.counter.Counter" and code["version"] == "1"
    assert '"value":6' in (tmp_path / "suites" / "counter" / "references.jsonl").read_text()
