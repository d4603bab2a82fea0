"""Several challengers against one baseline: the summary of their comparisons.

Each challenger gets the spec's paired comparison with the baseline (its own
``comparison/<label>/``, verdicts by the spec's rule). The summary puts them side
by side: challenger x objective -> verdict, mean difference, threshold, 95% interval,
and, descriptively, a Holm adjustment of the two-sided paired t p-values across all
challengers x objectives (it never changes a verdict word: with many challengers,
some verdict is likelier to be luck, and the adjusted p says how much).

Written to ``comparison/``: ``summary.json`` (canonical), ``summary.md`` and
``report.html`` (every comparison on one page under a summary grid).
"""

from __future__ import annotations

import math
from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.core.harness_comparison import ComparisonReport

__all__ = ["SUMMARY_FILES", "holm", "summary_data", "summary_files"]

SUMMARY_FILES = ("summary.json", "summary.md", "report.html")
SUMMARY_SCHEMA = "xaytune.comparison-summary/v1"


def _p_value(mean: float | None, se: float | None, replicates: int) -> float | None:
    """Two-sided paired t p-value of the mean difference (df = R - 1)."""
    if mean is None or se is None or replicates < 2:
        return None
    if se == 0:
        return 0.0 if mean != 0 else 1.0
    # 2·t.sf(|t|, R − 1) through the ufunc t.sf evaluates: scipy.stats costs ~0.5 s to
    # import (tests/app/test_app_lazy_imports.py checks it is the same number).
    from scipy import special

    return float(2 * special.stdtr(replicates - 1, -abs(mean / se)))


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of ``p_values`` (None stays None, not counted)."""
    ranked = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(ranked)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(ranked):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def summary_data(baseline: str, results: list[tuple[str, ComparisonReport]]) -> dict[str, Any]:
    """The summary of released reports, one per challenger label."""
    rows: list[dict[str, Any]] = []
    for label, report in results:
        for metric in report.metrics.values():
            if metric.objective is None:
                continue
            interval = metric.descriptive.mean_interval
            rows.append(
                {
                    "challenger": label,
                    "name": report.b.name,
                    "metric": metric.metric,
                    "direction": metric.objective.direction,
                    "verdict": metric.verdict,
                    "mean_difference": metric.mean,
                    "threshold": metric.threshold,
                    "interval": None if interval is None else [interval.low, interval.high],
                    "replicates": len(metric.differences),
                    "p_value": _p_value(metric.mean, metric.se, len(metric.differences)),
                }
            )
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["holm_p_value"] = adjusted
    return {
        "schema": SUMMARY_SCHEMA,
        "baseline": {"label": baseline, "name": results[0][1].a.name},
        "relations": {label: report.relation for label, report in results},
        "rows": rows,
        "note": "Holm-adjusted p-values are descriptive: verdicts are the spec's rule, "
        "per challenger, unadjusted.",
    }


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.4g}"


def _markdown(data: dict[str, Any]) -> str:
    baseline = data["baseline"]["name"]
    lines = [
        f"# Summary: {len(data['relations'])} challengers against {baseline}",
        "",
        "| challenger | relation |",
        "|---|---|",
        *(f"| {label} | **{relation}** |" for label, relation in data["relations"].items()),
        "",
        "| challenger | objective | verdict | mean difference (+ favours the baseline) "
        "| threshold | 95% interval "
        "| p | Holm p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        interval = row["interval"]
        shown = "—" if interval is None else f"[{_num(interval[0])}, {_num(interval[1])}]"
        lines.append(
            f"| {row['name']} ({row['challenger']}) | {row['metric']} ({row['direction']}) "
            f"| {row['verdict']} | {_num(row['mean_difference'])} | {_num(row['threshold'])} "
            f"| {shown} | {_num(row['p_value'])} | {_num(row['holm_p_value'])} |"
        )
    lines += ["", data["note"], ""]
    return "\n".join(lines)


def summary_files(
    baseline: str,
    results: list[tuple[str, ComparisonReport]],
    images: dict[str, dict[str, bytes]],
) -> dict[str, bytes]:
    """The summary's files: ``results`` are the released reports by challenger label,
    ``images`` each one's plots (as written in its own directory)."""
    from xaytune.report import comparison_view, render_html, report_page

    data = summary_data(baseline, results)
    views = tuple(comparison_view(report, images[label]) for label, report in results)
    return {
        "summary.json": canonical_bytes(data) + b"\n",
        "summary.md": _markdown(data).encode(),
        "report.html": render_html(report_page(views)).encode(),
    }
