"""The plots of a comparison, drawn with matplotlib (Agg) as PNG bytes.

Both plots name the sides by their candidates. ``paired_differences.png``: per
objective, each seed's oriented difference (positive favours the first candidate),
the mean with its 95% t-interval and the rule's threshold ±max(min_effect, k·se).
The success-vs-cost plot: each replicate's task success rate against its mean cost
per task, with each candidate's Pareto front across its seeds (the replicates no other
of its replicates beats on both) — in dollars (``success_vs_cost.png``) when the
report has the ``cost`` metric with a value on every replicate, else in total tokens
(``success_vs_tokens.png``). PNGs carry no timestamp or software chunk: the same
report gives the same bytes on the same matplotlib.

matplotlib is imported when the first plot is drawn, and only its figure and Agg
canvas: pyplot (its figure manager, backend switching and state) is not needed to
write a PNG and costs ~0.4 s more to import; the bytes are the same. A run may hand
the drawing to another process that imported matplotlib while the replicates ran
(:func:`set_plot_drawer`, :mod:`xaytune.report.plot_worker`): :func:`plot_png` then asks
it, and draws here when it cannot answer. Either way the bytes are :func:`draw_png`'s.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

from xaytune.comparison.compare import ComparisonReport, MetricComparison

__all__ = [
    "PAIRED_PLOT",
    "PLOT_NAMES",
    "cost_axis",
    "draw_png",
    "pareto_front",
    "plot_drawings",
    "plot_png",
    "set_plot_drawer",
    "verdict_label",
    "warm_up",
]

PAIRED_PLOT = "paired_differences.png"
# Every plot a comparison may have, in the order they are drawn (and listed in
# report.md); the success plot is one of the last two, by cost_axis.
PLOT_NAMES = (PAIRED_PLOT, "success_vs_tokens.png", "success_vs_cost.png")
_COLORS = ("#3b6ea8", "#d9822b")


def verdict_label(verdict: str, a: str, b: str) -> str:
    """A verdict word with the side it favours named: "favors calculator"."""
    return {"favors-a": f"favors {a}", "favors-b": f"favors {b}"}.get(verdict, verdict)


def cost_axis(report: ComparisonReport) -> tuple[str, str, str] | None:
    """(metric, axis label, plot name) of the success-vs-cost plot, None without one.

    Dollars when ``cost`` has a value on every replicate of both sides, else total
    tokens (never a mix, never a missing value read as zero)."""
    if "task_success" not in report.metrics:
        return None
    cost = report.metrics.get("cost")
    if cost is not None and cost.a.mean is not None and cost.b.mean is not None:
        return "cost", "mean cost per task, USD (one point per replicate)", PLOT_NAMES[2]
    if "total_tokens" in report.metrics:
        return (
            "total_tokens",
            "mean total tokens per task (one point per replicate)",
            PLOT_NAMES[1],
        )
    return None


def _figure(figsize: tuple[float, float]):
    """A figure on an Agg canvas, as ``pyplot.figure`` makes one under the Agg backend."""
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _paired_axis(axis, metric: MetricComparison, a: str, b: str) -> None:
    seeds = [str(d.seed) for d in metric.differences]
    values = [d.difference for d in metric.differences]
    axis.bar(range(len(seeds)), values, color=_COLORS[0], label="per seed")
    axis.axhline(0, color="black", linewidth=0.8)
    interval = metric.descriptive.mean_interval
    if metric.mean is not None:
        # The mean paired difference with its 95% t-interval, right of the seeds.
        error = None
        if interval is not None:
            error = [[metric.mean - interval.low], [interval.high - metric.mean]]
        axis.errorbar(
            [len(seeds)],
            [metric.mean],
            yerr=error,
            fmt="o",
            color="#b03a2e",
            capsize=6,
            label="mean, 95% t-interval",
        )
    if metric.threshold is not None:
        axis.axhline(metric.threshold, color="grey", linestyle=":", label="± max(min_effect, k·se)")
        axis.axhline(-metric.threshold, color="grey", linestyle=":")
    axis.set_xticks(range(len(seeds) + 1), [*seeds, "mean"])
    axis.set_title(f"{metric.metric}: {verdict_label(metric.verdict, a, b)}", fontsize=9)
    axis.set_xlabel("seed")
    unit = f" ({metric.unit})" if metric.unit else ""
    axis.set_ylabel(f"paired difference{unit}\n+ favours {a}, − favours {b}", fontsize=8)
    axis.legend(fontsize=7)


# The drawer another process offers (set_plot_drawer); None: draw in this process.
_drawer: list[Callable[[ComparisonReport], dict[str, bytes] | None]] = []


def set_plot_drawer(drawer: Callable[[ComparisonReport], dict[str, bytes] | None] | None) -> None:
    """Have :func:`plot_png` ask ``drawer`` first (None: draw in this process again).

    ``drawer`` must return exactly :func:`draw_png`'s bytes for the report, or None when
    it cannot answer (its process is gone): the plots are then drawn here."""
    _drawer.clear()
    if drawer is not None:
        _drawer.append(drawer)


def plot_png(report: ComparisonReport) -> dict[str, bytes]:
    """The comparison's plots by file name, in drawing order (PLOT_NAMES): from the
    drawer set by :func:`set_plot_drawer` when it answers, else :func:`draw_png`."""
    if _drawer:
        drawn = _drawer[0](report)
        if drawn is not None:
            return drawn
    return draw_png(report)


def draw_png(report: ComparisonReport) -> dict[str, bytes]:
    """The comparison's plots by file name, in drawing order (PLOT_NAMES), drawn here."""
    return {name: draw() for name, draw in plot_drawings(report)}


def plot_drawings(report: ComparisonReport) -> list[tuple[str, Callable[[], bytes]]]:
    """(file name, what draws its bytes) of each of the comparison's plots, in drawing
    order: :func:`draw_png` calls each; the plot worker may call them in two processes
    (each plot is drawn on a figure of its own, so the bytes are the same)."""
    a, b = report.a.name, report.b.name
    drawings: list[tuple[str, Callable[[], bytes]]] = []
    objectives = [o.metric for o in report.spec.objectives if o.metric in report.metrics]
    if objectives:
        drawings.append((PAIRED_PLOT, lambda: _paired_png(report, objectives, a, b)))
    axis_choice = cost_axis(report)
    if axis_choice is not None:
        metric, label, name = axis_choice
        drawings.append((name, lambda: _success_png(report, metric, label, a, b)))
    return drawings


def _paired_png(report: ComparisonReport, objectives: list[str], a: str, b: str) -> bytes:
    fig = _figure((4.5 * len(objectives), 3.6))
    axes = fig.subplots(1, len(objectives))
    axes = axes if len(objectives) > 1 else [axes]
    for axis, name in zip(axes, objectives, strict=True):
        _paired_axis(axis, report.metrics[name], a, b)
    fig.tight_layout()
    return _png(fig)


def _success_png(report: ComparisonReport, metric: str, label: str, a: str, b: str) -> bytes:
    success, cost = report.metrics["task_success"], report.metrics[metric]
    fig = _figure((5, 3.6))
    axis = fig.subplots()
    for side, summary_s, summary_c, color in (
        (a, success.a, cost.a, _COLORS[0]),
        (b, success.b, cost.b, _COLORS[1]),
    ):
        xs = [r.value for r in summary_c.runs]
        ys = [r.value for r in summary_s.runs]
        pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if x is not None and y is not None]
        if pairs:
            axis.scatter(*zip(*pairs, strict=True), label=side, color=color)
            front = pareto_front(pairs)
            axis.plot(*zip(*front, strict=True), color=color, linewidth=1, alpha=0.6)
    from matplotlib.ticker import MaxNLocator

    axis.xaxis.set_major_locator(MaxNLocator(nbins=5))  # dollar ticks stay apart
    axis.set_xlabel(label)
    axis.set_ylabel("task success rate (per replicate)")
    unit = "USD" if metric == "cost" else "total tokens"
    axis.set_title(f"success vs cost ({unit})", fontsize=9)
    axis.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def warm_up() -> None:
    """Draw a small figure with every kind of text the plots have (title, axis labels,
    tick labels, legend) and discard it: a process's first plot also loads the font and
    fills matplotlib's text caches (~0.09 s); the plot worker does this while it waits."""
    fig = _figure((2, 2))
    axis = fig.subplots()
    axis.plot([0, 1], [0, 1], label="warm-up")
    axis.set_title("warm-up", fontsize=9)
    axis.set_xlabel("x")
    axis.set_ylabel("y", fontsize=8)
    axis.legend(fontsize=7)
    fig.tight_layout()
    _png(fig)


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (cost, success) points no other point beats (cheaper and at least as
    successful, or as cheap and more successful), by rising cost."""
    front: list[tuple[float, float]] = []
    for cost, success in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or success > front[-1][1]:
            front.append((cost, success))
    return front


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()
