"""Reports people read: the terminal table, report.md, report.html and the plots.

Rendering lives in the report room (:mod:`xaytune.report`); these are the names the
app and the auditor import. Everything here renders the *released* comparison report
only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xaytune.report import (
    PLOT_NAMES,
    VERDICT_WORDS,
    model_title,
    render_markdown,
    rendered_reports,
    terminal_table,
    write_reports,
)

__all__ = [
    "MODELS_DIR",
    "PLOT_NAMES",
    "VERDICT_WORDS",
    "page_model",
    "render_markdown",
    "rendered_reports",
    "terminal_table",
    "write_reports",
]


# xaytune.experiment.models_run.MODELS_DIR (which imports the modules that import this one).
MODELS_DIR = "models"


def page_model(cfg: Any, root: Path | None = None) -> str:
    """The model the report pages of the run in ``root`` name (``cfg``: its
    ExperimentConfig): what the writer and the auditor both pass. A model's run inside
    a run with several models (``<run>/models/<label>/``, as the run's manifest
    records it) is named by its label first: "careful: simulated (mental_error_base
    0.04)"."""
    title = model_title(cfg.model.model_dump(mode="json", by_alias=True, exclude_defaults=True))
    inside = root is not None and root.parent.name == MODELS_DIR
    if inside and (root.parent.parent / "manifest.json").is_file():
        return f"{root.name}: {title}"
    return title
