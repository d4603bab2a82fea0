"""Fuzz-test fixtures and the two hypothesis profiles.

``xaytune-fuzz`` (default) keeps the whole directory well under a minute;
``XAYTUNE_FUZZ=long python -m pytest tests/fuzz`` runs ``xaytune-fuzz-long``, a hundred
times more examples. Neither profile is loaded globally: the fuzz tests apply theirs
(``_fuzz_support.FUZZ``), so the other property tests keep their own settings.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
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
from _fuzz_support import RawServer, cli_env  # noqa: E402


@pytest.fixture(scope="session")
def quickstart_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real quickstart tree (2 tasks a seed), written once; copy it to change it."""
    cwd = tmp_path_factory.mktemp("fuzz-quickstart")
    done = subprocess.run(
        [sys.executable, "-m", "xaytune", "+experiment=quickstart", "progress=false",
         "sampling.count=1"],
        cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (tree,) = (cwd / "experiments" / "quickstart").iterdir()
    return tree


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
