"""Gathering replicates from an output tree and writing the comparison.

Single-process runs and multirun sweeps both end here: the comparison is computed
from what the replicates wrote to disk, so the two give identical numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

from xaytune.app.config import ExperimentConfig
from xaytune.app.experiment import CANDIDATE_FILE, REPLICATE_FILE
from xaytune.app.reports import write_reports
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import ComparisonError
from xaytune.core.harness_comparison import (
    CandidateRuns,
    ComparisonReport,
    ComparisonSpec,
    ObjectiveMetric,
    ReplicateRuns,
    compare,
)
from xaytune.harness.evidence.store import atomic_write

__all__ = [
    "COMPARISON_DIR",
    "RELEASED_REPORT",
    "RESTRICTED_REPORT",
    "comparison_files",
    "comparison_report",
    "gather_candidates",
    "write_comparison",
]

COMPARISON_DIR = "comparison"
RELEASED_REPORT = "report.json"
RESTRICTED_REPORT = "report.restricted.json"


def gather_candidates(root: Path) -> dict[str, CandidateRuns]:
    """CandidateRuns per label ("a", "b") from every replicate under ``root``."""
    found: dict[str, tuple[dict, list[ReplicateRuns]]] = {}
    for path in sorted(root.rglob(REPLICATE_FILE)):
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


def write_comparison(
    root: Path, cfg: ExperimentConfig, source: SuiteSource
) -> tuple[ComparisonReport, Path]:
    """Compare candidates a and b found under ``root``; write comparison/ there."""
    report = comparison_report(root, cfg, source)
    directory = root / COMPARISON_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in comparison_files(report).items():
        atomic_write(directory / name, data)
    write_reports(directory, report.released())
    return report, directory


def comparison_files(report: ComparisonReport) -> dict[str, bytes]:
    """The comparison's JSON reports, restricted and released, as written."""
    return {
        RESTRICTED_REPORT: canonical_bytes(report) + b"\n",
        RELEASED_REPORT: canonical_bytes(report.released()) + b"\n",
    }


def comparison_report(root: Path, cfg: ExperimentConfig, source: SuiteSource) -> ComparisonReport:
    """The comparison of candidates a and b found under ``root`` (what
    :func:`write_comparison` writes; what the auditor recomputes)."""
    candidates = gather_candidates(root)
    missing = [label for label in ("a", "b") if label not in candidates]
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
    )
    return compare(candidates["a"], candidates["b"], spec, source.suite)
