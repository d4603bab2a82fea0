"""Gathering replicates from an output tree and writing the comparison.

Single-process runs and multirun sweeps both end here: the comparison is computed
from what the replicates wrote to disk, so the two give identical numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xaytune.comparison.compare import (
    CandidateRuns,
    ComparisonReport,
    ComparisonSpec,
    ObjectiveMetric,
    ReplicateRuns,
    compare,
)
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import ComparisonError
from xaytune.experiment.attempt_errors import ERRORS_FILE, comparison_errors, errors_bytes
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.reports import PLOT_NAMES, page_model, write_reports
from xaytune.experiment.summary import summary_files
from xaytune.experiment.tree.files import CANDIDATE_FILE, REPLICATE_FILE
from xaytune.experiment.tree.looks import with_looks
from xaytune.harness.evidence.store import atomic_write

__all__ = [
    "COMPARISON_DIR",
    "RELEASED_REPORT",
    "RESTRICTED_REPORT",
    "comparison_dirs",
    "comparison_files",
    "comparison_inputs",
    "comparison_report",
    "gather_candidates",
    "summary_of",
    "write_comparison",
]

COMPARISON_DIR = "comparison"
RELEASED_REPORT = "report.json"
RESTRICTED_REPORT = "report.restricted.json"


def gather_candidates(root: Path, *, records: list[Path] | None = None) -> dict[str, CandidateRuns]:
    """CandidateRuns per label from every replicate under ``root`` (``records``: their
    record files, when the caller has listed the tree already)."""
    found: dict[str, tuple[dict, list[ReplicateRuns]]] = {}
    for path in sorted(root.rglob(REPLICATE_FILE)) if records is None else records:
        candidate_file = path.parent.parent / CANDIDATE_FILE
        candidate = json.loads(candidate_file.read_bytes())
        replicate = ReplicateRuns.model_validate_json(path.read_bytes())
        key = candidate["label"]
        if (
            key in found
            and found[key][0]["harness_fingerprint"] != candidate["harness_fingerprint"]
        ):
            raise ComparisonError(
                "mixed-candidates",
                f"{candidate_file}: candidate {key} has two harnesses in one tree",
            )
        found.setdefault(key, (candidate, []))[1].append(replicate)
    candidates = {}
    for label, (candidate, replicates) in sorted(found.items()):
        candidates[label] = CandidateRuns(
            name=candidate["name"],
            harness_fingerprint=candidate["harness_fingerprint"],
            harness_config=candidate["harness"],
            replicates=tuple(sorted(replicates, key=lambda r: r.seed)),
        )
    return candidates


def comparison_dirs(root: Path, cfg: ExperimentConfig) -> dict[str, Path]:
    """Where each challenger's comparison with the baseline is written: ``comparison/``
    for one challenger (the a/b layout), ``comparison/<label>/`` for several."""
    challengers = cfg.challengers
    if len(challengers) == 1:
        return {challengers[0]: root / COMPARISON_DIR}
    return {label: root / COMPARISON_DIR / label for label in challengers}


def write_comparison(
    root: Path,
    cfg: ExperimentConfig,
    source: SuiteSource,
    *,
    looks: list[dict[str, Any]] | None = None,
) -> list[tuple[str, ComparisonReport, Path]]:
    """Compare each challenger found under ``root`` with the baseline; write its
    comparison (and, with several challengers, their summary in ``comparison/``).
    ``looks``: the looks at the tree before this one (shown when there are any).
    Returns (challenger label, report, directory) per challenger."""
    candidates = gather_candidates(root)
    # Which challengers are not compared, and every side's errors, from the evidence.
    recorded = comparison_errors(root, cfg)
    (root / COMPARISON_DIR).mkdir(parents=True, exist_ok=True)
    atomic_write(root / COMPARISON_DIR / ERRORS_FILE, errors_bytes(recorded))
    errors = recorded.data()
    written = []
    for label, directory in comparison_dirs(root, cfg).items():
        report = comparison_report(root, cfg, source, label, candidates=candidates, looks=looks)
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in comparison_files(report).items():
            atomic_write(directory / name, data)
        write_reports(directory, report.released(), model=page_model(cfg, root), errors=errors)
        written.append((label, report, directory))
    if len(written) > 1:
        for name, data in summary_of(cfg, written, errors=errors, root=root).items():
            atomic_write(root / COMPARISON_DIR / name, data)
    return written


def summary_of(
    cfg: ExperimentConfig,
    written: list[tuple[str, ComparisonReport, Path]],
    *,
    errors: dict[str, Any] | None = None,
    root: Path | None = None,
) -> dict[str, bytes]:
    """The summary files of several comparisons, with the plots each directory holds
    (``errors``: the run's errors.json data; ``root``: the run, whose model the page
    names)."""
    images = {
        label: {n: (d / n).read_bytes() for n in PLOT_NAMES if (d / n).is_file()}
        for label, _, d in written
    }
    released = [(label, r.released()) for label, r, _ in written]
    model = page_model(cfg, root)
    return summary_files(cfg.baseline, released, images, model=model, errors=errors)


def comparison_files(report: ComparisonReport) -> dict[str, bytes]:
    """The comparison's JSON reports, restricted and released, as written."""
    return {
        RESTRICTED_REPORT: canonical_bytes(report) + b"\n",
        RELEASED_REPORT: canonical_bytes(report.released()) + b"\n",
    }


def comparison_report(
    root: Path,
    cfg: ExperimentConfig,
    source: SuiteSource,
    challenger: str | None = None,
    *,
    candidates: dict[str, CandidateRuns] | None = None,
    looks: list[dict[str, Any]] | None = None,
) -> ComparisonReport:
    """The comparison of the baseline with ``challenger`` (default: the first) found
    under ``root`` (what :func:`write_comparison` writes; what the auditor recomputes).
    ``looks``: the looks at the tree before this one (xaytune.experiment.tree.looks), shown in the
    report when there are any."""
    if candidates is None:
        candidates = gather_candidates(root)
    a, b, spec, suite = comparison_inputs(root, cfg, source, challenger, candidates=candidates)
    return with_looks(compare(a, b, spec, suite), looks or [])


def comparison_inputs(
    root: Path,
    cfg: ExperimentConfig,
    source: SuiteSource,
    challenger: str | None = None,
    *,
    candidates: dict[str, CandidateRuns],
) -> tuple[CandidateRuns, CandidateRuns, ComparisonSpec, Any]:
    """What :func:`comparison_report` compares: (the baseline's runs, ``challenger``'s
    (default: the first), the spec ``cfg`` declares, the suite); ``missing-candidate``
    when ``candidates`` has no replicates of either."""
    challenger = cfg.challengers[0] if challenger is None else challenger
    missing = [label for label in (cfg.baseline, challenger) if label not in candidates]
    if missing:
        raise ComparisonError(
            "missing-candidate", f"{root}: no replicates of candidate {missing[0]}"
        )
    spec = ComparisonSpec(
        objectives=tuple(
            ObjectiveMetric(metric=o.metric, direction=o.direction, min_effect=o.min_effect)
            for o in cfg.comparison.objectives
        ),
        k=cfg.comparison.k,
        disclosure=cfg.disclosure,
        calibrate=cfg.comparison.calibrate,
        method=cfg.comparison.method,
        alpha=cfg.comparison.alpha,
        bounds=dict(cfg.comparison.bounds),
    )
    return candidates[cfg.baseline], candidates[challenger], spec, source.suite
