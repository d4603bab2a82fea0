"""Shared helpers for the app tests: run the CLI as a user would, find output trees.

Every end-to-end test runs ``python -m xaytune ...`` in a subprocess with
``cwd`` set to a temporary directory (outputs land in ``<cwd>/experiments``) and
``PYTHONPATH`` pointing at the repository root, so the tests work whether the
package is installed (editable or not) or only checked out.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + existing if existing else "")
    # Hydra's full tracebacks would defeat the one-line error checks.
    env.pop("HYDRA_FULL_ERROR", None)
    # Wide enough that the rich table never wraps the words the tests look for.
    env["COLUMNS"] = "160"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


@dataclass(frozen=True)
class Result:
    """A finished CLI run."""

    args: tuple[str, ...]
    cwd: Path
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"python {' '.join(self.args)} (cwd {self.cwd}) -> {self.returncode}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )


Runner = Callable[..., Result]


def run_module(args: Sequence[str], cwd: Path, *, timeout: float = 240) -> Result:
    """``python -m <args>`` in ``cwd``; returns the exit code and both streams."""
    full = ("-m", *args)
    done = subprocess.run(
        [sys.executable, *full],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Result(full, cwd, done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="session")
def cli_env() -> dict[str, str]:
    """The environment every CLI subprocess gets (for Popen-based tests)."""
    return _env()


@pytest.fixture(scope="session")
def xaytune() -> Runner:
    """``xaytune(cwd, *overrides)`` runs ``python -m xaytune *overrides`` in ``cwd``."""

    def run(cwd: Path, *overrides: str, timeout: float = 240) -> Result:
        return run_module(["xaytune", *overrides], cwd, timeout=timeout)

    return run


@pytest.fixture(scope="session")
def verify() -> Callable[..., Result]:
    """``verify(tree)`` runs ``python -m xaytune.verify <tree>`` in a subprocess;
    ``verify(tree, in_process=True)`` calls the same ``main`` here (no interpreter
    start-up: for the many tamper cases)."""

    def run(tree: Path, *, in_process: bool = False) -> Result:
        if not in_process:
            return run_module(["xaytune.verify", str(tree)], tree.parent)
        from xaytune.verify import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(tree)])
        args = ("xaytune.verify (in process)", str(tree))
        return Result(args, tree.parent, code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture(scope="session")
def cli_compare() -> Callable[..., Result]:
    """``cli_compare(tree, *overrides)`` runs ``python -m xaytune.compare`` on ``tree``."""

    def run(tree: Path, *overrides: str) -> Result:
        return run_module(["xaytune.compare", str(tree), *overrides], tree.parent)

    return run


def interrupted_run(
    args: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    *,
    ready: Callable[[], bool],
    signum: int,
    timeout: float = 60,
) -> tuple[int, str, str]:
    """Start ``python -m xaytune *args`` in ``cwd``; once ``ready()`` holds, send
    ``signum``; return (exit code, stdout, stderr)."""
    import signal
    import time

    def default_sigint() -> None:
        # A child inherits an ignored SIGINT (a CI shell running jobs in the background),
        # and Python then never raises KeyboardInterrupt: restore it.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    process = subprocess.Popen(
        [sys.executable, "-m", "xaytune", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, f"not ready within {timeout} s"
            time.sleep(0.02)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stdout, stderr


@pytest.fixture(scope="session")
def interrupted() -> Callable[..., tuple[int, str, str]]:
    """:func:`interrupted_run`, for tests that stop a run with a signal."""
    return interrupted_run


def only_output_dir(cwd: Path, experiment: str) -> Path:
    """The single ``experiments/<experiment>/<timestamp>`` directory under ``cwd``."""
    found = sorted(p for p in (cwd / "experiments" / experiment).iterdir() if p.is_dir())
    assert len(found) == 1, f"expected one output dir, found {found}"
    return found[0]


@pytest.fixture(scope="session")
def output_dir() -> Callable[[Path, str], Path]:
    return only_output_dir


@dataclass(frozen=True)
class QuickstartRun:
    result: Result
    out: Path  # experiments/quickstart/<timestamp>

    def manifest(self) -> dict:
        return json.loads((self.out / "manifest.json").read_text())

    def report(self) -> dict:
        return json.loads((self.out / "comparison" / "report.json").read_text())


@pytest.fixture(scope="session")
def quickstart(tmp_path_factory: pytest.TempPathFactory, xaytune: Runner) -> QuickstartRun:
    """The real quickstart, unchanged (only progress bars off), run once per session.

    Tests must not modify this tree; copy it first (see ``quickstart_copy``).
    """
    cwd = tmp_path_factory.mktemp("quickstart")
    result = xaytune(cwd, "+experiment=quickstart", "progress=false")
    assert result.returncode == 0, result.describe()
    return QuickstartRun(result, only_output_dir(cwd, "quickstart"))


@pytest.fixture
def quickstart_copy(quickstart: QuickstartRun, tmp_path: Path) -> Path:
    """A private copy of the quickstart tree (safe to tamper with)."""
    import shutil

    copy = tmp_path / quickstart.out.name
    shutil.copytree(quickstart.out, copy, symlinks=True)
    return copy
