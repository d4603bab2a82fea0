"""A replicate's evaluations recomputed from its verified evidence, by the auditor.

The outcome evaluator is deterministic and offline: run again on the published
subject it gives the same result, the same report files and the same per-task
observations the replicate record keeps. A judge may call a model, so its
evaluation is not recomputed (its subject is checked by the caller).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xaytune.app._audit_comparison import RECOMPUTE_ERRORS, cannot_recompute
from xaytune.app.config import ExperimentConfig
from xaytune.app.experiment import (
    REPLICATE_FILE,
    configured_evaluation,
    evaluation_dir,
    observed_tasks,
)
from xaytune.app.parts import part_change
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.evaluation.harness import recompute_harness_evaluation
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.publish import PublishedSubject
from xaytune.plugins import CodeIdentity

__all__ = ["evaluation_problems"]

# Evaluators whose evaluation is a function of the evidence and the suite alone.
_RECOMPUTED = frozenset({"harness-outcome"})


def evaluation_problems(
    cfg: ExperimentConfig,
    source: SuiteSource,
    directory: Path,
    record: dict[str, Any],
    subject: PublishedSubject,
    evidence: HarnessRunEvidence,
    seed: int,
    warnings: list[str],
) -> list[tuple[Path, str]]:
    """(file, problem) for each recomputed evaluation of the replicate in ``directory``
    (of ``seed``, its record parsed as ``record``) that is not what its files and its
    record say. ``evidence`` is the subject's, verified by the caller against
    ``source`` and its store (each store is verified once per audit).

    An evaluation whose scorer's code here is not the code the run recorded cannot
    be recomputed faithfully: it is not, and a line is added to ``warnings`` instead
    (the recorded evaluation is still tied to its evidence by the caller).
    """
    record_path = directory / REPLICATE_FILE
    problems: list[tuple[Path, str]] = []
    try:
        stored = {e["evaluator_fingerprint"]: e for e in record["evaluations"]}
        recomputed = []
        for label in sorted(cfg.evaluators):
            if cfg.evaluators[label].name not in _RECOMPUTED:
                continue
            changed = _scorer_change(evaluation_dir(directory, label))
            if changed is not None:
                warnings.append(f"{changed}; evaluation {label} not recomputed")
                continue
            evaluator, spec = configured_evaluation(cfg, source, label)
            evaluation, files = recompute_harness_evaluation(
                evaluator,
                spec,
                subject,
                source=source,
                directory=evaluation_dir(directory, label),
                seed=seed,
                verified=evidence,
            )
            recomputed.append(evaluation)
            for path, data in files.items():
                if _read(path) != data:
                    problems.append((path, "evaluation-mismatch: not what the evidence gives"))
            result = evaluation.result
            if result is None or stored.get(result.evaluator_fingerprint) != _json(result):
                problems.append(
                    (record_path, f"evaluation-mismatch: evaluation {label} is not the evidence's")
                )
        for key, observations in observed_tasks(cfg, recomputed).items():
            if record["task_observations"].get(key) != _json(observations):
                problems.append(
                    (
                        record_path,
                        f"evaluation-mismatch: observations of {key} are not the evidence's",
                    )
                )
    except RECOMPUTE_ERRORS as error:
        problems.append(
            (record_path, cannot_recompute("evaluation-mismatch", "the evaluations", error))
        )
    return problems


def _scorer_change(directory: Path) -> str | None:
    """How the scorer the released evaluation in ``directory`` recorded differs from
    the code here, or None (also when nothing readable is recorded: the recompute
    then reports the evaluation itself)."""
    path = directory / "evaluation.json"
    try:
        recorded = json.loads(path.read_bytes())["evaluation"]["config"]["spec"]["scorer"]["code"]
        identity = CodeIdentity.model_validate(recorded)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    change = part_change(identity)
    return None if change is None else f"{path}: {change}"


def _json(value: object) -> object:
    return json.loads(canonical_bytes(value))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
