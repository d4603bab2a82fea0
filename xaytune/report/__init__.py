"""The report room: what people read of a comparison, and the per-task viewer.

A released ``ComparisonReport`` (what report.json holds) is turned into structured
page data (:func:`comparison_view`), then rendered: report.html through a Jinja2
template, report.md and the terminal table from the same words
(:mod:`xaytune.report._words`). Plots are matplotlib PNGs. The per-task viewer over a
run's restricted files lives in :mod:`xaytune.viewer` (``python -m
xaytune.view``); it reads the app's output tree, so it is imported on its own, never
from here (the app imports this package to write its reports).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xaytune.report._errors import cause_lines, error_cells
    from xaytune.report._files import (
        render_html,
        rendered_reports,
        set_report_renderer,
        write_reports,
    )
    from xaytune.report._markdown import render_markdown
    from xaytune.report._naming import model_title
    from xaytune.report._page import ComparisonView, ReportPage, comparison_view, report_page
    from xaytune.report._plots import PLOT_NAMES, cost_axis, draw_png, plot_png, set_plot_drawer
    from xaytune.report._terminal import terminal_grid, terminal_table
    from xaytune.report._words import SE_ZERO_MARK, VERDICT_WORDS

# Each public name's module, imported on first use (PEP 562): a process that needs only
# xaytune.report.plot_worker (the verify command starting it before anything else)
# does not pay for the comparison and Jinja2 imports the pages need (~0.35 s).
_HOME = {
    "cause_lines": "_errors",
    "error_cells": "_errors",
    "render_html": "_files",
    "rendered_reports": "_files",
    "set_report_renderer": "_files",
    "write_reports": "_files",
    "render_markdown": "_markdown",
    "model_title": "_naming",
    "ComparisonView": "_page",
    "ReportPage": "_page",
    "comparison_view": "_page",
    "report_page": "_page",
    "PLOT_NAMES": "_plots",
    "cost_axis": "_plots",
    "draw_png": "_plots",
    "plot_png": "_plots",
    "set_plot_drawer": "_plots",
    "terminal_grid": "_terminal",
    "terminal_table": "_terminal",
    "SE_ZERO_MARK": "_words",
    "VERDICT_WORDS": "_words",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


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
    "set_report_renderer",
    "terminal_grid",
    "terminal_table",
    "write_reports",
]
