"""report.md: the comparison as Markdown, for CI logs and pull-request comments.

Its bytes are pinned: ``python -m xaytune.verify`` renders it again from report.json
and compares byte for byte, so a change here is a change to every verified tree.
"""

from __future__ import annotations

from typing import Any

from xaytune.comparison.compare import ComparisonReport
from xaytune.report._diff import leaf_changes
from xaytune.report._errors import (
    errors_markdown,
    not_compared_text,
    shows_errors,
    withheld_markdown,
)
from xaytune.report._words import (
    VERDICT_WORDS,
    Sides,
    aa_cell,
    calibration_lines,
    fmt,
    interval_text,
    looks_lines,
    method_lines,
    optional_stopping_warning,
    power_cell,
    power_text,
    reruns_warning,
    seed_only_warning,
    verdict_text,
)

__all__ = ["OBJECTIVE_HEADER", "objective_rows", "render_markdown", "warnings"]

OBJECTIVE_HEADER = (
    "objective",
    "A",
    "B",
    "mean diff (oriented)",
    "95% t-interval",
    "verdict",
    "A/A rate",
    "80% power at a true diff",
)


def objective_rows(report: ComparisonReport) -> list[tuple[str, ...]]:
    """One row per objective, in OBJECTIVE_HEADER's columns (report.md, the terminal)."""
    rows = []
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        if metric is None:
            rows.append((objective.metric, "—", "—", "—", "—", "withheld or absent", "—", "—"))
            continue
        rows.append(
            (
                f"{objective.metric} ({objective.direction})",
                fmt(metric.a.mean),
                fmt(metric.b.mean),
                fmt(metric.mean),
                interval_text(metric),
                verdict_text(metric),
                aa_cell(report, metric),
                power_cell(metric),
            )
        )
    return rows


def warnings(report: ComparisonReport) -> list[str]:
    """The report's warnings in Markdown (bold lead word)."""
    found = (seed_only_warning(report), reruns_warning(report, Sides.letters(report)))
    return [f"**Warning:** {text}" for text in found if text is not None]


def render_markdown(
    report: ComparisonReport,
    plots: dict[str, str] | None = None,
    *,
    errors: dict[str, Any] | None = None,
) -> str:
    """report.md: table, relation, comparability, config diff, descriptive statistics;
    with ``errors`` (the run's errors.json data), its Errors section when a side has
    one, and only what was run when the challenger is not compared (no verdict)."""
    if not_compared_text(errors, report) is not None:
        assert errors is not None
        return withheld_markdown(report, errors, OBJECTIVE_HEADER)
    sides = Sides.letters(report)
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
        "| " + " | ".join(OBJECTIVE_HEADER) + " |",
        "|" + "---|" * len(OBJECTIVE_HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in objective_rows(report)]
    if report.seed_only_difference:
        lines += ["", *warnings(report)]
    stopping = optional_stopping_warning(report)
    if stopping is not None:
        lines += ["", f"**Warning:** {stopping}"]
    if method_lines(report):
        lines += ["", f"## Method: {report.method}", "", *method_lines(report)]
    if report.looks is not None:
        lines += ["", f"## Looks at this tree ({report.looks.count})", "", *looks_lines(report)]
    lines += ["", "## Calibration: what the rule says when there is nothing to find", ""]
    lines += calibration_lines(report, sides)
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
    lines += warnings(report)
    # Leaf paths, long values folded to their digest (a 100 KB prompt is not pasted
    # into a pull-request comment; report.json holds it whole).
    for change in leaf_changes(report.config_diff):
        a, b = (side.replace("\n", "\\n") for side in (change.a, change.b))  # one line each
        lines.append(f"- `{change.path}`: {a} → {b} ({change.change})")
    lines += ["", "## Per metric", ""]
    for name, metric in sorted(report.metrics.items()):
        d = metric.descriptive
        lines.append(
            f"- **{name}** ({metric.unit}): A {fmt(metric.a.mean)} "
            f"± {fmt(metric.a.execution_se)}, B {fmt(metric.b.mean)} "
            f"± {fmt(metric.b.execution_se)}; per-seed differences "
            f"{[round(x.difference, 6) for x in metric.differences]}; mean {fmt(metric.mean)}, "
            f"se {fmt(metric.se)}, threshold {fmt(metric.threshold)} → {metric.verdict}"
            + (f" ({metric.reason})" if metric.reason else "")
        )
        if metric.mean is None:
            continue
        lines.append(
            f"  - descriptive: 95% t-interval {interval_text(metric)}"
            + (" (spans 0)" if d.interval_spans_zero else "")
            + f"; ±k·se carries {fmt(d.threshold_coverage, 3)} confidence at this R; "
            f"correlation {fmt(d.correlation, 3)}"
            + (f"; A/A rate {aa_cell(report, metric)}" if metric.objective else "")
        )
        power = power_text(metric)
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
    if errors is not None and shows_errors(errors, report):
        lines += ["", *errors_markdown(errors, report)]
    lines += ["", "## Verdict words", ""]
    lines += [f"- **{word}**: {meaning}" for word, meaning in VERDICT_WORDS.items()]
    return "\n".join(lines) + "\n"
