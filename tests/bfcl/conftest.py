"""The BFCL tests need the [bfcl] extra (``bash scripts/setup-bfcl.sh``).

Without it they skip with that hint; with ``CI=true`` (or ``XAYTUNE_REQUIRE_BFCL=1``)
they fail instead, so a broken install step cannot pass as a green run (as the
realmodel tests do for the local model). The suites are built once per session into a
temporary cache (``XAYTUNE_SUITE_CACHE``, inherited by the CLI subprocesses).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import SuiteError


def _require_bfcl() -> None:
    from xaytune.suites.bfcl import require_bfcl

    try:
        require_bfcl()
    except SuiteError as error:
        message = f"BFCL is not installed ({error})"
        if os.environ.get("XAYTUNE_REQUIRE_BFCL") == "1" or os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def suite_cache(tmp_path_factory) -> Path:
    _require_bfcl()
    cache = tmp_path_factory.mktemp("suite-cache")
    previous = os.environ.get("XAYTUNE_SUITE_CACHE")
    os.environ["XAYTUNE_SUITE_CACHE"] = str(cache)
    yield cache
    if previous is None:
        os.environ.pop("XAYTUNE_SUITE_CACHE", None)
    else:
        os.environ["XAYTUNE_SUITE_CACHE"] = previous


@pytest.fixture(scope="session")
def multi_turn(suite_cache: Path) -> SuiteSource:
    """bfcl-multi-turn-base, built from the installed wheel."""
    from xaytune.suites import builtin_suite_path

    return SuiteSource(builtin_suite_path("bfcl-multi-turn-base"))


@pytest.fixture(scope="session")
def simple_python(suite_cache: Path) -> SuiteSource:
    """bfcl-simple-python, built from the installed wheel."""
    from xaytune.suites import builtin_suite_path

    return SuiteSource(builtin_suite_path("bfcl-simple-python"))


@pytest.fixture(scope="session")
def bfcl_source(suite_cache: Path):
    """A BFCL suite by name (``bfcl-multiple``), built once per session."""
    from xaytune.suites import builtin_suite_path

    built: dict[str, SuiteSource] = {}

    def source(name: str) -> SuiteSource:
        if name not in built:
            built[name] = SuiteSource(builtin_suite_path(name))
        return built[name]

    return source
