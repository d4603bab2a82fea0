"""Fuzz-test fixtures and the two hypothesis profiles.

``xaytune-fuzz`` (default) keeps the whole directory well under a minute;
``XAYTUNE_FUZZ=long python -m pytest tests/fuzz`` runs ``xaytune-fuzz-long``, a hundred
times more examples. Neither profile is loaded globally: the fuzz tests apply theirs
(``_fuzz_support.FUZZ``), so the other property tests keep their own settings.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_SLOW_INPUTS = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
    HealthCheck.function_scoped_fixture,
]
settings.register_profile(
    "xaytune-fuzz", max_examples=25, deadline=None, suppress_health_check=_SLOW_INPUTS
)
settings.register_profile(
    "xaytune-fuzz-long", max_examples=2_500, deadline=None, suppress_health_check=_SLOW_INPUTS
)

# After the profiles: the helpers pick theirs when imported.
from _fuzz_support import RawServer  # noqa: E402


@pytest.fixture(scope="session")
def quickstart_tree(tree_cache) -> Path:
    """A small real quickstart tree (2 tasks a seed), written once a session (shared by
    the xdist workers); copy it to change it."""
    return tree_cache.run("+experiment=quickstart", "sampling.count=1").out


@pytest.fixture(scope="session")
def quickstart_manifest(quickstart_tree: Path) -> dict:
    return json.loads((quickstart_tree / "manifest.json").read_bytes())


@pytest.fixture
def tree_copy(quickstart_tree: Path, tmp_path: Path) -> Path:
    copy = tmp_path / quickstart_tree.name
    shutil.copytree(quickstart_tree, copy, symlinks=True)
    return copy


@pytest.fixture(scope="module")
def raw_server():
    server = RawServer()
    try:
        yield server
    finally:
        server.close()
