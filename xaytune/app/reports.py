"""Reports people read: the terminal table, report.md and a static report.html.

Everything here renders the *released* comparison report only.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

from xaytune.core.harness_comparison import ComparisonReport, MetricComparison
from xaytune.harness.store import atomic_write

__all__ = [
    "PLOT_NAMES",
    "VERDICT_WORDS",
    "render_markdown",
    "rendered_reports",
    "terminal_table",
    "write_reports",
]

# The plots of a comparison, in the order they are drawn (and listed in report.md).
PLOT_NAMES = ("paired_differences.png", "success_vs_tokens.png")

VERDICT_WORDS = {
    "favors-a": "A is better on this objective by more than max(min_effect, k·se).",
    "favors-b": "B is better on this objective by more than max(min_effect, k·se).",
    "trade-off": "Some objectives favour A and others favour B.",
    "inconclusive": "The evidence does not support a direction (too few seeds, noise, or "
    "a difference below min_effect).",
    "not-comparable": "A comparability condition (C1–C4) failed; no verdict is given.",
}


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.{digits}g}"


def _interval(metric: MetricComparison) -> str:
    interval = metric.descriptive.mean_interval
    return "—" if interval is None else f"[{_fmt(interval.low)}, {_fmt(interval.high)}]"


def _rows(report: ComparisonReport) -> list[tuple[str, ...]]:
    rows = []
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        if metric is None:
            rows.append((objective.metric, "—", "—", "—", "—", "withheld or absent"))
            continue
        rows.append(
            (
                f"{objective.metric} ({objective.direction})",
                _fmt(metric.a.mean),
                _fmt(metric.b.mean),
                _fmt(metric.mean),
                _interval(metric),
                metric.verdict,
            )
        )
    return rows


_HEADER = ("objective", "A", "B", "mean diff (oriented)", "95% t-interval", "verdict")


def terminal_table(report: ComparisonReport, *, console=None) -> None:
    """Print the per-objective table, the relation and the claim."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(
        title=f"A = {report.a.name}   B = {report.b.name}   seeds {list(report.seeds)}",
        caption=f"relation: {report.relation}   claim: {report.claim}",
    )
    for column in _HEADER:
        table.add_column(column)
    for row in _rows(report):
        table.add_row(*row)
    console.print(table)


def _plot_png(report: ComparisonReport) -> dict[str, bytes]:
    import logging

    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots: dict[str, bytes] = {}
    objectives = [o.metric for o in report.spec.objectives if o.metric in report.metrics]
    if objectives:
        fig, axes = plt.subplots(1, len(objectives), figsize=(4.5 * len(objectives), 3.4))
        axes = axes if len(objectives) > 1 else [axes]
        for axis, name in zip(axes, objectives, strict=True):
            metric = report.metrics[name]
            seeds = [str(d.seed) for d in metric.differences]
            values = [d.difference for d in metric.differences]
            axis.bar(range(len(seeds)), values, color="#4a7ab5", label="per seed")
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
                    color="#c0392b",
                    capsize=6,
                    label="mean, 95% t-interval",
                )
            if metric.threshold is not None:
                axis.axhline(
                    metric.threshold, color="grey", linestyle=":", label="± max(min_effect, k·se)"
                )
                axis.axhline(-metric.threshold, color="grey", linestyle=":")
            axis.set_xticks(range(len(seeds) + 1), [*seeds, "mean"])
            axis.set_title(f"{name}: {metric.verdict}", fontsize=9)
            axis.set_xlabel("seed")
            axis.set_ylabel("paired difference (+ favours A)")
            axis.legend(fontsize=7)
        fig.tight_layout()
        plots[PLOT_NAMES[0]] = _png(fig, plt)
    success = report.metrics.get("task_success")
    tokens = report.metrics.get("total_tokens")
    if success is not None and tokens is not None:
        fig, axis = plt.subplots(figsize=(5, 3.6))
        for side, summary_s, summary_t, color in (
            ("A", success.a, tokens.a, "#4a7ab5"),
            ("B", success.b, tokens.b, "#e67e22"),
        ):
            xs = [r.value for r in summary_t.runs]
            ys = [r.value for r in summary_s.runs]
            pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if x is not None and y is not None]
            if pairs:
                axis.scatter(*zip(*pairs, strict=True), label=side, color=color)
        axis.set_xlabel("mean total tokens per task (per replicate)")
        axis.set_ylabel("task success rate (per replicate)")
        axis.set_title("success vs cost", fontsize=9)
        axis.legend(fontsize=7)
        fig.tight_layout()
        plots[PLOT_NAMES[1]] = _png(fig, plt)
    return plots


def _png(fig, plt) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def render_markdown(report: ComparisonReport, plots: dict[str, str] | None = None) -> str:
    """report.md: table, relation, comparability, config diff, descriptive statistics."""
    lines = [
        f"# Comparison: {report.a.name} (A) vs {report.b.name} (B)",
        "",
        f"**Relation: {report.relation}** — {VERDICT_WORDS[report.relation]}",
        "",
        f"Claim: **{report.claim}**. A difference here is a provisional direction for choosing "
        "what to try next, never a statistical claim.",
        "",
        f"Suite {report.suite.name} `{report.suite.digest}`; seeds {list(report.seeds)}; "
        f"method {report.method}, k = {report.spec.k}; disclosure {report.spec.disclosure}.",
        "",
        "| " + " | ".join(_HEADER) + " |",
        "|" + "---|" * len(_HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(report)]
    lines += ["", "## Comparability (C1–C4)", ""]
    comparability = report.comparability
    if comparability.comparable:
        lines.append(f"All conditions hold. Comparison key `{comparability.comparison_key}`.")
    for failure in comparability.failures:
        lines.append(f"- **{failure.condition} failed** ({failure.reason}):")
        for difference in failure.differences:
            lines.append(f"  - {difference.item}: A {difference.a} vs B {difference.b}")
    lines.append(f"- timing: {comparability.timing.status} ({comparability.timing.environment})")
    lines += ["", "## What differs between the candidates", ""]
    if report.seed_only_difference:
        lines.append("**Warning:** the candidates differ in nothing but the seed.")
    for change in report.config_diff:
        lines.append(f"- `{change.path}`: {change.a!r} → {change.b!r} ({change.change})")
    lines += ["", "## Per metric", ""]
    for name, metric in sorted(report.metrics.items()):
        d = metric.descriptive
        lines.append(
            f"- **{name}** ({metric.unit}): A {_fmt(metric.a.mean)} "
            f"± {_fmt(metric.a.execution_se)}, B {_fmt(metric.b.mean)} "
            f"± {_fmt(metric.b.execution_se)}; per-seed differences "
            f"{[round(x.difference, 6) for x in metric.differences]}; mean {_fmt(metric.mean)}, "
            f"se {_fmt(metric.se)}, threshold {_fmt(metric.threshold)} → {metric.verdict}"
            + (f" ({metric.reason})" if metric.reason else "")
        )
        if metric.mean is None:
            continue
        lines.append(
            f"  - descriptive: 95% t-interval {_interval(metric)}; ±k·se carries "
            f"{_fmt(d.threshold_coverage, 3)} confidence at this R; correlation "
            f"{_fmt(d.correlation, 3)}; minimum detectable difference "
            f"{_fmt(d.minimum_detectable_difference)}; replicates needed for min_effect "
            f"{d.replicates_needed if d.replicates_needed is not None else '—'}"
        )
        for run in d.wilson:
            lines.append(
                f"  - Wilson 95% ({run.side}, seed {run.seed}): {run.successes}/{run.n} → "
                f"[{run.low:.4f}, {run.high:.4f}]"
            )
    if report.withheld:
        lines += ["", "## Withheld under aggregate disclosure", ""]
        lines += [f"- {item}" for item in report.withheld]
    if plots:
        lines += ["", "## Plots", ""]
        lines += [f"![{name}]({name})" for name in plots]
    lines += ["", "## Verdict words", ""]
    lines += [f"- **{word}**: {meaning}" for word, meaning in VERDICT_WORDS.items()]
    return "\n".join(lines) + "\n"


def _render_html(markdown_text: str, images: dict[str, bytes]) -> str:
    body = []
    for line in markdown_text.splitlines():
        if line.startswith("!["):
            name = line[2 : line.index("]")]
            data = base64.b64encode(images[name]).decode()
            body.append(f'<img alt="{html.escape(name)}" src="data:image/png;base64,{data}">')
        elif line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line:
            body.append(f"<pre>{html.escape(line)}</pre>")
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "pre{margin:0.2em 0;white-space:pre-wrap}"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>xaytune comparison</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n"
    )


def write_reports(directory: Path, released: ComparisonReport) -> None:
    """Write report.md, report.html and the plots for a released report."""
    images = _plot_png(released)
    for name, data in images.items():
        atomic_write(directory / name, data)
    for name, data in rendered_reports(released, images).items():
        atomic_write(directory / name, data)


def rendered_reports(released: ComparisonReport, images: dict[str, bytes]) -> dict[str, bytes]:
    """report.md and report.html of a released report with these plots (in the order
    the plots are drawn: PLOT_NAMES), as written."""
    markdown_text = render_markdown(released, {name: name for name in images})
    return {
        "report.md": markdown_text.encode(),
        "report.html": _render_html(markdown_text, images).encode(),
    }
