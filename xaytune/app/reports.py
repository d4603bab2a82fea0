"""Reports people read: the terminal table, report.md, report.html and the plots.

Rendering lives in the report room (:mod:`xaytune.report`); these are the names the
app and the auditor import. Everything here renders the *released* comparison report
only.
"""

from __future__ import annotations

from xaytune.report import (
    PLOT_NAMES,
    VERDICT_WORDS,
    render_markdown,
    rendered_reports,
    terminal_table,
    write_reports,
)

__all__ = [
    "PLOT_NAMES",
    "VERDICT_WORDS",
    "render_markdown",
    "rendered_reports",
    "terminal_table",
    "write_reports",
]
