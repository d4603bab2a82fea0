"""A disk that fills up mid-run (issue 23): every failure is one line naming the file
and the errno word (exit 2), what was sealed stays sealed, and a resume after the
fault completes a tree that verifies with the uninterrupted run's verdicts."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RUN = ("+experiment=quickstart", "sampling.count=3", "progress=false")
HERE = Path(__file__).parent


def verdicts(tree: Path) -> dict:
    report = json.loads((tree / "comparison" / "report.json").read_text())
    return {"relation": report["relation"], "a": report["a"], "b": report["b"]}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, xaytune, output_dir):
    cwd = tmp_path_factory.mktemp("clean")
    assert xaytune(cwd, *RUN).returncode == 0
    return verdicts(output_dir(cwd, "quickstart"))


# The whole run makes about 200 os.write calls (204 at this writing; fewer as the writer
# does less per attempt): the last point falls late in the run, not past its end.
@pytest.mark.parametrize("fail_at", [1, 3, 30, 120, 170])
def test_a_full_disk_is_one_line_and_a_resume_completes_the_run(
    tmp_path, cli_env, xaytune, verify, uninterrupted, fail_at
):
    done = subprocess.run(
        [sys.executable, str(HERE / "_failing_disk.py"), str(fail_at), *RUN],
        cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error: "), lines
    assert "ENOSPC" in lines[0] or "No space left on device" in lines[0], lines
    hint = [line for line in lines if line.startswith("resume with: ")]
    assert len(lines) == 1 + len(hint) and len(hint) <= 1, lines
    if not hint:  # it failed before the run had a tree to continue
        assert not list(tmp_path.rglob("manifest.json"))
        return
    command = shlex.split(hint[0].removeprefix("resume with: python -m xaytune "))
    resumed = xaytune(tmp_path, *command)
    assert resumed.returncode == 0, resumed.describe()
    tree = Path(command[-1].removeprefix("resume="))
    assert verify(tree).returncode == 0
    assert verdicts(tree) == uninterrupted
