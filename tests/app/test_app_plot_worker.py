"""The plot worker (xaytune.report.plot_worker): a process started with the run that
imports matplotlib while the replicates run and draws the plots at the end (issue 33).

The bytes are :func:`xaytune.report.draw_png`'s, whoever draws them; a worker that cannot
answer costs only the speed (the run's process draws)."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import pytest

from xaytune.comparison.compare import compare_here
from xaytune.core.harness_comparison import ComparisonReport
from xaytune.report import PLOT_NAMES, draw_png, plot_png, set_plot_drawer
from xaytune.report.plot_worker import (
    core_is_free,
    draw_in_two,
    hand_over,
    start_plot_worker,
    take_handed,
)

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


def test_the_worker_warmed_up_draws_what_a_fresh_process_draws(tree, no_drawer):
    # The worker draws a throw-away figure before its first request; a process that
    # never drew anything must make the same bytes.
    import subprocess

    fresh = tree.parent / "fresh-plots.bin"
    code = (
        "import pickle, sys; from pathlib import Path;"
        "from xaytune.core.harness_comparison import ComparisonReport;"
        "from xaytune.report import draw_png;"
        "r = ComparisonReport.model_validate_json(Path(sys.argv[1]).read_bytes());"
        "Path(sys.argv[2]).write_bytes(pickle.dumps(draw_png(r)))"
    )
    report = tree / "comparison" / "report.json"
    subprocess.run([sys.executable, "-c", code, str(report), str(fresh)], check=True)
    worker = start_plot_worker(always=True)
    assert worker is not None
    try:
        drawn = worker.draw(_released(tree))
    finally:
        worker.close()
    assert drawn == pickle.loads(fresh.read_bytes())


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
    from xaytune.comparison import delegate as comparison
    from xaytune.report import _plots, plot_worker

    started = []
    starters = []

    def always(**options):
        worker = start_plot_worker(always=True, **options)
        started.append(worker)
        starters.append(sys._getframe(1).f_code.co_name)
        return worker

    monkeypatch.setattr(plot_worker, "start_plot_worker", always)
    done = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", f"hydra.run.dir={tmp_path}/r"
    )
    assert done.returncode == 0, done.describe()
    assert len(started) == 1 and started[0] is not None
    # Started by the command line before Hydra composed, and taken by the run.
    assert starters == ["_start_worker"]
    assert take_handed() is None
    assert started[0]._process.poll() is not None  # ended with the run, not at exit
    assert comparison._delegate == comparison._ahead == [] and _plots._drawer == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--cfg", "job", "+experiment=quickstart"],
        ["-m", "+experiment=quickstart", "seed=1,2"],
        ["+experiment=quickstart", "--dry-run"],
        ["+experiment=quickstart", "dry_run=true"],
    ],
)
def test_the_command_line_starts_no_worker_when_nothing_will_be_drawn(argv, monkeypatch):
    from xaytune.app import cli
    from xaytune.report import plot_worker

    started = []
    monkeypatch.setattr(plot_worker, "start_plot_worker", lambda **o: started.append(o))
    assert cli._start_worker(argv) is None
    assert started == []
    assert take_handed() is None


def test_a_refused_run_ends_the_worker_the_command_line_started(tmp_path, xaytune, monkeypatch):
    from xaytune.report import plot_worker

    started = []

    def always(**options):
        started.append(start_plot_worker(always=True, **options))
        return started[-1]

    monkeypatch.setattr(plot_worker, "start_plot_worker", always)
    done = xaytune(tmp_path, "+experiment=no-such-experiment", f"hydra.run.dir={tmp_path}/r")
    assert done.returncode == 2, done.describe()
    assert "no-such-experiment" in done.stderr
    assert len(started) == 1 and started[0] is not None
    assert started[0]._process.poll() is not None  # refused before the run took it: ended
    assert take_handed() is None


def test_a_dry_run_set_in_the_config_ends_the_worker_it_is_handed():
    from hydra.types import RunMode

    from xaytune.app.main import _helper_process

    worker = start_plot_worker(always=True)
    assert worker is not None
    hand_over(worker)
    with _helper_process(RunMode.RUN, dry_run=True):
        assert worker._process.poll() is not None  # nothing is drawn: ended at once
    assert take_handed() is None


def test_a_handed_worker_that_is_gone_is_not_taken():
    worker = start_plot_worker(always=True)
    assert worker is not None
    worker._process.kill()
    worker._process.wait()
    hand_over(worker)
    assert take_handed() is None


def test_drawing_in_two_processes_gives_draw_pngs_bytes(tree):
    released = _released(tree)
    drawn = draw_in_two(released)
    assert list(drawn) == ["paired_differences.png", "success_vs_tokens.png"]
    assert drawn == draw_png(released)


def test_drawing_in_two_falls_back_to_this_process(tree, monkeypatch):
    # No copy of the process can be made: everything is drawn here.
    released = _released(tree)
    expected = draw_png(released)

    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")

    with monkeypatch.context() as patch:
        patch.setattr("os.fork", no_fork)
        assert draw_in_two(released) == expected
    # The copy fails to draw (it exits 1): this process draws what it did not send.
    from xaytune.report import _plots

    parent = os.getpid()
    real = _plots.plot_drawings

    def failing_in_the_copy(report):
        def only_here(draw):
            def checked():
                if os.getpid() != parent:
                    raise RuntimeError("the copy fails")
                return draw()

            return checked

        return [(name, only_here(draw)) for name, draw in real(report)]

    monkeypatch.setattr(_plots, "plot_drawings", failing_in_the_copy)
    assert draw_in_two(released) == expected


def test_the_worker_answers_a_draw_of_another_report_with_that_reports_plots(tree):
    # The worker draws a comparison's plots as soon as it sends the report back; asked
    # for another report's, it draws that one (never the plots it drew ahead).
    from xaytune.comparison.compare import SuiteName
    from xaytune.experiment.tree.gather import gather_candidates

    report = ComparisonReport.model_validate_json(
        (tree / "comparison" / "report.restricted.json").read_bytes()
    )
    candidates = {runs.name: runs for runs in gather_candidates(tree).values()}
    a, b = candidates[report.a.name], candidates[report.b.name]
    suite = SuiteName(name=report.suite.name, digest=report.suite.digest)
    swapped = compare_here(b, a, report.spec, suite).released()
    worker = start_plot_worker(always=True)
    assert worker is not None
    try:
        compared = worker.compare(a, b, report.spec, suite)
        assert compared is not None
        assert worker.draw(swapped) == draw_png(swapped)  # not the plots drawn ahead
        assert worker.draw(compared.released()) == draw_png(compared.released())
    finally:
        worker.close()
    assert draw_png(swapped) != draw_png(compared.released())


def test_the_worker_renders_the_pages_this_process_renders_byte_for_byte(tree, no_drawer):
    import json

    from xaytune.report._files import rendered_reports_here

    directory = tree / "comparison"
    released = _released(tree)
    images = {n: (directory / n).read_bytes() for n in PLOT_NAMES if (directory / n).is_file()}
    errors = json.loads((directory / "errors.json").read_bytes())
    here = rendered_reports_here(released, images, model="simulated", errors=errors)
    assert set(here) == {"report.md", "report.html"}
    for draw in (True, False):  # a run's worker and an audit's
        worker = start_plot_worker(always=True, draw=draw)
        assert worker is not None
        try:
            assert worker.render(released, images, "simulated", errors) == here
            assert worker.render("not a report", images, None, None) is None  # refused
            assert worker.render(released, images, "simulated", errors) == here  # still there
        finally:
            worker.close()
    gone = start_plot_worker(always=True, draw=False)
    assert gone is not None
    gone.close()
    assert gone.render(released, images, "simulated", errors) is None


def test_rendered_reports_asks_the_renderer_and_renders_here_when_it_cannot(tree):
    import json

    from xaytune.report import rendered_reports, set_report_renderer
    from xaytune.report._files import rendered_reports_here

    directory = tree / "comparison"
    released = _released(tree)
    images = {n: (directory / n).read_bytes() for n in PLOT_NAMES if (directory / n).is_file()}
    errors = json.loads((directory / "errors.json").read_bytes())
    here = rendered_reports_here(released, images, model="m", errors=errors)
    asked = []

    def unable(*arguments):
        asked.append(arguments)
        return None

    try:
        set_report_renderer(unable)
        assert rendered_reports(released, images, model="m", errors=errors) == here
        assert asked == [(released, images, "m", errors)]
        set_report_renderer(lambda *arguments: {"report.md": b"theirs"})
        assert rendered_reports(released, images, model="m", errors=errors) == {
            "report.md": b"theirs"
        }
    finally:
        set_report_renderer(None)
