"""The files of a comparison's reports: report.md, report.html and the plots.

:func:`rendered_reports` is what ``python -m xaytune.verify`` recomputes from the
tree's report.json and plots (byte for byte), so both renderings are a function of
the released report, the plot bytes and the run's errors.json (which the auditor
recomputes from the evidence) only: no clock, no path, no locale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xaytune.comparison.compare import ComparisonReport
from xaytune.harness.evidence.store import atomic_write
from xaytune.report._errors import not_compared_text
from xaytune.report._markdown import render_markdown
from xaytune.report._page import ReportPage, comparison_view, report_page
from xaytune.report._plots import plot_png
from xaytune.report.jinja import prepare, render

__all__ = ["render_html", "rendered_reports", "write_reports"]

_HTML = "report.html.j2"


def render_html(page: ReportPage) -> str:
    """report.html of ``page``: self-contained (inline CSS, plots as data: URIs), no
    JavaScript, printable."""
    return render(_HTML, page=page)


def rendered_reports(
    released: ComparisonReport,
    images: dict[str, bytes],
    *,
    model: str | None = None,
    errors: dict[str, Any] | None = None,
) -> dict[str, bytes]:
    """report.md and report.html of a released report with these plots (in the order
    the plots are drawn: PLOT_NAMES), as written; ``model`` names the model on the page
    (the writer and the auditor pass the same: :func:`xaytune.experiment.reports.model_title`);
    ``errors``: the run's errors.json data (its Errors section, a withheld verdict)."""
    markdown_text = render_markdown(released, {name: name for name in images}, errors=errors)
    page = report_page((comparison_view(released, images, model=model, errors=errors),))
    return {
        "report.md": markdown_text.encode(),
        "report.html": render_html(page).encode(),
    }


def write_reports(
    directory: Path,
    released: ComparisonReport,
    *,
    model: str | None = None,
    errors: dict[str, Any] | None = None,
) -> None:
    """Write report.md, report.html and the plots for a released report (no plots for
    a comparison that is not compared: they would draw its differences)."""
    withheld = not_compared_text(errors, released) is not None
    prepare(_HTML)  # compiled while the plot worker draws (plot_png waits for it)
    images = {} if withheld else plot_png(released)
    for name, data in images.items():
        atomic_write(directory / name, data)
    for name, data in rendered_reports(released, images, model=model, errors=errors).items():
        atomic_write(directory / name, data)
