"""The quickstart, run once for the report and viewer tests, as a user runs it; the
entry points run in this process (``entry_runs.call``), as the app tests run them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from entry_runs import REPO_ROOT, Result, call
from tree_cache import TreeCache

__all__ = ["REPO_ROOT", "run_module"]


def run_module(args: Sequence[str], cwd: Path, *, timeout: float = 240) -> Result:
    """``python -m <args>`` in ``cwd``, run in this process (the exit code and both
    streams, as a subprocess would give them; ``timeout`` is pytest-timeout's here)."""
    module, *rest = args
    return call(module, rest, cwd)


@pytest.fixture(scope="session")
def quickstart_tree(tree_cache: TreeCache) -> Path:
    """The quickstart's output tree (progress bars off), the session's shared one (the
    app tests' ``quickstart``). Never modify it: copy it."""
    return tree_cache.run("+experiment=quickstart").out
