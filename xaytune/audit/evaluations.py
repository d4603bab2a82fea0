"""A replicate's evaluations recomputed from its verified evidence, by the auditor.

The outcome evaluator is deterministic and offline: run again on the published
subject it gives the same result, the same report files and the same per-task
observations the replicate record keeps. A judge may call a model, so its
evaluation is not recomputed (its subject is checked by the caller).

The scorer contract: a scorer is a deterministic function of the answer and the
reference, so recomputing it is how the audit checks a recorded score. A scorer that
runs model-written code (``execution``) runs it again here, in the same sandbox as the
run (the scorer is the only caller of the sandbox: nothing here executes an answer);
a recorded pass the code cannot repeat is exactly what the audit must catch. When a
task's score or scorer reason differs, the audit names that task, the scorer and both
verdicts in one line per task, instead of one line per file and record the difference
then changes (those follow from it and are not repeated).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xaytune.audit.comparison import RECOMPUTE_ERRORS, cannot_recompute
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.evaluation.harness import recompute_harness_evaluation
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.evaluators import configured_evaluation, observed_evaluations
from xaytune.experiment.parts import part_change
from xaytune.experiment.tree.files import REPLICATE_FILE, evaluation_dir
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
        named_by_task = False
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
            restricted = evaluation.restricted_path
            on_disk = {path: _read(path) for path in files}
            # Task verdicts are read from the report's bytes: the same bytes, the same
            # verdicts, so only a report that differs is parsed (twice) to name them.
            if on_disk[restricted] != files[restricted]:
                differing = _task_differences(label, on_disk[restricted], files[restricted])
                if differing:  # the cause, by task; the files and record follow from it
                    problems += [(restricted, line) for line in differing]
                    named_by_task = True
                    continue
            for path, data in files.items():
                if on_disk[path] != data:
                    problems.append((path, "evaluation-mismatch: not what the evidence gives"))
            result = evaluation.result
            if result is None or stored.get(result.evaluator_fingerprint) != _json(result):
                problems.append(
                    (record_path, f"evaluation-mismatch: evaluation {label} is not the evidence's")
                )
        for key, taken_from in observed_evaluations(cfg, recomputed).items():
            if named_by_task:
                break  # the observations follow from the tasks named above
            # As JSON data (what the record holds), made from the report's columns.
            observed = taken_from.restricted.task_observations().data(key)
            if record["task_observations"].get(key) != observed:
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


def _task_differences(label: str, written: bytes | None, recomputed: bytes) -> list[str]:
    """One line per task whose task_success or scorer reason in the restricted report
    as ``written`` (None: unreadable) is not the one in its ``recomputed`` bytes; []
    when either cannot be read as a report (the file comparison then says so)."""
    if written is None:
        return []
    try:
        recorded = json.loads(written)
        scorer = recorded["evaluation"]["config"]["spec"]["scorer"]["name"]
        before, after = _verdicts(recorded), _verdicts(json.loads(recomputed))
    except (OSError, ValueError, KeyError, TypeError, StopIteration):
        return []
    return [
        f"evaluation-mismatch: evaluation {label}: scorer {scorer!r} on task {task_id!r}: "
        f"recorded {before.get(task_id, 'nothing')}, recomputed {verdict} (a scorer must "
        "be deterministic: the same answer and reference, the same verdict)"
        for task_id, verdict in after.items()
        if before.get(task_id) != verdict
    ]


def _verdicts(report: dict[str, Any]) -> dict[str, str]:
    """task id -> ``task_success <value> (<scorer reason>)`` (or its absence) in one
    restricted report as written."""
    success = next(c for c in report["task_columns"] if c["metric"] == "task_success")
    reasons = {item["task_id"]: item["reason"] for item in report.get("scorer_reasons", ())}
    verdicts = {}
    for task_id, value, absence in zip(
        report["task_ids"], success["values"], success["absences"], strict=True
    ):
        shown = f"task_success {value}" if absence is None else f"absent ({absence})"
        reason = reasons.get(task_id)
        verdicts[task_id] = shown if reason is None else f"{shown} ({reason})"
    return verdicts


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


def _json(result: Any) -> object:
    """``result`` as the JSON data its canonical bytes parse to: what a replicate
    record holds of it. ``model_dump(mode="json")`` gives that data without writing
    and parsing the bytes: canonical JSON writes each float so that it parses back to
    the same float (an integral one as the integer, equal under ``==``), and the
    canonical writer itself serialises a model by this dump.
    """
    return result.model_dump(mode="json")


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
