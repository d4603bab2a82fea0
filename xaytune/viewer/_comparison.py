"""The run's published comparison as the viewer shows it: relation, verdicts, and the
tasks behind each verdict.

Read, never recomputed: each challenger's ``report.json`` (relation, each objective's
verdict, mean paired difference and threshold) and ``report.restricted.json`` (the
per-task oriented differences the comparison itself computed), both bound to the
digests the manifest records. A file that is not the one the manifest recorded is
shown as a problem, with no verdict from it. An unfinished run has no comparison yet.
A challenger the run's errors record (``comparison/errors.json``) says is not compared
(its numbers measure the endpoint: too many model errors) shows why, and no verdict,
as the reports do.

A task's *contribution* to an objective's mean paired difference is the sum of its
per-seed differences divided by (tasks under that seed × seeds): the run value of a
seed is the mean over its tasks, and the paired difference the mean over seeds, so the
contributions of all tasks add up to the mean paired difference. Differences are
oriented as the report orients them: positive favours the baseline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xaytune.core.canonical import sha256_digest
from xaytune.experiment.tree.gather import RELEASED_REPORT, RESTRICTED_REPORT, comparison_dirs
from xaytune.viewer._tree import RunTree

__all__ = ["ComparisonView", "ObjectiveView", "RankedTask", "read_comparisons"]

# The run's errors record (xaytune.experiment.attempt_errors.ERRORS_FILE), beside the comparison.
ERRORS_FILE = "errors.json"


@dataclass(frozen=True, slots=True)
class RankedTask:
    """One task's part in an objective's paired difference (+ favours the baseline)."""

    task_id: str
    seeds: tuple[int, ...]
    differences: tuple[float, ...]
    contribution: float

    @property
    def per_seed(self) -> tuple[tuple[int, float], ...]:
        return tuple(zip(self.seeds, self.differences, strict=True))


@dataclass(frozen=True, slots=True)
class ObjectiveView:
    """One objective of one comparison: its verdict as published, and the tasks whose
    contribution is not zero, those pushing the mean paired difference its way first
    (largest first; ties by task id), then those pulling against it (``unchanged``:
    how many tasks contributed nothing)."""

    metric: str
    direction: str
    min_effect: float
    verdict: str
    reason: str
    mean: float | None
    threshold: float | None
    unit: str | None
    ranked: tuple[RankedTask, ...]
    unchanged: int
    slug: str

    def favouring(self, side: str) -> frozenset[str]:
        """Task ids whose contribution favours ``side`` ("baseline" or "challenger")."""
        sign = 1 if side == "baseline" else -1
        return frozenset(t.task_id for t in self.ranked if sign * t.contribution > 0)


@dataclass(frozen=True, slots=True)
class ComparisonView:
    """The baseline against one challenger: relation and objectives, or the problem
    that keeps the published comparison from being shown."""

    label: str
    name: str
    baseline: str
    relation: str | None
    claim: str | None
    objectives: tuple[ObjectiveView, ...]
    problem: str | None
    directory: str
    not_compared: str | None = None


def _read(path: Path, recorded: str | None, root: Path) -> tuple[dict[str, Any] | None, str | None]:
    shown = path.relative_to(root).as_posix()
    try:
        data = path.read_bytes()
    except OSError as error:
        return None, f"{shown}: unreadable ({error.strerror})"
    if recorded is None:
        return None, f"{shown}: the manifest records no digest of it"
    if sha256_digest(data) != recorded:
        return None, f"{shown}: digest-mismatch: not the file the manifest recorded"
    try:
        return json.loads(data), None
    except ValueError:
        return None, f"{shown}: not JSON"


def _ranked(rows: list[dict[str, Any]], mean: float | None) -> tuple[tuple[RankedTask, ...], int]:
    """The tasks with a non-zero contribution, those pushing the mean's way first
    (largest first, ties by task id), and how many tasks contributed nothing."""
    per_seed: dict[int, int] = {}
    for row in rows:
        for seed in row["seeds"]:
            per_seed[seed] = per_seed.get(seed, 0) + 1
    replicates = len(per_seed)
    tasks = []
    for row in rows:
        share = sum(d / per_seed[s] for s, d in zip(row["seeds"], row["differences"], strict=True))
        tasks.append(
            RankedTask(
                row["task_id"],
                tuple(row["seeds"]),
                tuple(row["differences"]),
                share / replicates if replicates else 0.0,
            )
        )
    way = -1 if mean is not None and mean < 0 else 1
    moved = sorted(
        (t for t in tasks if t.contribution != 0), key=lambda t: (-way * t.contribution, t.task_id)
    )
    return tuple(moved), len(tasks) - len(moved)


def _view(label: str, tree: RunTree, directory: Path) -> ComparisonView:
    manifest = tree.manifest
    recorded = {} if manifest is None else manifest.reports
    root = tree.root
    name = next((c.name for c in tree.candidates if c.label == label), label)
    baseline = tree.candidates[0].name
    where = directory.relative_to(root).as_posix()
    released, problem = _read(
        directory / RELEASED_REPORT, recorded.get(f"{where}/{RELEASED_REPORT}"), root
    )
    restricted, problem_r = (None, None)
    if problem is None:
        restricted, problem_r = _read(
            directory / RESTRICTED_REPORT, recorded.get(f"{where}/{RESTRICTED_REPORT}"), root
        )
    problem = problem or problem_r
    if problem is not None or released is None or restricted is None:
        return ComparisonView(label, name, baseline, None, None, (), problem, where)
    per_task = (restricted.get("restricted") or {}).get("task_differences") or {}
    objectives = []
    for objective in released["spec"]["objectives"]:
        metric = objective["metric"]
        compared = released["metrics"][metric]
        ranked, unchanged = _ranked(list(per_task.get(metric, ())), compared["mean"])
        objectives.append(
            ObjectiveView(
                metric=metric,
                direction=objective["direction"],
                min_effect=objective["min_effect"],
                verdict=compared["verdict"],
                reason=compared["reason"],
                mean=compared["mean"],
                threshold=compared["threshold"],
                unit=compared["unit"],
                ranked=ranked,
                unchanged=unchanged,
                slug=f"{label}-{metric}",
            )
        )
    return ComparisonView(
        label,
        name,
        baseline,
        released["relation"],
        released["claim"],
        tuple(objectives),
        None,
        where,
    )


def _not_compared(tree: RunTree) -> tuple[dict[str, str], str | None]:
    """Challenger label -> why it is not compared, from the run's errors record (none
    in a run written before it existed), or the problem that keeps it from being read."""
    path = tree.root / "comparison" / ERRORS_FILE
    if not path.is_file():
        return {}, None
    recorded = {} if tree.manifest is None else tree.manifest.reports
    data, problem = _read(path, recorded.get(f"comparison/{ERRORS_FILE}"), tree.root)
    if problem is not None or not isinstance(data, dict):
        return {}, problem or f"comparison/{ERRORS_FILE}: not an errors record"
    found = data.get("not_compared") or {}
    if not isinstance(found, dict):
        return {}, f"comparison/{ERRORS_FILE}: not an errors record"
    return {str(label): str(why) for label, why in found.items()}, None


def read_comparisons(tree: RunTree) -> tuple[ComparisonView, ...]:
    """Each challenger's published comparison with the baseline (none while the run
    is unfinished: its comparison is written last)."""
    if not tree.complete or tree.config is None:
        return ()
    not_compared, errors_problem = _not_compared(tree)
    found = []
    for label, directory in comparison_dirs(tree.root, tree.config).items():
        where = directory.relative_to(tree.root).as_posix()
        name = next((c.name for c in tree.candidates if c.label == label), label)
        baseline = tree.candidates[0].name
        if errors_problem is not None or label in not_compared:
            # Verdicts withheld as the reports withhold them (or unknowable).
            found.append(
                ComparisonView(
                    label,
                    name,
                    baseline,
                    None,
                    None,
                    (),
                    errors_problem,
                    where,
                    not_compared.get(label),
                )
            )
            continue
        try:
            found.append(_view(label, tree, directory))
        except (KeyError, TypeError, ValueError) as error:
            problem = f"{where}: not a comparison report ({error!r})"
            found.append(ComparisonView(label, name, baseline, None, None, (), problem, where))
    return tuple(found)
