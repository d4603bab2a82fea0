"""The test suite's own machinery: tiers, the fast tier's spawn guard, in-process entry
points, and the session's shared tree cache (tests/conftest.py, tests/support/)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import entry_runs
import pytest
import tree_cache
from tiers import no_cli_spawn, spawns_an_entry_point, tiers

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    ("args", "started"),
    [
        ([sys.executable, "-m", "xaytune", "--help"], "python -m xaytune"),
        (["python", "-m", "xaytune.verify", "tree"], "python -m xaytune.verify"),
        (["/venv/bin/xaytune", "run"], "the xaytune script"),
        # The library's own workers and other programs are not entry points.
        ([sys.executable, "-m", "xaytune.evaluation.scorers._sandbox_runner"], None),
        (["chromium", "--headless"], None),
        ("ls", None),
    ],
)
def test_an_entry_point_is_told_from_its_command_line(args, started) -> None:
    assert spawns_an_entry_point(args) == started


def _item(path: str, *, fixtures=(), marks=(), module=None) -> SimpleNamespace:
    names = set(marks)
    return SimpleNamespace(
        fspath=TESTS / path,
        nodeid=f"tests/{path}::test_x",
        fixturenames=list(fixtures),
        module=module,
        get_closest_marker=lambda name: name if name in names else None,
    )


def test_tiers_come_from_the_directory_the_fixtures_and_the_marks() -> None:
    assert tiers(_item("core/test_x.py")) == ["unit"]
    assert tiers(_item("test_architecture.py")) == ["unit"]
    assert tiers(_item("test_concepts.py")) == ["unit"]
    assert tiers(_item("test_console.py")) == ["app"]
    assert tiers(_item("test_docs_site.py")) == ["app", "slow"]  # costly: a site build
    assert tiers(_item("app/test_x.py", fixtures=["tmp_path"])) == ["app"]
    assert tiers(_item("app/test_x.py", fixtures=["quickstart_copy"])) == ["app", "slow"]
    assert tiers(_item("bfcl/test_x.py", fixtures=["suite_cache"])) == ["bfcl", "slow"]
    browser = SimpleNamespace(dump_dom=None)
    assert tiers(_item("report/test_x.py", module=browser)) == ["unit", "browser"]
    assert tiers(_item("models/test_x.py", marks=["realmodel"])) == ["unit", "model"]


def test_this_test_is_in_the_fast_unit_tier(request) -> None:
    marks = {mark.name for mark in request.node.iter_markers()}
    assert {"unit", "fast"} <= marks and not {"slow", "app"} & marks


def test_a_fast_test_that_spawns_an_entry_point_fails_naming_it(tmp_path) -> None:
    fast = _item("core/test_x.py", marks=["fast"])
    before = subprocess.Popen.__init__
    with no_cli_spawn(fast), pytest.raises(pytest.fail.Exception, match="python -m xaytune"):
        subprocess.run([sys.executable, "-m", "xaytune", "--help"], cwd=tmp_path, check=False)
    with no_cli_spawn(fast):  # any other program still runs
        assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0
    assert subprocess.Popen.__init__ is before  # put back once the block is done
    slow = _item("app/test_x.py", marks=["slow"])
    outer = subprocess.Popen.__init__  # this (fast) test's own guard
    with no_cli_spawn(slow):  # a slow test may spawn: nothing is patched for it
        assert subprocess.Popen.__init__ is outer


USER_PARTS = '''
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()
'''


def test_an_entry_point_called_in_process_is_put_back_as_it_found_things(tmp_path) -> None:
    (tmp_path / "r1_user_parts.py").write_text(USER_PARTS)
    cwd, argv, path = os.getcwd(), sys.argv[:], sys.path[:]
    handlers = logging.getLogger().handlers[:]
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        result = entry_runs.call(
            "xaytune",
            [
                "+experiment=quickstart",
                "progress=false",
                "candidates.b.tools=[r1_user_parts.shout]",
                "--dry-run",
            ],
            tmp_path,
        )
        assert os.environ["HYDRA_FULL_ERROR"] == "1"  # the run saw it unset; now back
    finally:
        del os.environ["HYDRA_FULL_ERROR"]
    assert result.returncode == 0, result.describe()
    assert "r1_user_parts" not in sys.modules  # the next test's module is its own
    assert (os.getcwd(), sys.argv, sys.path) == (cwd, argv, path)
    assert logging.getLogger().handlers == handlers


def test_an_entry_points_exit_code_and_one_line_come_back(tmp_path) -> None:
    result = entry_runs.call("xaytune.verify", [str(tmp_path / "missing")], tmp_path)
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and result.stdout == ""
    with pytest.raises(ValueError, match="not an entry point"):
        entry_runs.call("xaytune.nope", [], tmp_path)


@pytest.mark.slow  # one quickstart run, in a process of its own
def test_two_workers_asking_for_one_tree_get_one_run(tmp_path, monkeypatch) -> None:
    spawned: list[tuple[str, ...]] = []
    real = tree_cache.spawn

    def counted(module, args, cwd, **options):  # type: ignore[no-untyped-def]
        spawned.append(tuple(args))
        return real(module, args, cwd, **options)

    monkeypatch.setattr(tree_cache, "spawn", counted)
    overrides = ("+experiment=quickstart", "sampling.count=1", "seeds=[1,2]")
    made: list[tree_cache.CachedRun] = []
    workers = [
        threading.Thread(target=lambda: made.append(tree_cache.TreeCache(tmp_path).run(*overrides)))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert spawned == [(*overrides, "progress=false")]
    assert len(made) == 2 and made[0] == made[1]
    assert (made[0].out / "manifest.json").is_file()
    copy = made[0].copy_to(tmp_path / "copy")
    assert (
        copy != made[0].out
        and (copy / "manifest.json").read_bytes() == (made[0].out / "manifest.json").read_bytes()
    )


def test_a_crashed_worker_fails_the_run_at_once(tmp_path: Path) -> None:
    """The project's pytest options (pyproject.toml) under the README's xdist command: a
    test that ends its worker's process fails once and the run ends; the worker is not
    replaced to run it again (pytest-xdist re-runs it on each replacement, and a
    replacement under --dist loadscope can wait forever: its issues 1371 and 1378)."""
    (tmp_path / "test_ok.py").write_text("def test_one():\n    pass\n")
    (tmp_path / "test_crash.py").write_text("import os\n\ndef test_crash():\n    os._exit(1)\n")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"),
            *("--dist", "loadscope", "-c", str(TESTS.parent / "pyproject.toml")),
            *("--rootdir", str(tmp_path), str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout[-2000:]
    assert "1 failed, 1 passed" in done.stdout  # replaced, it would fail again and again


def test_a_test_runs_with_the_signal_handlers_a_users_process_starts_with() -> None:
    """An in-process run arms the runner's watchdog only over Python's default SIGALRM
    handler, as in `python -m xaytune`; pytest-timeout's signal method would hold SIGALRM
    through every test and leave the watchdog off (pyproject.toml: timeout_method)."""
    import signal

    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
