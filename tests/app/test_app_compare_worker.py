"""The comparison computed by the worker process (xaytune.report.plot_worker, issue 33):
scipy imported there while the run (or the audit) does other work.

The worker runs :func:`xaytune.comparison.compare.compare_here`, the function the run's
own process runs without it; these tests hold it to the same report, byte for byte in
its canonical form, under each method, and to the same refusals (a refused comparison is
answered None: the caller compares, and refuses, itself)."""

from __future__ import annotations

import pytest

from xaytune.comparison.compare import (
    TASK_PAIRED,
    ComparisonReport,
    ComparisonSpec,
    ObjectiveMetric,
    SuiteName,
    compare,
    compare_ahead,
    compare_here,
    set_compare_delegate,
)
from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import ComparisonError
from xaytune.experiment.tree.gather import gather_candidates
from xaytune.report import plot_worker
from xaytune.report.plot_worker import start_plot_worker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def inputs(quickstart):
    """(baseline runs, challenger runs, the spec and suite the quickstart compared)."""
    report = ComparisonReport.model_validate_json(
        (quickstart.out / "comparison" / "report.json").read_bytes()
    )
    candidates = {runs.name: runs for runs in gather_candidates(quickstart.out).values()}
    suite = SuiteName(name=report.suite.name, digest=report.suite.digest)
    return candidates[report.a.name], candidates[report.b.name], report.spec, suite


@pytest.fixture(scope="module")
def worker():
    started = start_plot_worker(always=True, draw=False)
    assert started is not None
    yield started
    started.close()


@pytest.fixture
def no_delegate():
    yield
    set_compare_delegate(None)


def _specs(spec: ComparisonSpec) -> list[ComparisonSpec]:
    """The quickstart's spec, calibrated by simulation, and under task-paired/v1: the
    t and normal quantiles, the power integrals and root finding, the simulation."""
    return [
        spec,
        spec.model_copy(update={"calibrate": True}),
        spec.model_copy(update={"method": TASK_PAIRED}),
    ]


def test_the_worker_gives_the_report_this_process_computes_byte_for_byte(inputs, worker):
    a, b, spec, suite = inputs
    for each in _specs(spec):
        here = compare_here(a, b, each, suite)
        there = worker.compare(a, b, each, suite)
        assert isinstance(there, ComparisonReport)
        assert canonical_bytes(there) == canonical_bytes(here)
        assert canonical_bytes(there.released()) == canonical_bytes(here.released())


def test_compare_asks_the_delegate_and_gets_the_same_report(inputs, worker, no_delegate):
    a, b, spec, suite = inputs
    asked = []

    def delegate(*arguments):
        asked.append(arguments)
        return worker.compare(*arguments)

    set_compare_delegate(delegate)
    report = compare(a, b, spec, suite)
    assert len(asked) == 1
    assert asked[0][3] == suite  # only the suite's name and digest are sent
    assert canonical_bytes(report) == canonical_bytes(compare_here(a, b, spec, suite))


def test_a_refused_comparison_is_refused_here_with_its_reason(inputs, worker, no_delegate):
    a, b, spec, suite = inputs
    unknown = spec.model_copy(
        update={"objectives": (ObjectiveMetric(metric="no_such_metric", direction="maximize"),)}
    )
    assert worker.compare(a, b, unknown, suite) is None  # the worker refused
    set_compare_delegate(worker.compare)
    with pytest.raises(ComparisonError) as refused:
        compare(a, b, unknown, suite)
    assert refused.value.reason == "unknown-metric"
    # The worker is still there for the next comparison (and the plots).
    again = worker.compare(a, b, spec, suite)
    assert again is not None
    assert canonical_bytes(again) == canonical_bytes(compare_here(a, b, spec, suite))


def test_a_worker_that_is_gone_costs_only_the_speed(inputs, no_delegate):
    a, b, spec, suite = inputs
    gone = start_plot_worker(always=True, draw=False)
    assert gone is not None
    gone.close()
    assert gone.compare(a, b, spec, suite) is None
    set_compare_delegate(gone.compare)
    assert canonical_bytes(compare(a, b, spec, suite)) == canonical_bytes(
        compare_here(a, b, spec, suite)
    )


def test_runs_too_large_to_send_are_compared_here(inputs, worker, no_delegate, monkeypatch):
    # The quickstart holds 20 tasks x 2 metrics x 3 seeds per candidate: 240 observations
    # (counted by hand from its report's task differences and seeds).
    a, b, spec, suite = inputs
    assert plot_worker._observations(a) + plot_worker._observations(b) == 240
    monkeypatch.setattr(plot_worker, "MAX_SENT_OBSERVATIONS", 239)
    assert worker.compare(a, b, spec, suite) is None  # not sent
    set_compare_delegate(worker.compare)
    assert canonical_bytes(compare(a, b, spec, suite)) == canonical_bytes(
        compare_here(a, b, spec, suite)
    )
    monkeypatch.setattr(plot_worker, "MAX_SENT_OBSERVATIONS", 240)
    assert worker.compare(a, b, spec, suite) is not None  # sent


def test_a_comparison_sent_ahead_is_collected_whatever_its_size(
    inputs, worker, no_delegate, monkeypatch
):
    # Sent ahead, the runs go whatever MAX_SENT_OBSERVATIONS says: the worker computes
    # them while the caller does other work (the audit verifying the attempts).
    a, b, spec, suite = inputs
    monkeypatch.setattr(plot_worker, "MAX_SENT_OBSERVATIONS", 0)
    set_compare_delegate(worker.compare, ahead=worker.compare_ahead)
    compare_ahead(a, b, spec, suite)
    assert len(worker._ahead) == 1
    report = compare(a, b, spec, suite)  # collected from the worker
    assert worker._ahead == []
    assert canonical_bytes(report) == canonical_bytes(compare_here(a, b, spec, suite))
    assert worker.compare(a, b, spec, suite) is None  # asked now: too large to send


def test_a_reply_sent_ahead_for_other_runs_is_never_taken_for_these(inputs, worker, no_delegate):
    a, b, spec, suite = inputs
    calibrated = spec.model_copy(update={"calibrate": True})
    worker.compare_ahead(a, b, spec, suite)
    worker.compare_ahead(b, a, spec, suite)
    # Another spec, then the swapped runs: each gets its own report, and the replies
    # to what was sent ahead are read (and dropped) on the way.
    here = compare_here(a, b, calibrated, suite)
    assert canonical_bytes(worker.compare(a, b, calibrated, suite)) == canonical_bytes(here)
    assert worker._ahead == []
    swapped = worker.compare(b, a, spec, suite)
    assert canonical_bytes(swapped) == canonical_bytes(compare_here(b, a, spec, suite))
    # Equal runs that are other objects are not the runs sent ahead either.
    copy_of_a = a.model_copy(deep=True)
    worker.compare_ahead(copy_of_a, b, spec, suite)
    assert worker.compare(a, b, spec, suite) is not None  # answered by a new request
    assert worker._ahead == []


def test_without_a_delegate_nothing_is_sent_ahead(inputs, no_delegate):
    a, b, spec, suite = inputs
    compare_ahead(a, b, spec, suite)  # no delegate: nothing to do, nothing raised
    assert canonical_bytes(compare(a, b, spec, suite)) == canonical_bytes(
        compare_here(a, b, spec, suite)
    )


def test_a_drawing_worker_reads_replies_sent_ahead_before_drawing(inputs, quickstart):
    from xaytune.report import draw_png

    a, b, spec, suite = inputs
    drawing = start_plot_worker(always=True)
    assert drawing is not None
    try:
        drawing.compare_ahead(a, b, spec, suite)
        released = ComparisonReport.model_validate_json(
            (quickstart.out / "comparison" / "report.json").read_bytes()
        )
        assert drawing.draw(released) == draw_png(released)
    finally:
        drawing.close()


def test_the_audit_sends_the_comparison_ahead_and_collects_it(quickstart, no_delegate):
    # audit_tree starts each comparison before it verifies the attempts, and compares
    # the very runs it sent.
    from xaytune.audit.verify import audit_tree

    sent, asked = [], []

    def ahead(*arguments):
        sent.append(arguments)

    def delegate(*arguments):
        asked.append(arguments)
        return None  # compared here

    set_compare_delegate(delegate, ahead=ahead)
    problems, _, _ = audit_tree(quickstart.out)
    assert problems == []
    assert len(sent) == len(asked) == 1
    assert sent[0][0] is asked[0][0] and sent[0][1] is asked[0][1]
    assert sent[0][2:] == asked[0][2:]
