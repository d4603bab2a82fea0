"""The quickstart, run once for the report and viewer tests, as a user runs it (the
entry points run in this process: ``entry_runs.run_module``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tree_cache import TreeCache


@pytest.fixture(scope="session")
def quickstart_tree(tree_cache: TreeCache) -> Path:
    """The quickstart's output tree (progress bars off), the session's shared one (the
    app tests' ``quickstart``). Never modify it: copy it."""
    return tree_cache.run("+experiment=quickstart").out
