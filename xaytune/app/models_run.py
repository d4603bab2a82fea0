"""Several models: every candidate under each model, a harness comparison per model.

A harness comparison holds within one model (condition C4: the same execution
facets); comparing models with each other is not one, and is never made: each model
is a run of its own in ``models/<label>/`` (its intent, manifest, replicates and
comparison, verified like any run), and the root's ``comparison/models.json`` and
``models.md`` say, per challenger and objective, what each model's comparison found
and where they agree ("favors mental on 2 of 3 models").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xaytune.app.config import ExperimentConfig
from xaytune.app.gather import COMPARISON_DIR, RELEASED_REPORT, comparison_dirs
from xaytune.core.canonical import canonical_bytes
from xaytune.harness.evidence.store import atomic_write

__all__ = [
    "MODELS_DIR",
    "MODELS_FILES",
    "models_problems",
    "models_summary_files",
    "run_models",
]

MODELS_DIR = "models"
MODELS_FILES = ("models.json", "models.md")
MODELS_SCHEMA = "xaytune.models-summary/v1"

SubRun = tuple[ExperimentConfig, dict[str, Any]]


def run_models(
    cfg: ExperimentConfig,
    subs: dict[str, SubRun],
    out: Path,
    run_job: Callable[[ExperimentConfig, dict[str, Any], Path], int],
) -> int:
    """Run each model's experiment in ``out/models/<label>/`` (resuming the ones a
    resumed tree holds), then write the summary; the worst gate code."""
    codes = []
    for label, (sub_cfg, sub_plain) in subs.items():
        sub_out = out / MODELS_DIR / label
        sub_out.mkdir(parents=True, exist_ok=True)
        started = (sub_out / "manifest.json").exists()
        if not started:
            sub_cfg = sub_cfg.model_copy(update={"resume": None})
        print(f"model {label}:")
        codes.append(run_job(sub_cfg, sub_plain, sub_out))
    files = models_summary_files(cfg, out)
    directory = out / COMPARISON_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        atomic_write(directory / name, data)
    print(files["models.md"].decode())
    return max(codes)


def _reports(cfg: ExperimentConfig, out: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Each model's released comparison per challenger label, as written."""
    found = {}
    for model in sorted(cfg.models or {}):
        base = out / MODELS_DIR / model
        found[model] = {
            label: json.loads((directory / RELEASED_REPORT).read_bytes())
            for label, directory in comparison_dirs(base, cfg).items()
        }
    return found


def _summary(cfg: ExperimentConfig, out: Path) -> dict[str, Any]:
    reports = _reports(cfg, out)
    models = list(reports)
    rows = []
    for label in cfg.challengers:
        for objective in cfg.comparison.objectives:
            verdicts = {
                m: reports[m][label]["metrics"][objective.metric]["verdict"] for m in models
            }
            favors = sum(v == "favors-b" for v in verdicts.values())
            against = sum(v == "favors-a" for v in verdicts.values())
            rows.append(
                {
                    "challenger": label,
                    "name": cfg.candidates[label].name,
                    "metric": objective.metric,
                    "verdicts": verdicts,
                    "favors_challenger": favors,
                    "favors_baseline": against,
                    "agree": len(set(verdicts.values())) == 1,
                }
            )
    return {
        "schema": MODELS_SCHEMA,
        "baseline": {"label": cfg.baseline, "name": cfg.candidates[cfg.baseline].name},
        "models": models,
        "relations": {
            m: {label: reports[m][label]["relation"] for label in cfg.challengers} for m in models
        },
        "rows": rows,
        "note": "Each verdict is one model's harness comparison (C4 holds within a model); "
        "models are never compared with each other.",
    }


def _markdown(data: dict[str, Any]) -> str:
    models, baseline = data["models"], data["baseline"]["name"]
    lines = [
        f"# Across {len(models)} models: challengers against {baseline}",
        "",
        "| challenger | objective | " + " | ".join(models) + " | summary |",
        "|---|---|" + "---|" * len(models) + "---|",
    ]
    for row in data["rows"]:
        total = len(models)
        if row["favors_challenger"]:
            said = f"favors {row['name']} on {row['favors_challenger']} of {total} models"
        elif row["favors_baseline"]:
            said = f"favors {baseline} on {row['favors_baseline']} of {total} models"
        else:
            said = f"no side on any of {total} models"
        if not row["agree"]:
            said += " (the models disagree)"
        cells = " | ".join(row["verdicts"][m] for m in models)
        who = f"{row['name']} ({row['challenger']})"
        lines.append(f"| {who} | {row['metric']} | {cells} | {said} |")
    lines += ["", data["note"], ""]
    return "\n".join(lines)


def models_summary_files(cfg: ExperimentConfig, out: Path) -> dict[str, bytes]:
    """``models.json`` and ``models.md`` of the run in ``out`` (what the auditor
    recomputes from each model's released comparisons)."""
    data = _summary(cfg, out)
    return {
        "models.json": canonical_bytes(data) + b"\n",
        "models.md": _markdown(data).encode(),
    }


def models_problems(cfg: ExperimentConfig, out: Path) -> list[tuple[Path, str]]:
    """(file, problem) for each summary file not what the models' comparisons give."""
    directory = out / COMPARISON_DIR
    try:
        expected = models_summary_files(cfg, out)
    except (OSError, ValueError, KeyError, TypeError) as error:
        return [(directory, f"report-mismatch: the models' summary cannot be recomputed ({error})")]
    problems = []
    for name, data in expected.items():
        path = directory / name
        try:
            if path.read_bytes() != data:
                problems.append((path, "report-mismatch: not the summary the models give"))
        except OSError:
            problems.append((path, "report-missing: the models' summary"))
    return problems
