"""Session-wide test settings, the test tiers, and the shared cache of run trees.

The evidence cache is off unless a test turns it on, and any cache a test uses lives in
the session's temporary directory, never in the user's cache home (XDG_CACHE_HOME).

Tiers (markers given here, from where a test lives and what it uses, so a test file
rarely names one; ``--strict-markers`` refuses any other):

- ``unit``: a room's library tested in this process (every directory but app/ and bfcl/,
  and the top-level tests but those of the app tier);
- ``app``: the command line, the run tree, the docs and README commands (tests/app/,
  and tests/test_{console,docs_commands,docs_site,readme_parts}.py);
- ``slow``: whole experiments or processes (a test marked so, or using a fixture that
  runs the CLI or reads a run tree it made), and the few unit tests that cost seconds
  each (listed in tests/support/tiers.py);
- ``browser``: needs chromium (a module driving it: dump_dom, screenshot, open_browser);
- ``model``: needs the local model (the ``realmodel`` tests);
- ``bfcl``: needs the BFCL data (tests/bfcl/);
- ``fast``: everything that is none of slow, browser, model, bfcl: the tier a developer
  runs on every change (``python -m pytest -m fast -n 4``: four workers even on two
  cores, as many fast tests wait on a deadline or a server). A fast test never spawns a
  command-line entry point (a guard fails it): a CLI behaviour that needs a process
  belongs to a slow test.

A plain ``python -m pytest`` runs every tier.
"""

from __future__ import annotations

import os
import tempfile

import pytest
from tiers import OUTSIDE_FAST, no_cli_spawn, tiers
from tree_cache import TreeCache, shared_directory


def pytest_configure(config) -> None:
    os.environ["XAYTUNE_CACHE_MODE"] = "off"
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="xaytune-test-cache-")


def pytest_collection_modifyitems(config, items: list[pytest.Item]) -> None:
    """Give every test its tiers (see the module docstring)."""
    for item in items:
        for tier in tiers(item):
            if item.get_closest_marker(tier) is None:
                item.add_marker(tier)
        if not any(item.get_closest_marker(tier) for tier in OUTSIDE_FAST):
            item.add_marker("fast")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):  # type: ignore[no-untyped-def]
    with no_cli_spawn(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):  # type: ignore[no-untyped-def]
    with no_cli_spawn(item):
        return (yield)


@pytest.fixture(scope="session")
def tree_cache(tmp_path_factory: pytest.TempPathFactory) -> TreeCache:
    """The session's run trees by command line, shared by the xdist workers
    (``tree_cache.run("+experiment=quickstart")``); never change one: copy it."""
    return TreeCache(shared_directory(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="module")
def machine_to_itself(tmp_path_factory):
    """Held for a whole module by the tests whose 1 s deadlines need the machine's cores
    (the watchdog's) and by the tests that load it most (a real llama.cpp server): under
    xdist the two never run at the same time. An exclusive ``fcntl.flock`` on a file the
    workers share (:func:`tree_cache.shared_directory`)."""
    import fcntl

    from tree_cache import shared_directory

    directory = shared_directory(tmp_path_factory.getbasetemp())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "machine-to-itself.lock"
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
