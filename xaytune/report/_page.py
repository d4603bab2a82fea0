"""The report page's data: a released comparison report, structured for a template.

Everything the page shows is computed here from the released ``ComparisonReport``
(the data report.json holds) and the plot bytes; the template only lays it out. A
page holds a list of comparisons so that several challengers (or models) against
one baseline get a summary grid; a run today has one comparison, a vs b.

Sides are named by their candidates, never "A"/"B". The values are strings
formatted as report.md formats them, so the two reports never disagree.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from xaytune.comparison.compare import ComparisonReport, MetricComparison
from xaytune.report._diff import LeafChange, leaf_changes
from xaytune.report._errors import withheld_view
from xaytune.report._marks import Badge, Note
from xaytune.report._plots import PAIRED_PLOT, cost_axis, verdict_label
from xaytune.report._words import (
    SE_ZERO_MARK,
    Sides,
    aa_cell,
    calibration_lines,
    collapsed_line,
    fmt,
    interval_text,
    method_lines,
    optional_stopping_warning,
    power_cell,
    power_text,
    ratio_text,
    reruns_warning,
    seed_only_warning,
    verdict_words,
    why_inconclusive,
)

__all__ = [
    "Badge",
    "ComparisonView",
    "ConditionView",
    "MetricRow",
    "Note",
    "ObjectiveView",
    "PlotView",
    "ReportPage",
    "comparison_view",
    "report_page",
]

# What each comparability condition holds equal (spec: Comparing two candidates).
CONDITIONS = {
    "C1": "the same benchmark cohort (suite digest)",
    "C2": "matched assignments, one replicate per seed on both sides",
    "C3": "equal evaluation fingerprints",
    "C4": "equal declared execution facets",
}


@dataclass(frozen=True, slots=True)
class ObjectiveView:
    """One objective at the top of the page: its verdict and the numbers behind it."""

    metric: str
    direction: str
    min_effect: str
    unit: str
    a_mean: str
    b_mean: str
    ratio: str  # a_mean / b_mean where both are positive, else —
    mean: str
    threshold: str
    interval: str
    replicates: int
    verdict: Badge
    reason: str
    spans_zero: bool
    aa_rate: str
    power_at: str
    present: bool  # False: withheld under aggregate disclosure, or never measured


@dataclass(frozen=True, slots=True)
class DifferenceView:
    item: str
    a: str
    b: str


@dataclass(frozen=True, slots=True)
class ConditionView:
    """One comparability condition (C1–C4): whether it holds, and what differed."""

    condition: str
    what: str
    holds: bool
    reason: str | None
    differences: tuple[DifferenceView, ...]


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One metric's summaries on both sides, its paired differences and verdict."""

    metric: str
    unit: str
    a_mean: str
    a_se: str
    b_mean: str
    b_se: str
    ratio: str
    differences: str
    mean: str
    se: str
    threshold: str
    interval: str
    spans_zero: bool
    verdict: Badge
    reason: str
    objective: bool


@dataclass(frozen=True, slots=True)
class WilsonRow:
    candidate: str
    seed: int
    successes: int
    n: int
    interval: str


@dataclass(frozen=True, slots=True)
class PlotView:
    name: str
    caption: str
    data_uri: str


@dataclass(frozen=True, slots=True)
class ComparisonView:
    """One comparison, everything the page shows of it."""

    a: str
    b: str
    relation: Badge
    relation_words: str
    claim: str
    suite_name: str
    suite_digest: str
    seeds: tuple[int, ...]
    method: str
    k: str
    disclosure: str
    objectives: tuple[ObjectiveView, ...]
    notes: tuple[Note, ...]
    comparable: bool
    comparison_key: str | None
    conditions: tuple[ConditionView, ...]
    timing_status: str
    timing_environment: str
    config_diff: tuple[LeafChange, ...]
    metrics: tuple[MetricRow, ...]  # objectives first; the rest shown folded
    collapsed: str  # the one line standing for the folded rows ("" when none)
    wilson: tuple[WilsonRow, ...]
    withheld: tuple[str, ...]
    plots: tuple[PlotView, ...]
    words: tuple[tuple[str, str], ...]
    model: str | None = None  # the model the comparison ran under, when the run names it
    # The Errors section (xaytune.report._errors.ErrorsView); None: nothing to show.
    errors: Any = None


@dataclass(frozen=True, slots=True)
class ReportPage:
    """A report page: one comparison today; a summary grid is shown above them when
    there are several."""

    title: str
    comparisons: tuple[ComparisonView, ...]
    # The several-challenger summary grid (xaytune.experiment.summary): header, preformatted
    # cells per row (with the p and Holm p columns) and the family-wise lines.
    summary_header: tuple[str, ...] = ()
    summary_rows: tuple[tuple[str, ...], ...] = ()
    summary_notes: tuple[str, ...] = ()


def _value(value: Any) -> str:
    """A config value as compact, sorted JSON."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def _declared(value: Any) -> str:
    """A value one side of a failed condition shows (None: not declared, or not run)."""
    return "— (not declared or not run)" if value is None else _value(value)


def _badge(word: str, report: ComparisonReport) -> Badge:
    return Badge(word, verdict_label(word, report.a.name, report.b.name))


def _objectives(report: ComparisonReport) -> tuple[ObjectiveView, ...]:
    views = []
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        common = {
            "metric": objective.metric,
            "direction": objective.direction,
            "min_effect": fmt(objective.min_effect),
        }
        if metric is None:
            views.append(
                ObjectiveView(
                    **common,
                    unit="",
                    a_mean="—",
                    b_mean="—",
                    ratio="—",
                    mean="—",
                    threshold="—",
                    interval="—",
                    replicates=0,
                    verdict=Badge("withheld", "withheld or absent"),
                    reason="withheld or absent",
                    spans_zero=False,
                    aa_rate="—",
                    power_at="—",
                    present=False,
                )
            )
            continue
        views.append(
            ObjectiveView(
                **common,
                unit=metric.unit or "",
                a_mean=fmt(metric.a.mean),
                b_mean=fmt(metric.b.mean),
                ratio=ratio_text(metric.a.mean, metric.b.mean),
                mean=fmt(metric.mean),
                threshold=fmt(metric.threshold),
                interval=interval_text(metric),
                replicates=len(metric.differences),
                verdict=_badge(metric.verdict, report),
                reason=metric.reason,
                spans_zero=bool(metric.descriptive.interval_spans_zero),
                aa_rate=aa_cell(report, metric),
                power_at=power_cell(metric),
                present=True,
            )
        )
    return tuple(views)


def _notes(report: ComparisonReport, sides: Sides) -> tuple[Note, ...]:
    notes = []
    for text in (seed_only_warning(report), reruns_warning(report, sides)):
        if text is not None:
            notes.append(Note("warning", "Warning", text))
    stopping = optional_stopping_warning(report)
    if stopping is not None:
        notes.append(Note("warning", "Optional stopping", stopping))
    why = why_inconclusive(report)
    if why is not None:
        notes.append(Note("inconclusive", "Why inconclusive", why))
    for line in method_lines(report):
        notes.append(Note("reading", f"Method {report.method}", line))
    if report.looks is not None:
        seen = "; ".join(
            f"look {look.look}: {look.seeds} seeds, {look.method}, {look.relation}"
            for look in report.looks.looks
        )
        notes.append(Note("reading", f"Looks at this tree ({report.looks.count})", seen))
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        if metric is None:
            continue
        if metric.verdict in ("favors-a", "favors-b") and metric.descriptive.interval_spans_zero:
            notes.append(
                Note(
                    "interval",
                    f"{metric.metric}: the 95% interval spans 0",
                    f"the verdict names {sides.a if metric.verdict == 'favors-a' else sides.b}, "
                    f"but the 95% t-interval of the mean difference {interval_text(metric)} "
                    "does not exclude 0: k·se is a narrower bar than that interval at small R.",
                )
            )
        if metric.verdict in ("favors-a", "favors-b") and metric.se == 0:
            notes.append(
                Note(
                    "interval",
                    f"{metric.metric}: {metric.verdict} {SE_ZERO_MARK}",
                    "every seed gave the same difference, so se = 0 and only min_effect "
                    "stood between it and a verdict: the seeds show no noise to judge it by.",
                )
            )
    for line in calibration_lines(report, sides):
        notes.append(Note("calibration", "A/A rate", line))
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        text = power_text(metric) if metric is not None else None
        if text is not None:
            notes.append(Note("power", f"Power, {objective.metric}", text))
    notes.append(
        Note(
            "reading",
            "Reading the figures",
            f"Differences are oriented so that a positive one favours {sides.a}. "
            '"80% power at" ≥ x: the rule calls a true difference of x (or more) at least '
            "80% of the time at this R, taking the observed spread of the per-seed "
            "differences as the true one.",
        )
    )
    return tuple(notes)


def _conditions(report: ComparisonReport) -> tuple[ConditionView, ...]:
    failed = {failure.condition: failure for failure in report.comparability.failures}
    views = []
    for condition, what in CONDITIONS.items():
        failure = failed.get(condition)
        differences = ()
        if failure is not None:
            differences = tuple(
                DifferenceView(
                    d.item,
                    ", ".join(_declared(v) for v in d.a) or "—",
                    ", ".join(_declared(v) for v in d.b) or "—",
                )
                for d in failure.differences
            )
        views.append(
            ConditionView(
                condition,
                what,
                holds=failure is None,
                reason=None if failure is None else failure.reason,
                differences=differences,
            )
        )
    return tuple(views)


def _metric_row(report: ComparisonReport, name: str, metric: MetricComparison) -> MetricRow:
    return MetricRow(
        metric=name,
        unit=metric.unit or "",
        a_mean=fmt(metric.a.mean),
        a_se=fmt(metric.a.execution_se),
        b_mean=fmt(metric.b.mean),
        b_se=fmt(metric.b.execution_se),
        ratio=ratio_text(metric.a.mean, metric.b.mean),
        differences=", ".join(fmt(d.difference) for d in metric.differences) or "—",
        mean=fmt(metric.mean),
        se=fmt(metric.se),
        threshold=fmt(metric.threshold),
        interval=interval_text(metric),
        spans_zero=bool(metric.descriptive.interval_spans_zero),
        verdict=_badge(metric.verdict, report),
        reason=metric.reason,
        objective=metric.objective is not None,
    )


def _plots(report: ComparisonReport, images: dict[str, bytes]) -> tuple[PlotView, ...]:
    a, b = report.a.name, report.b.name
    captions = {
        PAIRED_PLOT: f"Per objective: each seed's paired difference (positive favours {a}, "
        f"negative favours {b}), the mean with its 95% t-interval, and the rule's "
        "threshold ±max(min_effect, k·se).",
    }
    axis = cost_axis(report)
    if axis is not None:
        unit = "dollars" if axis[0] == "cost" else "total tokens (no cost in dollars recorded)"
        captions[axis[2]] = (
            f"Task success rate against mean cost per task, one point per replicate of "
            f"{a} and of {b}; cost in {unit}."
        )
    return tuple(
        PlotView(
            name,
            captions.get(name, name),
            "data:image/png;base64," + base64.b64encode(data).decode(),
        )
        for name, data in images.items()
    )


def comparison_view(
    report: ComparisonReport,
    images: dict[str, bytes],
    *,
    model: str | None = None,
    errors: dict[str, Any] | None = None,
) -> ComparisonView:
    """The page's view of one released comparison and its plots (name -> PNG bytes);
    ``model`` names the model it ran under (a run with several models has a page per
    model, and each must say which); ``errors``: the run's errors.json data, for the
    Errors section and a withheld comparison (xaytune.report._errors)."""
    sides = Sides.names(report)
    # Objectives first; every other metric (not compared) is folded behind one line.
    ordered = sorted(report.metrics.items(), key=lambda item: (item[1].objective is None, item[0]))
    folded = [metric for _, metric in ordered if metric.objective is None]
    comparability = report.comparability
    wilson = tuple(
        WilsonRow(
            report.a.name if run.side == "a" else report.b.name,
            run.seed,
            run.successes,
            run.n,
            f"[{run.low:.4f}, {run.high:.4f}]",
        )
        for metric in (report.metrics.get("task_success"),)
        if metric is not None
        for run in metric.descriptive.wilson
    )
    words = verdict_words(sides)
    view = ComparisonView(
        a=report.a.name,
        b=report.b.name,
        relation=_badge(report.relation, report),
        relation_words=words[report.relation],
        claim=report.claim,
        suite_name=report.suite.name,
        suite_digest=report.suite.digest,
        seeds=tuple(report.seeds),
        method=report.method,
        k=f"{report.spec.k:g}",
        disclosure=report.spec.disclosure,
        objectives=_objectives(report),
        notes=_notes(report, sides),
        comparable=comparability.comparable,
        comparison_key=comparability.comparison_key,
        conditions=_conditions(report),
        timing_status=comparability.timing.status,
        timing_environment=str(comparability.timing.environment),
        config_diff=leaf_changes(report.config_diff),
        metrics=tuple(_metric_row(report, name, metric) for name, metric in ordered),
        collapsed=collapsed_line(folded) if folded else "",
        wilson=wilson,
        withheld=tuple(report.withheld),
        plots=_plots(report, images),
        words=tuple(words.items()),
        model=model,
    )
    return withheld_view(view, report, errors)


def report_page(comparisons: tuple[ComparisonView, ...]) -> ReportPage:
    """A page over ``comparisons`` (one per challenger; one today)."""
    if len(comparisons) == 1:
        only = comparisons[0]
        title = f"{only.a} vs {only.b}"
    else:
        title = f"{len(comparisons)} comparisons"
    model = comparisons[0].model if comparisons else None
    if model is not None:
        title += f", model {model}"
    return ReportPage(title=title, comparisons=comparisons)
