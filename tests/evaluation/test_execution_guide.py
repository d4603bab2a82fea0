"""The execution-scored suite guide (examples/code-tests/README.md) runs as written,
end to end with the scripted model, and verifies; and a scorer verdict that does not
repeat is named by task in one ``verify`` line.

The guide's fenced blocks with a ``title`` are files, written at their titles; ``sh``
blocks are commands, run in order from one empty directory (``python`` is this
interpreter; a backslash continues a line), as a user pastes them.
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

from xaytune.verify import main as verify_main

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox"),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
GUIDE = REPO_ROOT / "examples" / "code-tests" / "README.md"
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_TITLED = re.compile(r'(jsonl|json|yaml) title="([^"]+)"')


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["XAYTUNE_CACHE_MODE"] = "off"  # every replicate runs here, none is copied
    env.pop("HYDRA_FULL_ERROR", None)
    env["COLUMNS"] = "200"
    return env


def _follow(guide: str, directory: Path) -> list[str]:
    """Write the guide's files and run its commands in ``directory``; their stdout."""
    outputs = []
    for match in _FENCE.finditer(guide):
        info, body = match[1].strip(), match[2]
        titled = _TITLED.fullmatch(info)
        if titled:
            path = directory / titled[2]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            continue
        assert info == "sh", info
        for line in body.replace("\\\n", " ").splitlines():
            command = shlex.split(line)
            assert command[0] == "python", command
            done = subprocess.run(
                [sys.executable, *command[1:]],
                cwd=directory,
                env=_env(),
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
            outputs.append(done.stdout)
    return outputs


def test_the_guide_runs_as_written_and_verifies(tmp_path: Path):
    outputs = _follow(GUIDE.read_text(encoding="utf-8"), tmp_path)
    text = "\n".join(outputs)
    assert "pinned tiny-code 1: 3 tasks" in text
    # By hand: coder-block passes inc (fenced) and dec (bare), fails double (x * 3);
    # coder-text passes only dec (the fenced replies keep their prose): 2/3 and 1/3.
    success = next(line for line in text.splitlines() if "task_success" in line)
    assert "0.6667" in success and "0.3333" in success
    assert text.splitlines()[-1].startswith("ok: 6 evidence stores")
    suite = tmp_path / "suites" / "tiny-code"
    assert "check(candidate)" not in (suite / "tasks.jsonl").read_text()
    reasons = _reasons(tmp_path / "runs" / "tiny-code", "coder-block")
    assert reasons == {
        "Tiny-inc": "passed",
        "Tiny-dec": "passed",
        "Tiny-double": "failed: AssertionError at tests.py line 2",
    }
    assert set(_reasons(tmp_path / "runs" / "tiny-code", "coder-text").values()) == {
        "passed",
        "syntax-error: SyntaxError at solution.py line 1",
    }


def _reasons(tree: Path, candidate: str) -> dict[str, str]:
    restricted = tree / "candidates" / candidate / "seed-101" / "evaluation" / "outcome"
    report = json.loads((restricted / "restricted" / "evaluation.restricted.json").read_text())
    return {item["task_id"]: item["reason"] for item in report["scorer_reasons"]}


def test_verify_names_the_task_whose_execution_does_not_repeat(tmp_path, monkeypatch, capsys):
    # The guide's run, but the answer to `inc` depends on a file outside its directory
    # (reads are not confined): absent during the run, present when verify runs it.
    flag = tmp_path / "flag"
    guide = GUIDE.read_text(encoding="utf-8")
    flaky = f"import os\\ndef inc(x):\\n    return x + 1 if os.path.exists({str(flag)!r}) else x\\n"
    guide = guide.replace(
        '["Here you go:\\n```python\\ndef inc(x):\\n    return x + 1\\n```"]',
        json.dumps([flaky]).replace("\\\\n", "\\n"),
    )
    assert "os.path.exists" in guide
    commands = guide[: guide.index("python -m xaytune.verify")] + "```\n"
    _follow(commands, tmp_path)
    flag.write_text("now it passes")
    monkeypatch.chdir(tmp_path)
    assert verify_main(["runs/tiny-code"]) == 1
    out = capsys.readouterr().out
    named = [line for line in out.splitlines() if "on task" in line]
    # One line per replicate of coder-block (3 seeds) and of coder-text (3 seeds): the
    # same flaky answer under both extractions ("code" and bare code under full-text).
    assert len(named) == 6
    assert all("scorer 'execution' on task 'Tiny-inc'" in line for line in named)
    assert all(
        "recorded task_success 0 (failed: AssertionError at tests.py line 2), "
        "recomputed task_success 1 (passed)" in line
        for line in named
    )
    assert "evaluation-mismatch: not what the evidence gives" not in out
