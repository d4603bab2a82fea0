"""The quickstart, run once for the report and viewer tests, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_module(args: list[str], cwd: Path, *, timeout: float = 240):
    """``python -m <args>`` in ``cwd`` with the repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (
        os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else ""
    )
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def quickstart_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart's output tree (progress bars off). Never modify it: copy it."""
    cwd = tmp_path_factory.mktemp("report-quickstart")
    out = cwd / "run"
    done = run_module(
        ["xaytune", "+experiment=quickstart", "progress=false", f"hydra.run.dir={out}"], cwd
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out
