"""Shared helpers for the app tests: run the CLI as a user would, find output trees.

The command-line fixtures (``xaytune``, ``verify``, ``cli_compare``) run the entry
point in this process by default (``entry_runs.call``: the argv, working directory,
``sys.path`` and environment ``python -m`` would give it, all put back afterwards),
which spares an interpreter start-up and the imports per run. A test whose behaviour
only a process shows (a signal, the interpreter's own exit, what a fresh interpreter
imports) uses ``xaytune_process`` or ``process=True``. Outputs land in
``<cwd>/experiments``, whichever way the CLI ran.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from entry_runs import REPO_ROOT, Result, call, cli_env, spawn
from tree_cache import CachedRun, TreeCache

__all__ = ["REPO_ROOT", "Result"]

Runner = Callable[..., Result]


@pytest.fixture(scope="session", name="cli_env")
def cli_env_fixture() -> dict[str, str]:
    """The environment every CLI subprocess gets (for Popen-based tests)."""
    return cli_env()


@pytest.fixture(scope="session")
def xaytune() -> Runner:
    """``xaytune(cwd, *overrides)`` runs ``python -m xaytune *overrides`` in ``cwd``, in
    this process; ``process=True`` spawns it instead."""

    def run(cwd: Path, *overrides: str, timeout: float = 240, process: bool = False) -> Result:
        if process:
            return spawn("xaytune", overrides, cwd, timeout=timeout)
        return call("xaytune", overrides, cwd)

    return run


@pytest.fixture(scope="session")
def xaytune_process() -> Runner:
    """``xaytune_process(cwd, *overrides)``: ``python -m xaytune`` in a subprocess."""

    def run(cwd: Path, *overrides: str, timeout: float = 240) -> Result:
        return spawn("xaytune", overrides, cwd, timeout=timeout)

    return run


@pytest.fixture(scope="session")
def verify() -> Callable[..., Result]:
    """``verify(tree)`` runs ``python -m xaytune.verify <tree>`` (in this process;
    ``process=True`` spawns it)."""

    def run(tree: Path, *, in_process: bool = True, process: bool = False) -> Result:
        if process or not in_process:
            return spawn("xaytune.verify", [str(tree)], tree.parent)
        return call("xaytune.verify", [str(tree)], tree.parent)

    return run


@pytest.fixture(scope="session")
def cli_compare() -> Callable[..., Result]:
    """``cli_compare(tree, *overrides)`` runs ``python -m xaytune.compare`` on ``tree``
    (in this process)."""

    def run(tree: Path, *overrides: str) -> Result:
        return call("xaytune.compare", [str(tree), *overrides], tree.parent)

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


QuickstartRun = CachedRun  # the name the tests use


@pytest.fixture(scope="session")
def quickstart(tree_cache: TreeCache) -> CachedRun:
    """The real quickstart, unchanged (only progress bars off), run once per session
    (shared by the xdist workers: ``tree_cache``).

    Tests must not modify this tree; copy it first (see ``quickstart_copy``).
    """
    return tree_cache.run("+experiment=quickstart")


@pytest.fixture
def quickstart_copy(quickstart: CachedRun, tmp_path: Path) -> Path:
    """A private copy of the quickstart tree (safe to tamper with)."""
    return quickstart.copy_to(tmp_path)
