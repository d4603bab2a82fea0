"""Test helper (tests/support is on pytest's pythonpath): one cache of run trees for the
whole session, shared by the pytest-xdist workers.

A tree is keyed by its command line (the overrides after ``python -m xaytune``). The
first worker to ask for a key takes the key's lock (``fcntl.flock`` on a file beside
it), runs the CLI once in a subprocess as a user would, and records the exit code and
both streams beside the tree; a worker asking while that runs waits on the lock, then
reads the same record. Without xdist the cache lives in this session's base temporary
directory; under xdist in the directory the workers' base directories share
(``getbasetemp().parent``, one per pytest run), so no tree outlives its session or is
seen by another session.

Cached trees are read-only by contract: a test that changes a tree copies it first
(``CachedRun.copy_to``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from entry_runs import Result, spawn

__all__ = ["CachedRun", "TreeCache", "shared_directory"]


def shared_directory(basetemp: Path) -> Path:
    """Where this session's cache lives (see the module docstring)."""
    shared = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    return shared / "xaytune-trees"


@dataclass(frozen=True)
class CachedRun:
    """A CLI run of the cache: its result and its output tree."""

    result: Result
    out: Path

    def manifest(self) -> dict:
        return json.loads((self.out / "manifest.json").read_text())

    def report(self) -> dict:
        return json.loads((self.out / "comparison" / "report.json").read_text())

    def copy_to(self, directory: Path) -> Path:
        """A private copy of the tree in ``directory`` (safe to change)."""
        copy = directory / self.out.name
        shutil.copytree(self.out, copy, symlinks=True)
        return copy


class TreeCache:
    """Run trees by command line, each made once per session (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._seen: dict[tuple[str, ...], CachedRun] = {}

    def run(self, *overrides: str) -> CachedRun:
        """``python -m xaytune <overrides>`` (``progress=false`` added), made once.

        The experiment's name is read from the tree: the run must write exactly one
        tree under ``experiments/``. A failed run is returned as it is (exit code and
        streams), for the test to report.
        """
        key = (*overrides, "progress=false")
        if key not in self._seen:
            self._seen[key] = self._made(key)
        return self._seen[key]

    def _made(self, key: tuple[str, ...]) -> CachedRun:
        name = hashlib.sha256("\0".join(key).encode()).hexdigest()[:16]
        home = self._root / name
        record = home / "result.json"
        with _locked(self._root / f"{name}.lock"):
            if not record.is_file():
                if home.exists():  # a worker killed half-way: start again
                    shutil.rmtree(home)
                cwd = home / "cwd"
                cwd.mkdir(parents=True)
                result = spawn("xaytune", key, cwd)
                partial = record.with_suffix(".partial")
                partial.write_text(
                    json.dumps(
                        {
                            "args": list(result.args),
                            "returncode": result.returncode,
                            "stdout": result.stdout,
                            "stderr": result.stderr,
                        }
                    )
                )
                partial.replace(record)
        saved = json.loads(record.read_text())
        cwd = home / "cwd"
        result = Result(
            tuple(saved["args"]), cwd, saved["returncode"], saved["stdout"], saved["stderr"]
        )
        trees = sorted(p for p in (cwd / "experiments").glob("*/*") if p.is_dir())
        if result.returncode != 0 or len(trees) != 1:
            raise AssertionError(f"the cached run did not write one tree:\n{result.describe()}")
        return CachedRun(result, trees[0])


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
