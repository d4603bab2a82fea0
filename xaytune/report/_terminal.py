"""The comparison as a rich table on the terminal, worded as report.md is."""

from __future__ import annotations

from xaytune.core.harness_comparison import ComparisonReport
from xaytune.report._markdown import OBJECTIVE_HEADER, objective_rows, warnings
from xaytune.report._words import (
    Sides,
    calibration_lines,
    method_lines,
    optional_stopping_warning,
    power_text,
    why_inconclusive,
)

__all__ = ["terminal_table"]

# Wider than any table of a comparison: the natural width is measured, not capped.
_UNBOUNDED = 10_000


def terminal_table(report: ComparisonReport, *, console=None) -> None:
    """Print the per-objective table, the relation and the claim, then the A/A
    calibration and each objective's power, as report.md words them."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(
        title=f"A = {report.a.name}   B = {report.b.name}   seeds {list(report.seeds)}",
    )
    rows = objective_rows(report)
    verdict = OBJECTIVE_HEADER.index("verdict")
    for i, column in enumerate(OBJECTIVE_HEADER):
        # Piped to a CI log, rich sizes the table to 80 columns and would clip cells
        # with an ellipsis: a clipped verdict ("favo…") is no verdict. Cells fold
        # instead, and the verdict column is never narrower than its longest word.
        words = [column, *(row[i] for row in rows)] if i == verdict else []
        widest = max((len(word) for cell in words for word in cell.split()), default=None)
        table.add_column(column, overflow="fold", min_width=widest)
    for row in rows:
        table.add_row(*row)
    if console.is_terminal:
        console.print(table)
    else:
        # Not a terminal (a CI log, a file): the table gets its natural width, so no
        # cell is folded and nothing (the caption's relation words) is cropped; a log
        # has no right edge to respect.
        from rich.measure import Measurement

        natural = Measurement.get(console, console.options.update_width(_UNBOUNDED), table)
        width = console.width
        console.width = max(width, natural.maximum)
        try:
            console.print(table)
        finally:
            console.width = width
    # Its own line, not the table's caption: a caption is cropped at the table's edge.
    console.print(f"relation: {report.relation}   claim: {report.claim}", markup=False)
    why = why_inconclusive(report)
    if why is not None:
        console.print(f"why inconclusive: {why}", markup=False)
    for line in warnings(report):
        console.print(line.replace("**", ""), markup=False)
    stopping = optional_stopping_warning(report)
    if stopping is not None:
        console.print(f"Warning: {stopping}", markup=False)
    for line in method_lines(report):
        console.print(f"method {report.method}: {line}", markup=False)
    if report.looks is not None:
        console.print(f"looks at this tree: {report.looks.count}", markup=False)
    for line in calibration_lines(report, Sides.letters(report)):
        console.print(f"calibration: {line}", markup=False)
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        text = power_text(metric) if metric is not None else None
        if text is not None:
            console.print(f"power, {objective.metric}: {text}", markup=False)
