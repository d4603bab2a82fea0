"""Several models: every candidate under each model, a harness comparison per model.

A harness comparison holds within one model (condition C4: the same execution
facets); comparing models with each other is not one, and is never made: each model
is a run of its own in ``models/<label>/`` (its intent, manifest, replicates and
comparison, verified like any run), and the root's ``comparison/models.json`` and
``models.md`` say, per challenger and objective, what each model's comparison found
and where they agree: both directions with their counts ("favors calculator on 2 of 3
models, mental on 1 of 3"), next to what chance alone would give if every model's
candidates were the same harness (from each model's own A/A rate).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.tree.gather import COMPARISON_DIR, RELEASED_REPORT, comparison_dirs

__all__ = [
    "MODELS_DIR",
    "MODELS_FILES",
    "models_problems",
    "models_summary_files",
    "print_models",
    "row_words",
]

MODELS_DIR = "models"
MODELS_FILES = ("models.json", "models.md")
MODELS_SCHEMA = "xaytune.models-summary/v1"

CHANCE_NOTE = (
    "By chance alone: if under every model both candidates were the same harness, how "
    "often at least one model would name a side on this objective (1 − Π(1 − p_m) over "
    "the models' own A/A rates p_m: their runs are independent), and how many models "
    "would be expected to name each side; ≤ where a model's rate is an upper bound "
    "(normal theory with a positive min_effect). A count no higher than that is what "
    "chance gives."
)


def print_models(data: dict[str, Any], *, console=None) -> None:
    """The summary across models on the terminal: a table (challenger x objective, a
    verdict per model), then its two notes."""
    from rich.console import Console

    from xaytune.report import terminal_grid

    console = console or Console()
    models, baseline, total = data["models"], data["baseline"]["name"], len(data["models"])
    terminal_grid(
        f"Across {total} models: challengers against {baseline}",
        ("challenger", "objective", *models, "summary", "by chance alone (A/A)"),
        [
            (
                f"{row['name']} ({row['challenger']})",
                row["metric"],
                *(row["verdicts"][m] for m in models),
                row_words(row, baseline, total),
                _chance(row, total),
            )
            for row in data["rows"]
        ],
        whole=tuple(models),
        console=console,
    )
    console.print(data["note"], markup=False)
    console.print(CHANCE_NOTE, markup=False)


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


def _not_compared(out: Path, model: str) -> dict[str, str]:
    """The challengers a model's run does not compare (xaytune.experiment.attempt_errors)."""
    from xaytune.experiment.attempt_errors import ERRORS_FILE

    path = out / MODELS_DIR / model / COMPARISON_DIR / ERRORS_FILE
    return json.loads(path.read_bytes())["not_compared"] if path.is_file() else {}


def _summary(cfg: ExperimentConfig, out: Path) -> dict[str, Any]:
    from xaytune.comparison.compare import independent_family_rate

    reports = _reports(cfg, out)
    models = list(reports)
    rows = []
    for label in cfg.challengers:
        for objective in cfg.comparison.objectives:
            verdicts = {
                # A challenger not compared under a model (its errors.json) has no verdict.
                m: "not-compared"
                if label in _not_compared(out, m)
                else reports[m][label]["metrics"][objective.metric]["verdict"]
                for m in models
            }
            favors = sum(v == "favors-b" for v in verdicts.values())
            against = sum(v == "favors-a" for v in verdicts.values())
            found = [_aa_rate(reports[m][label], objective.metric) for m in models]
            known = None if any(f is None for f in found) else [f[0] for f in found]
            # Normal theory with a positive min_effect gives an upper bound, not a rate.
            bound = (
                known is not None
                and objective.min_effect > 0
                and any(f[1] == "student-t" for f in found)
            )
            rows.append(
                {
                    "challenger": label,
                    "name": cfg.candidates[label].name,
                    "metric": objective.metric,
                    "verdicts": verdicts,
                    "favors_challenger": favors,
                    "favors_baseline": against,
                    "agree": len(set(verdicts.values())) == 1,
                    # If every model's candidates were the same harness: the chance at
                    # least one model names a side (the models' runs are independent,
                    # so 1 − Π(1 − p_m) is exact given each p_m), and the expected
                    # number of models naming each side (half of Σ p_m, by symmetry).
                    "aa_any_model": None if known is None else independent_family_rate(known),
                    "aa_expected_per_side": None if known is None else math.fsum(known) / 2,
                    "aa_upper_bound": bound,
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


def _aa_rate(report: dict[str, Any], metric: str) -> tuple[float, str] | None:
    """One model's A/A rate of ``metric`` and its model ("binomial-lattice",
    "student-t") as its released report states them (None when its comparison has no
    calibration or the rule did not decide the objective)."""
    calibration = report.get("calibration")
    if calibration is None:
        return None
    for objective in calibration["objectives"]:
        if objective["metric"] == metric:
            return objective["rate"], objective["model"]
    return None


def row_words(row: dict[str, Any], baseline: str, total: int) -> str:
    """What the models say on one row, both directions with their counts ("favors
    calculator on 2 of 3 models, mental on 1 of 3 (the models disagree)"): a majority
    one way is never hidden behind a minority the other way."""
    sides = []
    if row["favors_baseline"]:
        sides.append(f"{baseline} on {row['favors_baseline']} of {total}")
    if row["favors_challenger"]:
        sides.append(f"{row['name']} on {row['favors_challenger']} of {total}")
    if not sides:
        return f"no side on any of {total} models"
    sides[0] += " models"
    said = "favors " + ", ".join(sides)
    return said + (" (the models disagree)" if len(sides) == 2 else "")


def _chance(row: dict[str, Any], total: int) -> str:
    if row["aa_any_model"] is None:
        return "—"
    at_most = "≤ " if row["aa_upper_bound"] else ""
    return (
        f"{at_most}{100 * row['aa_any_model']:.1f}% for ≥ 1 of {total}; "
        f"{at_most}{row['aa_expected_per_side']:.2f} expected per side"
    )


def _markdown(data: dict[str, Any]) -> str:
    models, baseline = data["models"], data["baseline"]["name"]
    lines = [
        f"# Across {len(models)} models: challengers against {baseline}",
        "",
        "| challenger | objective | " + " | ".join(models) + " | summary | by chance alone (A/A) |",
        "|---|---|" + "---|" * len(models) + "---|---|",
    ]
    total = len(models)
    for row in data["rows"]:
        cells = " | ".join(row["verdicts"][m] for m in models)
        who = f"{row['name']} ({row['challenger']})"
        lines.append(
            f"| {who} | {row['metric']} | {cells} | {row_words(row, baseline, total)} "
            f"| {_chance(row, total)} |"
        )
    lines += ["", data["note"], "", CHANCE_NOTE, ""]
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
