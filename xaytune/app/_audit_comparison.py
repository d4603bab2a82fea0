"""The comparison an output tree's replicates give, recomputed by the auditor.

A run's ``comparison/`` is computed from the replicate records on disk
(:func:`~xaytune.app.gather.comparison_report`); recomputing it from the same
records must give the same bytes. So a report edited together with the manifest's
digest of it is still refused: ``report.restricted.json`` and ``report.json`` are
recomputed, and ``report.md`` and ``report.html`` rendered again (with the plots on
disk, whose pixels are not recomputed).
"""

from __future__ import annotations

from pathlib import Path

from xaytune.app.config import ExperimentConfig
from xaytune.app.gather import COMPARISON_DIR, comparison_files, comparison_report
from xaytune.app.reports import PLOT_NAMES, rendered_reports
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError

__all__ = ["RECOMPUTE_ERRORS", "cannot_recompute", "comparison_problems"]

# What records of a tree that are not what the app wrote raise when recomputed from.
RECOMPUTE_ERRORS = (
    XaytuneError,
    OSError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    RecursionError,
    ArithmeticError,
)


def cannot_recompute(reason: str, what: str, error: BaseException) -> str:
    """The problem line of a recomputation the tree's records do not allow."""
    return (
        f"{reason}: {what} cannot be recomputed from the tree's records "
        f"({type(error).__name__}: {str(error)[:200]})"
    )


def comparison_problems(
    base: Path, cfg: ExperimentConfig, source: SuiteSource, directory: Path | None = None
) -> list[tuple[Path, str]]:
    """(file, problem) for each comparison file in ``directory`` (default: the run's
    ``comparison/``) that is not what the replicates under ``base`` give under
    ``cfg``; none when there is no such directory (a sweep's job)."""
    directory = base / COMPARISON_DIR if directory is None else directory
    if not directory.is_dir():
        return []
    try:
        report = comparison_report(base, cfg, source)
        released = report.released()
        images = {
            name: (directory / name).read_bytes()
            for name in PLOT_NAMES
            if (directory / name).is_file()
        }
        expected = {**comparison_files(report), **rendered_reports(released, images)}
    except RECOMPUTE_ERRORS as error:
        return [(directory, cannot_recompute("report-mismatch", "the comparison", error))]
    problems = []
    for name, data in expected.items():
        path = directory / name
        try:
            same = path.read_bytes() == data
        except OSError:
            continue  # a missing or unreadable report is named by the manifest's check
        if not same:
            problems.append((path, "report-mismatch: not the comparison its replicates give"))
    return problems
