"""Test helper (tests/support is on pytest's pythonpath): the tiers of the test suite
and the fast tier's guard, used by tests/conftest.py (whose docstring says what each
tier holds)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from entry_runs import ENTRY_POINTS

__all__ = ["OUTSIDE_FAST", "no_cli_spawn", "spawns_an_entry_point", "tiers"]

TESTS = Path(__file__).resolve().parents[1]

# The fixtures that run the CLI, hand a test a tree a CLI run made, or run whole
# experiments through the library (api_run, extended, withheld_run).
_SLOW_FIXTURES = frozenset(
    {
        "api_run",
        "extended",
        "withheld_run",
        "xaytune",
        "xaytune_process",
        "cli",
        "cli_compare",
        "cli_env",
        "cli_runs",
        "interrupted",
        "tree_cache",
        "quickstart",
        "quickstart_copy",
        "quickstart_tree",
        "quickstart_manifest",
        "tree_copy",
        "suite_cache",
    }
)
# Tests that start an entry point in a process of their own (the installed script, a
# fuzzed suite source through the suites CLI) but use none of those fixtures.
_SPAWNING_TESTS = (
    "tests/test_console.py::test_installed_script_runs_hydra_help",
    "tests/fuzz/test_fuzz_suites.py::test_the_suites_cli_answers_a_fuzzed_source_in_one_line",
)
# Tests of the unit tier that cost seconds each (measured with --durations on 2 cores):
# property sweeps of thousands of examples, A/A calibrations, a type check, a site build,
# a fingerprint taken in other interpreters, a CPU-time limit waited out. They run in
# the full run; the fast tier leaves them out to stay within a minute.
_COSTLY_TESTS = (
    "tests/core/test_canonical_fastpath.py::",
    "tests/core/test_comparison_properties.py::",
    "tests/core/test_comparison_calibration.py::test_reported_aa_rates_match_the_rate",
    "tests/core/test_comparison_iteration.py::test_family_rate_on_a_lattice_is_the_brute",
    "tests/core/test_comparison_stats.py::test_pass_hat_k_is_the_mean_over_tasks",
    "tests/harness/test_seal_form.py::test_seal_problem_accepts_exactly_what_strict",
    "tests/harness/test_verify_as_claimed.py::test_the_fast_path_takes_the_written_file",
    "tests/harness/test_compile.py::test_fingerprint_is_the_same_in_other_processes",
    "tests/evaluation/test_sandbox.py::test_an_infinite_loop_times_out_on_cpu_time",
    "tests/plugins/test_registry.py::test_every_config_model_kind_is_a_builtin_model_name",
    "tests/plugins/test_registry.py::test_the_layers_point_one_way",
    "tests/fuzz/test_fuzz_suites.py::test_python_records_are_built_or_refused_in_one_line",
    "tests/test_typing.py::",
    "tests/test_docs_site.py::",
)
_BROWSER_NAMES = ("dump_dom", "screenshot", "open_browser")
# Top-level test modules of the app tier (the commands, the docs pages, the README); the
# other top-level modules (architecture, concepts, spec paths, typing ...) are unit.
_APP_TOP_LEVEL = frozenset(
    {"test_console.py", "test_docs_commands.py", "test_docs_site.py", "test_readme_parts.py"}
)
OUTSIDE_FAST = ("slow", "browser", "model", "bfcl")


def tiers(item: pytest.Item) -> list[str]:
    """The tiers of ``item``: where it lives (unit, app or bfcl), then slow, browser,
    model as its fixtures, module and marks say (``fast`` is what is left)."""
    path = Path(str(item.fspath)).resolve()
    parts = path.relative_to(TESTS).parts
    found = []
    if parts[0] == "bfcl":
        found.append("bfcl")
    elif parts[0] == "app" or parts[0] in _APP_TOP_LEVEL:
        found.append("app")
    else:
        found.append("unit")
    if _SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())) or any(
        item.nodeid.startswith(test) for test in _SPAWNING_TESTS + _COSTLY_TESTS
    ):
        found.append("slow")
    module = getattr(item, "module", None)
    if module is not None and any(hasattr(module, name) for name in _BROWSER_NAMES):
        found.append("browser")
    if item.get_closest_marker("realmodel") is not None:
        found.append("model")
    return found


def spawns_an_entry_point(args: object) -> str | None:
    """The entry point ``args`` (a Popen argument list) starts, or None."""
    if isinstance(args, (str, bytes, os.PathLike)):
        words = [os.fsdecode(args)]
    else:
        words = [os.fsdecode(word) for word in args]  # type: ignore[union-attr]
    for i, word in enumerate(words[:-1]):
        if word == "-m" and words[i + 1] in ENTRY_POINTS:
            return f"python -m {words[i + 1]}"
    if words and os.path.basename(words[0]) == "xaytune":
        return "the xaytune script"
    return None


@contextlib.contextmanager
def no_cli_spawn(item: pytest.Item) -> Iterator[None]:
    """While a fast test is set up or runs (its module and session fixtures too), a
    subprocess starting an entry point fails the test, naming it: the fast tier starts
    no interpreter of ours (call it in-process with ``entry_runs.call``, or mark the test
    slow)."""
    if item.get_closest_marker("fast") is None:
        yield
        return
    real_init = subprocess.Popen.__init__

    def guarded(self, args, *rest, **options):  # type: ignore[no-untyped-def]
        started = spawns_an_entry_point(args)
        if started is not None:
            pytest.fail(f"a fast test spawned {started}: call it in-process or mark it slow")
        real_init(self, args, *rest, **options)

    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real_init  # type: ignore[method-assign]
