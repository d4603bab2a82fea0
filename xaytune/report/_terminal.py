"""The comparison as a rich table on the terminal, worded as report.md is."""

from __future__ import annotations

from xaytune.core.harness_comparison import ComparisonReport
from xaytune.report._markdown import OBJECTIVE_HEADER, objective_rows, warnings
from xaytune.report._words import Sides, calibration_lines, power_text, why_inconclusive

__all__ = ["terminal_table"]


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
    for column in OBJECTIVE_HEADER:
        table.add_column(column)
    for row in objective_rows(report):
        table.add_row(*row)
    console.print(table)
    why = why_inconclusive(report)
    if why is not None:
        console.print(f"why inconclusive: {why}", markup=False)
    for line in warnings(report):
        console.print(line.replace("**", ""), markup=False)
    for line in calibration_lines(report, Sides.letters(report)):
        console.print(f"calibration: {line}", markup=False)
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        text = power_text(metric) if metric is not None else None
        if text is not None:
            console.print(f"power, {objective.metric}: {text}", markup=False)
