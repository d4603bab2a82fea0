"""The comparison an output tree's replicates give, recomputed by the auditor.

A run's ``comparison/`` is computed from the replicate records on disk
(:func:`~xaytune.experiment.tree.gather.comparison_report`); recomputing it from the same
records must give the same bytes. So a report edited together with the manifest's
digest of it is still refused: ``report.restricted.json`` and ``report.json`` are
recomputed, and ``report.md`` and ``report.html`` rendered again (with the plots on
disk, whose pixels are not recomputed). The errors record (``errors.json``: each
side's model errors, timeouts and crashes, and which challengers are not compared,
:mod:`xaytune.experiment.attempt_errors`) is recomputed from the evidence of the replicates
the records name, and every report is rendered again from it: a published verdict
the errors withhold is a ``report-mismatch``.
"""

from __future__ import annotations

from pathlib import Path

from xaytune.comparison.compare import CandidateRuns, compare_ahead
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.experiment.attempt_errors import ERRORS_FILE, Loader, comparison_errors, errors_bytes
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.reports import PLOT_NAMES, page_model, rendered_reports
from xaytune.experiment.tree.gather import (
    COMPARISON_DIR,
    comparison_dirs,
    comparison_files,
    comparison_inputs,
    comparison_report,
    gather_candidates,
    summary_of,
)
from xaytune.experiment.tree.looks import looks_before, read_looks
from xaytune.harness.evidence.publish import load_published

__all__ = ["RECOMPUTE_ERRORS", "cannot_recompute", "comparison_problems", "start_comparisons"]

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


def start_comparisons(
    base: Path, cfg: ExperimentConfig, source: SuiteSource, *, records: list[Path]
) -> dict[str, CandidateRuns] | None:
    """The candidates the replicate records under ``base`` give, each challenger's
    comparison with the baseline started where a delegate computes it
    (:func:`~xaytune.comparison.compare.compare_ahead`: the audit's helper process,
    while this one verifies the attempts); None when the run has no comparison or its
    records cannot be gathered (:func:`comparison_problems` says why)."""
    if not (base / COMPARISON_DIR).is_dir():
        return None
    try:
        candidates = gather_candidates(base, records=records)
    except RECOMPUTE_ERRORS:
        return None
    for label in comparison_dirs(base, cfg):
        try:
            inputs = comparison_inputs(base, cfg, source, label, candidates=candidates)
        except RECOMPUTE_ERRORS:
            continue  # reported when it is compared
        compare_ahead(*inputs)
    return candidates


def comparison_problems(
    base: Path,
    cfg: ExperimentConfig,
    source: SuiteSource,
    directory: Path | None = None,
    *,
    records: list[Path] | None = None,
    load: Loader = load_published,
    candidates: dict[str, CandidateRuns] | None = None,
) -> list[tuple[Path, str]]:
    """(file, problem) for each comparison file that is not what the replicates under
    ``base`` give under ``cfg``: in ``directory`` (a comparison made again), or every
    challenger's comparison of the run and, with several, their summary; none when
    the run has no ``comparison/`` (a sweep's job). ``records``: the replicate
    records under ``base``, when the caller has listed the tree; ``load``: how each
    replicate's published evidence is loaded for the errors record (the auditor's
    cache: each statement parsed once per audit); ``candidates``: what
    :func:`start_comparisons` gathered from them."""
    if not (base / COMPARISON_DIR).is_dir() and directory is None:
        return []
    try:
        if candidates is None:
            candidates = gather_candidates(base, records=records)
    except RECOMPUTE_ERRORS as error:
        where = base / COMPARISON_DIR if directory is None else directory
        return [(where, cannot_recompute("report-mismatch", "the comparison", error))]
    # The errors record (which challengers are not compared) is recomputed from the
    # evidence; every report is rendered again from it.
    where = base / COMPARISON_DIR if directory is None else directory
    try:
        recorded = comparison_errors(base, cfg, records=records, load=load)
    except RECOMPUTE_ERRORS as error:
        return [(where, cannot_recompute("report-mismatch", "the errors record", error))]
    errors = recorded.data()
    problems: list[tuple[Path, str]] = []
    if not (where / ERRORS_FILE).is_file():
        problems.append((where / ERRORS_FILE, "report-missing: the run's errors record"))
    problems += _differing(where, {ERRORS_FILE: errors_bytes(recorded)}, "what the evidence gives")
    try:
        looks = read_looks(base)
    except XaytuneError:
        looks = []  # named by the looks check (looks-broken)
    if directory is not None:
        before = looks_before(looks, directory.name)
        challenger = cfg.challengers[0]
        found, _ = _one(base, cfg, source, challenger, directory, candidates, before, errors)
        return [*problems, *found]
    before = looks_before(looks, COMPARISON_DIR)
    written = []
    for label, path in comparison_dirs(base, cfg).items():
        found, report = _one(base, cfg, source, label, path, candidates, before, errors)
        problems += found
        if report is not None:
            written.append((label, report, path))
    if len(written) > 1 and len(written) == len(cfg.challengers):
        top = base / COMPARISON_DIR
        try:
            expected = summary_of(cfg, written, errors=errors, root=base)
        except RECOMPUTE_ERRORS as error:
            return [*problems, (top, cannot_recompute("report-mismatch", "the summary", error))]
        problems += _differing(top, expected, "the summary its comparisons give")
    return problems


def _one(base, cfg, source, label, directory, candidates, looks, errors):
    """The problems of one challenger's comparison directory, and its report (with the
    ``looks`` recorded before the look that wrote it, and the run's ``errors`` data)."""
    if not directory.is_dir():
        return [(directory, "report-missing: no comparison of challenger " + label)], None
    try:
        report = comparison_report(base, cfg, source, label, candidates=candidates, looks=looks)
        released = report.released()
        images = {
            name: (directory / name).read_bytes()
            for name in PLOT_NAMES
            if (directory / name).is_file()
        }
        model = page_model(cfg, base)
        rendered = rendered_reports(released, images, model=model, errors=errors)
        expected = {**comparison_files(report), **rendered}
    except RECOMPUTE_ERRORS as error:
        return [(directory, cannot_recompute("report-mismatch", "the comparison", error))], None
    return _differing(directory, expected, "the comparison its replicates give"), report


def _differing(directory: Path, expected: dict[str, bytes], what: str) -> list[tuple[Path, str]]:
    problems = []
    for name, data in expected.items():
        path = directory / name
        try:
            same = path.read_bytes() == data
        except OSError:
            continue  # a missing or unreadable report is named by the manifest's check
        if not same:
            problems.append((path, f"report-mismatch: not {what}"))
    return problems
