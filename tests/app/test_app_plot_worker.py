"""The plot worker (xaytune.report.plot_worker): a process started with the run that
imports matplotlib while the replicates run and draws the plots at the end (issue 33).

The bytes are :func:`xaytune.report.draw_png`'s, whoever draws them; a worker that cannot
answer costs only the speed (the run's process draws)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xaytune.core.harness_comparison import ComparisonReport
from xaytune.report import PLOT_NAMES, draw_png, plot_png, set_plot_drawer
from xaytune.report.plot_worker import core_is_free, start_plot_worker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, xaytune) -> Path:
    """A quickstart run (its plots drawn by its worker). Never modify it."""
    cwd = tmp_path_factory.mktemp("plot-worker")
    out = cwd / "run"
    done = xaytune(cwd, "+experiment=quickstart", "progress=false", f"hydra.run.dir={out}")
    assert done.returncode == 0, done.describe()
    return out


def _released(tree: Path) -> ComparisonReport:
    return ComparisonReport.model_validate_json((tree / "comparison" / "report.json").read_bytes())


@pytest.fixture
def no_drawer():
    yield
    set_plot_drawer(None)


def test_a_run_writes_the_plots_this_process_draws_byte_for_byte(tree):
    # The run's worker drew them; drawing again here (no worker) gives the same bytes.
    directory = tree / "comparison"
    written = {n: (directory / n).read_bytes() for n in PLOT_NAMES if (directory / n).is_file()}
    assert list(written) == ["paired_differences.png", "success_vs_tokens.png"]
    assert draw_png(_released(tree)) == written


def test_plot_png_asks_the_worker_which_draws_the_same_bytes(tree, no_drawer):
    released = _released(tree)
    worker = start_plot_worker(always=True)
    assert worker is not None
    asked = []

    def drawer(report):
        asked.append(report)
        return worker.draw(report)

    try:
        set_plot_drawer(drawer)
        drawn = plot_png(released)
        again = plot_png(released)  # one worker serves every comparison of a run
    finally:
        worker.close()
    assert len(asked) == 2
    assert drawn == again == draw_png(released)


def test_a_worker_that_is_gone_costs_only_the_speed(tree, no_drawer):
    released = _released(tree)
    worker = start_plot_worker(always=True)
    assert worker is not None
    worker.close()  # killed, as at the end of a run
    assert worker.draw(released) is None
    set_plot_drawer(worker.draw)
    assert plot_png(released) == draw_png(released)  # drawn in this process


def test_a_request_the_worker_cannot_draw_is_answered_none(no_drawer):
    worker = start_plot_worker(always=True)
    assert worker is not None
    try:
        assert worker.draw("not a comparison report") is None  # draw_png raised there
        assert worker.draw("again") is None  # and the worker was closed
    finally:
        worker.close()


def test_no_worker_is_started_when_no_core_is_free(monkeypatch):
    # Load average 2.5 on 2 CPUs: the worker's imports would compete with the run.
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("os.getloadavg", lambda: (2.5, 1.0, 1.0))
    assert core_is_free() is False
    assert start_plot_worker() is None
    monkeypatch.setattr("os.getloadavg", lambda: (1.2, 1.0, 1.0))
    assert core_is_free() is True
    monkeypatch.setattr("os.cpu_count", lambda: 1)  # one CPU: never beside the run
    assert core_is_free() is False


def test_a_run_ends_its_worker_and_gives_the_comparison_and_plots_back_to_its_process(
    tmp_path, xaytune, monkeypatch
):
    # ``main`` called in process (as the Python API's callers and these tests do) must
    # not leave a worker holding scipy and matplotlib behind it, one per run.
    from xaytune.comparison import compare as comparison
    from xaytune.report import _plots, plot_worker

    started = []

    def always(**options):
        worker = start_plot_worker(always=True, **options)
        started.append(worker)
        return worker

    monkeypatch.setattr(plot_worker, "start_plot_worker", always)
    done = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", f"hydra.run.dir={tmp_path}/r"
    )
    assert done.returncode == 0, done.describe()
    assert len(started) == 1 and started[0] is not None
    assert started[0]._process.poll() is not None  # ended with the run, not at exit
    assert comparison._delegate == [] and _plots._drawer == []
