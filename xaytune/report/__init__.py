"""The report room: what people read of a comparison, and the per-task viewer.

A released ``ComparisonReport`` (what report.json holds) is turned into structured
page data (:func:`comparison_view`), then rendered: report.html through a Jinja2
template, report.md and the terminal table from the same words
(:mod:`xaytune.report._words`). Plots are matplotlib PNGs. The per-task viewer over a
run's restricted files lives in :mod:`xaytune.viewer` (``python -m
xaytune.view``); it reads the app's output tree, so it is imported on its own, never
from here (the app imports this package to write its reports).
"""

from xaytune.report._errors import cause_lines, error_cells
from xaytune.report._files import render_html, rendered_reports, write_reports
from xaytune.report._markdown import render_markdown
from xaytune.report._naming import model_title
from xaytune.report._page import ComparisonView, ReportPage, comparison_view, report_page
from xaytune.report._plots import PLOT_NAMES, cost_axis, draw_png, plot_png, set_plot_drawer
from xaytune.report._terminal import terminal_grid, terminal_table
from xaytune.report._words import SE_ZERO_MARK, VERDICT_WORDS

__all__ = [
    "PLOT_NAMES",
    "SE_ZERO_MARK",
    "VERDICT_WORDS",
    "ComparisonView",
    "ReportPage",
    "cause_lines",
    "comparison_view",
    "cost_axis",
    "draw_png",
    "error_cells",
    "model_title",
    "plot_png",
    "render_html",
    "render_markdown",
    "rendered_reports",
    "report_page",
    "set_plot_drawer",
    "terminal_grid",
    "terminal_table",
    "write_reports",
]
