"""One writer per tree, no run over a finished tree, no resume through links, and
SIGTERM stops like Ctrl-C (issue 19's attacks 3, 4, 5 and 7, each with its recipe)."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

from xaytune.experiment.tree.layout import tree_lock

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="signals")]


def snapshot(tree: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(tree)): p.read_bytes()
        for p in sorted(tree.rglob("*"))
        if p.is_file() and p.name != ".xaytune.lock"
    }


def test_a_second_writer_of_a_tree_is_refused_and_changes_nothing(quickstart_copy, xaytune):
    # Attack 3: two resume= of one tree at once. Here the test process holds the lock.
    before = snapshot(quickstart_copy)
    with tree_lock(quickstart_copy):
        result = xaytune(
            quickstart_copy.parent, "+experiment=quickstart", "progress=false",
            f"resume={quickstart_copy}",
        )  # fmt: skip
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: tree-locked: ") and f"pid {os.getpid()}" in line
    after = snapshot(quickstart_copy)
    after.pop("main.log", None), before.pop("main.log", None)  # Hydra's own log line
    assert after == before


def test_a_new_run_into_a_finished_tree_is_refused_before_anything_is_written(
    quickstart_copy, xaytune
):
    # Attack 4: point hydra.run.dir at a finished tree.
    before = snapshot(quickstart_copy)
    result = xaytune(
        quickstart_copy.parent, "+experiment=quickstart", "progress=false",
        f"hydra.run.dir={quickstart_copy}",
    )  # fmt: skip
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: run-dir-exists: ")
    assert snapshot(quickstart_copy) == before  # .hydra/ and main.log untouched too


def test_resume_through_a_symlink_is_refused(quickstart_copy, tmp_path, xaytune):
    # Attack 5: a symlinked comparison/ would send the reports elsewhere.
    elsewhere = tmp_path / "elsewhere"
    (quickstart_copy / "comparison").rename(elsewhere)
    (quickstart_copy / "comparison").symlink_to(elsewhere)
    before = snapshot(elsewhere)
    result = xaytune(
        quickstart_copy.parent, "+experiment=quickstart", "progress=false",
        f"resume={quickstart_copy}",
    )  # fmt: skip
    assert result.returncode == 2, result.describe()
    assert result.stderr.strip().startswith("error: symlink: ")
    assert snapshot(elsewhere) == before


def test_sigterm_seals_in_flight_attempts_partial_and_prints_the_resume_command(
    tmp_path, cli_env, xaytune, verify, output_dir, interrupted
):
    # Attack 7: `timeout`, submitit and SLURM send SIGTERM, not SIGINT.
    run = ("+experiment=quickstart", "model.latency_s=0.1", "concurrency=4", "sampling.count=4",
           "progress=false")  # fmt: skip
    code, stdout, stderr = interrupted(
        run, tmp_path, cli_env, signum=signal.SIGTERM,
        ready=lambda: bool(
            list(tmp_path.glob("experiments/*/*/candidates/*/seed-*/evidence/tasks/*/*"))
        ),
    )  # fmt: skip
    assert code == 143, (stdout, stderr)
    assert "Traceback" not in stderr and "terminated: in-flight attempts" in stderr
    tree = output_dir(tmp_path, "quickstart")
    # No attempt is left open: every attempt file ends with its seal.
    for path in tree.rglob("evidence/tasks/*/*.jsonl"):
        last = path.read_bytes().splitlines()[-1]
        assert b'"status":' in last, path
    (hint,) = [line for line in stderr.splitlines() if line.startswith("resume with: ")]
    resumed = xaytune(tmp_path, *shlex.split(hint.removeprefix("resume with: python -m xaytune ")))
    assert resumed.returncode == 0, resumed.describe()
    assert verify(tree).returncode == 0


def test_resume_removes_the_temporary_files_a_killed_writer_left(quickstart_copy, xaytune, verify):
    # A SIGKILL between a whole-or-nothing write's temp file and its rename leaves
    # `.<name>.<pid>.tmp`; verify names it (stray-file), a resume (holding the lock, so
    # no writer is alive) removes it and leaves the target as it was.
    stale = quickstart_copy / "comparison" / ".report.md.4242.tmp"
    stale.write_text("half a report")
    assert "stray-file" in verify(quickstart_copy, in_process=True).stdout
    result = xaytune(
        quickstart_copy.parent, "+experiment=quickstart", "progress=false",
        f"resume={quickstart_copy}",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    assert not stale.exists()
    assert verify(quickstart_copy).returncode == 0
