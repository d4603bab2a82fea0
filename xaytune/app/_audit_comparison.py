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
from xaytune.app.gather import COMPARISON_DIR, RELEASED_REPORT, RESTRICTED_REPORT, comparison_report
from xaytune.app.reports import PLOT_NAMES, rendered_reports
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError

__all__ = ["comparison_problems"]


def comparison_problems(
    base: Path, cfg: ExperimentConfig, source: SuiteSource
) -> list[tuple[Path, str]]:
    """(file, problem) for each comparison file under ``base`` that is not what its
    replicates give; none when ``base`` has no comparison (a sweep's job)."""
    directory = base / COMPARISON_DIR
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
        expected = {
            RESTRICTED_REPORT: canonical_bytes(report) + b"\n",
            RELEASED_REPORT: canonical_bytes(released) + b"\n",
            **rendered_reports(released, images),
        }
    except (
        XaytuneError,
        OSError,
        ValueError,
        KeyError,
        TypeError,
        RecursionError,
        ArithmeticError,
    ) as error:
        return [
            (
                directory,
                "report-mismatch: the comparison cannot be recomputed from the replicates "
                f"({type(error).__name__}: {str(error)[:200]})",
            )
        ]
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
