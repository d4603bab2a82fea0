"""Where a replicate's files sit in the run tree (the names every reader shares).

Per replicate ``candidates/<name>/seed-<s>/`` (:func:`replicate_dir`): ``evidence/``
(the store, with its published subject), ``evaluation/<label>/`` (each evaluator's
released and restricted reports, :func:`evaluation_dir`) and :data:`REPLICATE_FILE`
(run values and per-task observations, which the comparison reads back; restricted
because it holds per-task reference-derived scores). Beside the seeds,
``candidates/<name>/`` holds :data:`CANDIDATE_FILE` (the candidate's label and harness).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CANDIDATE_FILE", "REPLICATE_FILE", "evaluation_dir", "replicate_dir"]

REPLICATE_FILE = "replicate.restricted.json"
CANDIDATE_FILE = "candidate.json"


def replicate_dir(out: Path, name: str, seed: int) -> Path:
    """The directory of the candidate (harness) ``name``'s replicate under ``seed``."""
    return out / "candidates" / name / f"seed-{seed}"


def evaluation_dir(directory: Path, label: str) -> Path:
    """Where a replicate's evaluation by the evaluator ``label`` writes its reports."""
    return directory / "evaluation" / label
