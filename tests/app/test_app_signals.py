"""SIGTERM stops a run started as a background job of a non-interactive shell.

Such a shell starts `cmd &` with SIGINT ignored; the run must still stop at SIGTERM
(sealing in-flight attempts partial, printing the resume command, exit 143) and the
printed command must finish the tree. Only a process shows this (the inherited signal
disposition, the exit code), so it is a subprocess test.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

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
