"""SIGTERM stops a run started as a background job of a non-interactive shell.

Such a shell starts `cmd &` with SIGINT ignored; the run must still stop at SIGTERM
(sealing in-flight attempts partial, printing the resume command, exit 143) and the
printed command must finish the tree. Only a process shows this (the inherited signal
disposition, the exit code), so it is a subprocess test. The same holds when the
run's agent loop never awaits (a CPU spin holds the event loop): SIGTERM to the
background job exits 143, SIGINT to a foreground process 130, the attempt sealed
partial (the runner's watchdog, xaytune/harness/_watchdog.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from xaytune.harness.evidence.attempt_file import AttemptParts

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and job control"),
]

RUN = (
    "+experiment=quickstart",
    "model.latency_s=0.1",
    "concurrency=4",
    "sampling.count=4",
    "progress=false",
)

# Start the run as `cmd &` (SIGINT ignored, as bash does without job control), wait for
# the first attempt file, send SIGTERM, report the exit status.
SCRIPT = """
"$PY" -m xaytune "$@" >out.txt 2>err.txt &
pid=$!
for _ in $(seq 600); do
  if [ -n "$(find . -path '*evidence/tasks/*' -name '*.jsonl' 2>/dev/null | head -n 1)" ]; then
    break
  fi
  sleep 0.1
done
kill -TERM $pid
wait $pid
echo rc=$?
"""


def test_sigterm_stops_a_background_job_of_a_script(tmp_path, cli_env, xaytune, verify, output_dir):
    done = subprocess.run(
        ["bash", "-c", SCRIPT, "bash", *RUN],
        cwd=tmp_path,
        env={**cli_env, "PY": sys.executable},
        capture_output=True,
        text=True,
        timeout=240,
    )
    stderr = (tmp_path / "err.txt").read_text()
    assert done.stdout.strip() == "rc=143", (done.stdout, done.stderr, stderr)
    assert "Traceback" not in stderr
    hint = [line for line in stderr.splitlines() if line.startswith("resume with: ")]
    assert len(hint) == 1, stderr
    out = output_dir(tmp_path, "quickstart")
    assert not (out / "comparison").exists()

    resumed = xaytune(tmp_path, *shlex.split(hint[0].removeprefix("resume with: "))[3:])
    assert resumed.returncode == 0, resumed.describe()
    verified = verify(out)
    assert verified.returncode == 0, verified.describe()


# A user's agent loop that holds the event loop for ever: it never awaits.
SPINNING_LOOP = """
async def spin(ctx):
    while True:
        pass
"""
HOLD = tuple(f"candidates.{c}.loop={{_target_:spinparts.spin}}" for c in ("a", "b"))


def _attempt_files(cwd: Path) -> list[Path]:
    return sorted(cwd.glob("experiments/**/evidence/tasks/*/*.jsonl"))


def _the_sealed_partial_attempt(cwd: Path) -> list[dict]:
    """The run's one attempt (the held one; no other task started): sealed partial.
    Returns its events."""
    [path] = _attempt_files(cwd)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    assert parts.seal is not None, f"{path} is open"
    assert json.loads(parts.seal)["status"] == "partial"
    return [json.loads(line) for line in b"".join(parts.events).splitlines()]


# SCRIPT, leaving the job's pid behind: a run that ignores SIGTERM is killed after the test.
SCRIPT_WITH_PID = SCRIPT.replace("pid=$!\n", "pid=$!\necho $pid >pid.txt\n")


def test_sigterm_stops_a_background_job_whose_loop_never_awaits(tmp_path, cli_env):
    (tmp_path / "spinparts.py").write_text(SPINNING_LOOP)
    assert SCRIPT_WITH_PID != SCRIPT
    try:
        done = subprocess.run(
            ["bash", "-c", SCRIPT_WITH_PID, "bash", *RUN, *HOLD],
            cwd=tmp_path,
            env={**cli_env, "PY": sys.executable},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        pid = tmp_path / "pid.txt"
        if pid.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid.read_text()), signal.SIGKILL)
    stderr = (tmp_path / "err.txt").read_text()
    assert done.stdout.strip() == "rc=143", (done.stdout, done.stderr, stderr)
    assert "Traceback" not in stderr
    assert any(line.startswith("resume with: ") for line in stderr.splitlines()), stderr
    events = _the_sealed_partial_attempt(tmp_path)
    assert events[-2]["type"] == "interrupted", events[-2:]


def test_sigint_stops_a_foreground_run_whose_loop_never_awaits(tmp_path, cli_env, interrupted):
    (tmp_path / "spinparts.py").write_text(SPINNING_LOOP)
    code, _, stderr = interrupted(
        [*RUN, *HOLD],
        tmp_path,
        cli_env,
        ready=lambda: bool(_attempt_files(tmp_path)),
        signum=signal.SIGINT,
        timeout=120,
    )
    assert code == 130, stderr
    assert "Traceback" not in stderr
    events = _the_sealed_partial_attempt(tmp_path)
    assert events[-2]["type"] == "interrupted", events[-2:]
