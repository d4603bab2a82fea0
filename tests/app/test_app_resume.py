"""Ctrl-C mid-run, then the printed resume command: nothing attested is rerun, the
final evidence verifies, and a resume with another config is refused."""

from __future__ import annotations

import json
import shlex
import signal
import sys
from pathlib import Path

import pytest

from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence.attempt_file import AttemptParts

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process"),
]

# Slow enough (0.1 s per model call, calculator tasks take several calls) that the
# interrupt lands while attempts are in flight; small enough to keep the test short.
RUN = (
    "+experiment=quickstart",
    "model.latency_s=0.1",
    "concurrency=4",
    "sampling.count=4",
    "progress=false",
)


def _attempt_files(root: Path) -> list[Path]:
    """Every attempt file of every evidence store under ``root``."""
    return sorted(root.glob("**/evidence/tasks/*/*.jsonl"))


def _seals(root: Path) -> dict[Path, dict]:
    """Per sealed attempt file, its seal (the file's last line)."""
    seals = {}
    for path in _attempt_files(root):
        try:
            parts = AttemptParts.of(path.read_bytes(), str(path))
        except EvidenceError as error:
            # Claimed, nothing recorded yet (or while the run writes it): open.
            assert error.reason == "bad-record", error
            continue
        if parts.seal is not None:
            seals[path] = json.loads(parts.seal)
    return seals


def _attempts_by_task(root: Path) -> dict[Path, list[str]]:
    """Per task directory, the attempt files it holds."""
    return {
        task.relative_to(root): names
        for task in root.glob("candidates/*/seed-*/evidence/tasks/*")
        if (names := sorted(p.name for p in task.iterdir()))
    }


def test_interrupt_then_resume(tmp_path, cli_env, xaytune, verify, output_dir, interrupted):
    code, stdout, stderr = interrupted(
        RUN, tmp_path, cli_env, ready=lambda: bool(_seals(tmp_path)), signum=signal.SIGINT
    )
    assert code == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    assert "relation:" not in stdout
    hint = [line for line in stderr.splitlines() if line.startswith("resume with: ")]
    assert len(hint) == 1, stderr

    out = output_dir(tmp_path, "quickstart")
    before = _seals(out)
    assert before
    partial = [path for path, seal in before.items() if seal["status"] == "partial"]
    complete = {path for path, seal in before.items() if seal["status"] == "complete"}
    tasks_run = {path.parent for path in before}
    # Interrupted: in-flight attempts were sealed partial, or tasks never started.
    assert partial or len(tasks_run) < 2 * 3 * 4, stderr
    assert not (out / "comparison").exists()
    attempts_before = _attempts_by_task(out)
    sealed_bytes = {path: path.read_bytes() for path in before}
    hydra_record = {p.name: p.read_bytes() for p in (out / ".hydra").iterdir()}
    assert set(hydra_record) >= {"config.yaml", "overrides.yaml"}
    attested_before = {path.parent.relative_to(out) for path in complete}

    # The printed command, as a user would paste it.
    command = shlex.split(hint[0].removeprefix("resume with: "))
    assert command[:3] == ["python", "-m", "xaytune"]
    overrides = command[3:]
    assert f"resume={out}" in overrides
    assert set(RUN) <= set(overrides)
    resumed = xaytune(tmp_path, *overrides)
    assert resumed.returncode == 0, resumed.describe()
    assert "relation:" in resumed.stdout
    assert output_dir(tmp_path, "quickstart") == out  # continued in place

    verified = verify(out)
    assert verified.returncode == 0, verified.describe()

    after = _attempts_by_task(out)
    assert len(after) == 2 * 3 * 4
    for task in attested_before:
        assert after[task] == attempts_before[task], f"{task}: an attested task was rerun"
    for task, names in attempts_before.items():
        # Nothing is overwritten or dropped: the old partial attempts are kept.
        assert set(names) <= set(after[task]), task
    for path in partial:
        task = path.parent.relative_to(out)
        assert len(after[task]) == len(attempts_before[task]) + 1, task
    for path, data in sealed_bytes.items():
        # A sealed attempt is never touched again: the partial seals are kept.
        assert path.read_bytes() == data, path
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is True

    # Another config may not continue this tree.
    refused = xaytune(
        tmp_path, *(o for o in overrides if not o.startswith("sampling.")), "sampling.count=5"
    )
    assert refused.returncode == 2, refused.describe()
    assert "resume-mismatch" in refused.stderr
    assert "(sampling.count: 4 -> 5)" in refused.stderr  # names what to put back
    assert len(refused.stderr.strip().splitlines()) == 1
    assert _attempts_by_task(out) == after  # nothing was run into it
    # .hydra/ still records the run that made the tree (a refused resume would
    # otherwise overwrite it with a config that never ran).
    assert {p.name: p.read_bytes() for p in (out / ".hydra").iterdir()} == hydra_record


def test_an_interrupted_sweep_prints_the_command_that_resumes_the_whole_sweep(
    tmp_path, cli_env, xaytune, verify, output_dir, interrupted
):
    sweep = ("-m", *RUN, "seed=101,102,103")
    code, stdout, stderr = interrupted(
        sweep, tmp_path, cli_env, ready=lambda: bool(_seals(tmp_path)), signum=signal.SIGINT
    )
    assert code == 130, (stdout, stderr)
    root = output_dir(tmp_path, "quickstart")
    hint = [line for line in stderr.splitlines() if line.startswith("resume with: ")]
    assert len(hint) == 1, stderr
    command = shlex.split(hint[0].removeprefix("resume with: "))
    assert command[:4] == ["python", "-m", "xaytune", "-m"]
    assert "seed=101,102,103" in command and f"resume={root}" in command
    assert not (root / "comparison").exists()

    resumed = xaytune(tmp_path, *command[3:])
    assert resumed.returncode == 0, resumed.describe()
    assert "relation:" in resumed.stdout
    assert output_dir(tmp_path, "quickstart") == root  # continued in place
    for seed in (101, 102, 103):
        assert (root / f"seed-{seed}" / "manifest.json").is_file()
    assert (root / "comparison" / "report.json").is_file()
    verified = verify(root)
    assert verified.returncode == 0, verified.describe()


def test_resume_of_a_directory_that_is_not_a_run_writes_nothing_there(tmp_path, xaytune):
    target = tmp_path / "not-a-run"
    target.mkdir()
    for argv in (["+experiment=quickstart"], ["-m", "+experiment=quickstart", "seed=101"]):
        result = xaytune(tmp_path, *argv, f"resume={target}")
        assert result.returncode == 2, result.describe()
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("error: resume-mismatch: ") and "not an xaytune" in line
        assert list(target.iterdir()) == []  # no log, no multirun.yaml, nothing
