"""Reports people read: the terminal table, report.md and a static report.html.

Everything here renders the *released* comparison report only.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

from xaytune.core.harness_comparison import ComparisonReport, MetricComparison
from xaytune.harness.evidence.store import atomic_write

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
    "inconclusive": "The evidence does not support a direction (too few seeds, noise, no "
    "spread across seeds with min_effect 0, or a difference not above min_effect).",
    "not-comparable": "A comparability condition (C1–C4) failed; no verdict is given.",
}


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.{digits}g}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _interval(metric: MetricComparison) -> str:
    interval = metric.descriptive.mean_interval
    return "—" if interval is None else f"[{_fmt(interval.low)}, {_fmt(interval.high)}]"


def _verdict(metric: MetricComparison) -> str:
    """The verdict word, with a visible note when the 95% interval contains 0."""
    if metric.verdict in ("favors-a", "favors-b") and metric.descriptive.interval_spans_zero:
        return f"{metric.verdict} (95% interval spans 0)"
    if metric.reason == "no-variance":
        return f"{metric.verdict} (no variance)"
    return metric.verdict


def _aa_cell(report: ComparisonReport, metric: MetricComparison) -> str:
    calibration = report.calibration.objective(metric.metric) if report.calibration else None
    if calibration is None or metric.objective is None:
        return "—"
    bound = calibration.model == "student-t" and metric.objective.min_effect > 0
    cell = ("≤ " if bound and calibration.rate > 0 else "") + _pct(calibration.rate)
    if calibration.measured is not None:
        cell += f" (measured {_pct(calibration.measured)})"
    return cell


def _power_cell(metric: MetricComparison) -> str:
    power = metric.descriptive.power
    return "—" if power is None else f"≥ {_fmt(power.difference_for_power)}"


def _rows(report: ComparisonReport) -> list[tuple[str, ...]]:
    rows = []
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        if metric is None:
            rows.append((objective.metric, "—", "—", "—", "—", "withheld or absent", "—", "—"))
            continue
        rows.append(
            (
                f"{objective.metric} ({objective.direction})",
                _fmt(metric.a.mean),
                _fmt(metric.b.mean),
                _fmt(metric.mean),
                _interval(metric),
                _verdict(metric),
                _aa_cell(report, metric),
                _power_cell(metric),
            )
        )
    return rows


_HEADER = (
    "objective",
    "A",
    "B",
    "mean diff (oriented)",
    "95% t-interval",
    "verdict",
    "A/A rate",
    "80% power at a true diff",
)


def _calibration_lines(report: ComparisonReport) -> list[str]:
    """What the rule says when A and B are the same harness, in words."""
    calibration = report.calibration
    if calibration is None:
        return ["No calibration: the candidates are not comparable."]
    per_objective = []
    for objective in calibration.objectives:
        if objective.model == "binomial-lattice":
            per_objective.append(
                f"{objective.metric} {_pct(objective.rate)} (exact for {objective.n_tasks} "
                f"equally hard tasks at the pooled success rate "
                f"{_fmt(objective.success_rate, 3)}, min_effect included; tasks of different "
                "difficulty make it lower)"
            )
        else:
            floored = report.spec.objective(objective.metric).min_effect > 0
            bound = "at most " if floored and objective.rate > 0 else ""
            per_objective.append(f"{objective.metric} {bound}{_pct(objective.rate)}")
    lines = [
        f"If A and B were the same harness (A/A), at R = {calibration.replicates} and "
        f"k = {calibration.k:g} an objective would name a side "
        f"{_pct(calibration.t_rate)} of the time under normal theory with min_effect 0 "
        "(less with a positive min_effect); per objective: "
        + ("; ".join(per_objective) or "none decided")
        + f". The relation would not be inconclusive "
        f"{_pct(calibration.relation_rate_independent)} of the time if these "
        f"{len(calibration.objectives)} objectives are independent, between "
        f"{_pct(calibration.relation_rate_low)} and {_pct(calibration.relation_rate_high)} "
        f"whatever their dependence. Assumes {calibration.assumption}."
    ]
    measured = calibration.measured
    if measured is None and report.spec.calibrate:
        lines.append(
            "Measured: not simulated (the simulation needs 3 to 100 replicates and an "
            "objective the rule decided that the released report shows)."
        )
    if measured is not None:
        rates = ", ".join(
            f"{o.metric} "
            + (
                _pct(o.measured)
                if o.measured is not None
                else "— (withheld)"
                if o.metric in report.withheld
                else "— (no spread)"
            )
            for o in calibration.objectives
        )
        se = (0.25 / measured.draws) ** 0.5
        lines.append(
            f"Measured ({measured.method}: {measured.draws:,} simulated A/A comparisons with "
            f"this run's observed spread and min_effect; Monte Carlo SE at most "
            f"{_pct(se)}): {rates}; relation {_pct(measured.relation)}. Seeded from "
            f"`{measured.seed_digest}`."
        )
    return lines


def _power_text(metric: MetricComparison) -> str | None:
    """The power figures of one objective, in words (None without them)."""
    power = metric.descriptive.power
    if power is None or metric.objective is None:
        return None
    r = len(metric.differences)
    text = (
        f"k·se = {_fmt(power.k_se)} (a true difference this large is called "
        f"{_pct(power.power_at_k_se)} of the time at R = {r})"
    )
    if power.power_at_min_effect is not None:
        text += (
            f"; a true difference of min_effect {_fmt(metric.objective.min_effect)} is called "
            f"{_pct(power.power_at_min_effect)} of the time (never above 50%, at any R: the "
            "mean must exceed min_effect)"
        )
    text += (
        f"; {power.power_target:.0%} power at R = {r} for a true difference ≥ "
        f"{_fmt(power.difference_for_power)}"
    )
    if power.planning_effect is not None:
        needed = power.replicates_for_power
        text += (
            f"; replicates for {power.power_target:.0%} power at 2·min_effect "
            f"({_fmt(power.planning_effect)}): "
            + (f"{needed:,}" if needed is not None else "more than 100,000")
        )
    return text + f" (taking the observed sd {_fmt(power.sd)} of the per-seed differences)"


def _warnings(report: ComparisonReport) -> list[str]:
    warnings = []
    if report.seed_only_difference:
        warnings.append(
            "**Warning:** the two harnesses are the same but for their names: only the seeds' "
            "execution differs, so any difference is noise (an A/A comparison; see Calibration)."
        )
    reruns = _reruns(report)
    if reruns is not None:
        warnings.append(reruns)
    return warnings


def _reruns(report: ComparisonReport) -> str | None:
    """A warning when one side's tasks were run again more often than the other's: an
    attempt recovered after a crash (or stripped of its seal) and re-run on one side
    only is what a selective re-roll looks like."""
    attempts = report.metrics.get("spend_attempts")
    if attempts is None:
        return None

    def extra(summary) -> int:
        return sum(
            round((run.value - 1) * run.n_tasks)
            for run in summary.runs
            if run.value is not None and run.n_tasks
        )

    a, b = extra(attempts.a), extra(attempts.b)
    if a == b or min(a, b) * 2 >= max(a, b) > 0:
        return None
    return (
        f"**Warning:** tasks were attempted again {a} time(s) on A ({report.a.name}) and "
        f"{b} on B ({report.b.name}): attempts recovered after a crash or interruption and "
        "re-run on one side more than the other can bias the comparison (a selective "
        "re-roll looks like this); the attempt files say which (`recovered: true`)."
    )


def terminal_table(report: ComparisonReport, *, console=None) -> None:
    """Print the per-objective table, the relation and the claim, then the A/A
    calibration and each objective's power, as report.md words them."""
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
    why = _why_inconclusive(report)
    if why is not None:
        console.print(f"why inconclusive: {why}", markup=False)
    for line in _warnings(report):
        console.print(line.replace("**", ""), markup=False)
    for line in _calibration_lines(report):
        console.print(f"calibration: {line}", markup=False)
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        text = _power_text(metric) if metric is not None else None
        if text is not None:
            console.print(f"power, {objective.metric}: {text}", markup=False)


# Why an objective named no side, in the words a user acts on.
_INCONCLUSIVE_BECAUSE = {
    "too-few-replicates": "{r} seed(s): the rule needs at least 3 (add seeds)",
    "within-threshold": "the mean difference does not exceed max(min_effect, k·se)",
    "no-variance": "every seed shows the same difference and min_effect is 0",
    "absent": "a replicate has no run value on one side (nothing is imputed)",
    "timing-environment-differs": "the sides ran in different timing environments",
    "timing-environment-undeclared": "a replicate declares no timing environment",
}


def _why_inconclusive(report: ComparisonReport) -> str | None:
    """One line saying why no objective named a side (None unless inconclusive)."""
    if report.relation != "inconclusive":
        return None
    reasons = []
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        if metric is None or metric.verdict != "inconclusive":
            continue
        text = _INCONCLUSIVE_BECAUSE.get(metric.reason, metric.reason)
        reasons.append(f"{objective.metric}: {text.format(r=len(report.seeds))}")
    return "; ".join(reasons) or None


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
    if report.seed_only_difference:
        lines += ["", *_warnings(report)]
    lines += ["", "## Calibration: what the rule says when there is nothing to find", ""]
    lines += _calibration_lines(report)
    lines += [
        "",
        'A verdict marked "95% interval spans 0" names a side that the 95% t-interval '
        "of the mean difference does not exclude: k·se is a narrower bar than that "
        'interval at small R. "80% power at a true diff" ≥ x: the rule calls a true '
        "difference of x (or more) at least 80% of the time at this R, taking the observed "
        "spread of the per-seed differences as the true one.",
    ]
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
    lines += _warnings(report)
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
            f"  - descriptive: 95% t-interval {_interval(metric)}"
            + (" (spans 0)" if d.interval_spans_zero else "")
            + f"; ±k·se carries {_fmt(d.threshold_coverage, 3)} confidence at this R; "
            f"correlation {_fmt(d.correlation, 3)}"
            + (f"; A/A rate {_aa_cell(report, metric)}" if metric.objective else "")
        )
        power = _power_text(metric)
        if power is not None:
            lines.append(f"  - power: {power}")
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
