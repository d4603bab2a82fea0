"""The comparison as a rich table on the terminal, worded as report.md is.

The A/A calibration and power prose is long (about 15 lines): a run prints it once,
after its first table (``prose=True``); every other table gets one short line saying
where that comparison's prose is. Summaries (several challengers, several models) are
tables too (:func:`terminal_grid`), never raw Markdown.
"""

from __future__ import annotations

from typing import Any

from xaytune.comparison.compare import ComparisonReport
from xaytune.report._errors import error_cells, not_compared_text, withheld_rows
from xaytune.report._markdown import OBJECTIVE_HEADER, objective_rows, warnings
from xaytune.report._words import (
    Sides,
    calibration_lines,
    method_lines,
    optional_stopping_warning,
    power_text,
    why_inconclusive,
)

__all__ = ["PROSE_ELSEWHERE", "terminal_grid", "terminal_table"]

# Wider than any table of a comparison: the natural width is measured, not capped.
_UNBOUNDED = 10_000


# What a table without the prose says instead (the report it names follows it).
PROSE_ELSEWHERE = "calibration and power: the columns above; in words in its report.md"


def terminal_grid(
    title: str,
    header: tuple[str, ...] | list[str],
    rows: list[tuple[str, ...]],
    *,
    whole: tuple[str, ...] = (),
    console=None,
) -> None:
    """Print ``rows`` under ``header`` as a rich table titled ``title``; the columns
    named in ``whole`` (verdicts, relations) never split a word."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title or None)
    for i, column in enumerate(header):
        # Piped to a CI log, rich sizes the table to 80 columns and would clip cells
        # with an ellipsis: a clipped verdict ("favo…") is no verdict. Cells fold
        # instead, and a verdict column is never narrower than its longest word.
        words = [column, *(row[i] for row in rows)] if column in whole else []
        widest = max((len(word) for cell in words for word in cell.split()), default=None)
        table.add_column(column, overflow="fold", min_width=widest)
    for row in rows:
        table.add_row(*row)
    _print_whole(console, table)


def _print_whole(console, table) -> None:
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


def terminal_table(
    report: ComparisonReport,
    *,
    console=None,
    prose: bool = True,
    errors: dict[str, Any] | None = None,
) -> None:
    """Print the per-objective table, the relation and the claim, then (``prose``) the
    A/A calibration and each objective's power as report.md words them, or (not
    ``prose``: a run prints them once) one line saying where they are. With ``errors``
    (the run's errors.json data) the table ends with each side's error count (0
    shown), and a challenger that is not compared shows no verdict, only why."""
    from rich.console import Console

    console = console or Console()
    withheld = not_compared_text(errors, report)
    rows = objective_rows(report)
    if withheld is not None:
        rows = withheld_rows(report, withheld, len(OBJECTIVE_HEADER))
    if errors is not None:  # each side's tasks without a result of the harness
        count = ["errors (tasks)", *([""] * (len(OBJECTIVE_HEADER) - 1))]
        count[1:3] = error_cells(errors, report.a.name), error_cells(errors, report.b.name)
        rows = [*rows, tuple(count)]
    terminal_grid(
        f"A = {report.a.name}   B = {report.b.name}   seeds {list(report.seeds)}",
        OBJECTIVE_HEADER,
        rows,
        whole=("verdict",),
        console=console,
    )
    if withheld is not None:  # no verdict, and nothing that reads like one
        # One line whatever the width: a log reader greps for it whole.
        line = f"relation: {withheld}   claim: {report.claim}"
        console.print(line, markup=False, soft_wrap=True)
        return
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
    if not prose:
        console.print(PROSE_ELSEWHERE, markup=False)
        return
    for line in calibration_lines(report, Sides.letters(report)):
        console.print(f"calibration: {line}", markup=False)
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        text = power_text(metric) if metric is not None else None
        if text is not None:
            console.print(f"power, {objective.metric}: {text}", markup=False)
