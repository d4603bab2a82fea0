"""The files of a comparison's reports: report.md, report.html and the plots.

:func:`rendered_reports` is what ``python -m xaytune.verify`` recomputes from the
tree's report.json and plots (byte for byte), so both renderings are a function of
the released report, the plot bytes and the run's errors.json (which the auditor
recomputes from the evidence) only: no clock, no path, no locale. A run and an audit
may hand the rendering to their helper process, which compiled the template while it
waited (:func:`set_report_renderer`, :mod:`xaytune.report.plot_worker`): the same
function (:func:`rendered_reports_here`), the same bytes, and neither Jinja2's import
nor the template's compiling (~70 ms) in the command's own process.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from xaytune.comparison.compare import ComparisonReport
from xaytune.harness.evidence.store import atomic_write
from xaytune.report._errors import not_compared_text
from xaytune.report._markdown import render_markdown
from xaytune.report._page import ReportPage, comparison_view, report_page
from xaytune.report._plots import plot_png
from xaytune.report.jinja import prepare, render

HTML_TEMPLATE = "report.html.j2"

__all__ = [
    "HTML_TEMPLATE",
    "render_html",
    "rendered_reports",
    "rendered_reports_here",
    "set_report_renderer",
    "write_reports",
]


def render_html(page: ReportPage) -> str:
    """report.html of ``page``: self-contained (inline CSS, plots as data: URIs), no
    JavaScript, printable."""
    return render(HTML_TEMPLATE, page=page)


# The renderer another process offers (set_report_renderer); empty: render here.
_renderer: list[Callable[..., dict[str, bytes] | None]] = []


def set_report_renderer(renderer: Callable[..., dict[str, bytes] | None] | None) -> None:
    """Have :func:`rendered_reports` ask ``renderer(released, images, model, errors)``
    first (None: render in this process again). It must return exactly
    :func:`rendered_reports_here`'s bytes, or None when it cannot answer."""
    _renderer.clear()
    if renderer is not None:
        _renderer.append(renderer)


def rendered_reports(
    released: ComparisonReport,
    images: dict[str, bytes],
    *,
    model: str | None = None,
    errors: dict[str, Any] | None = None,
) -> dict[str, bytes]:
    """:func:`rendered_reports_here`, from the renderer set by
    :func:`set_report_renderer` when it answers."""
    if _renderer:
        rendered = _renderer[0](released, images, model, errors)
        if rendered is not None:
            return rendered
    return rendered_reports_here(released, images, model=model, errors=errors)


def rendered_reports_here(
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
    if not _renderer:  # compiled while the plot worker draws (plot_png waits for it)
        prepare(HTML_TEMPLATE)
    images = {} if withheld else plot_png(released)
    for name, data in images.items():
        atomic_write(directory / name, data)
    for name, data in rendered_reports(released, images, model=model, errors=errors).items():
        atomic_write(directory / name, data)
