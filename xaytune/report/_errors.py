"""Attempt errors on every surface: the errors row, the cause lines, the Errors section,
and the withheld comparison of a challenger that is not compared.

Everything here renders ``errors`` — the JSON data of a run's ``errors.json``
(``xaytune.experiment.attempt_errors``, schema ``xaytune.attempt-errors/v1``): per candidate
label its name, ``over_bound`` and replicates (seed, tasks, model_errors, timeouts,
crashes, other, causes), and ``not_compared`` (challenger label -> why). A comparison
finds its two sides in it by candidate name. With no errors on either side and both
compared, report.md and report.html are what they were without this module (their
bytes are pinned by ``python -m xaytune.verify``); the terminal always shows the count.

A withheld comparison shows no verdict, difference, interval, rate or plot: each
objective's verdict cell and the relation say ``not compared (model errors: ...)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from xaytune.comparison.compare import ComparisonReport
from xaytune.report._marks import Badge, Note

__all__ = [
    "NOT_COMPARED",
    "ErrorsView",
    "cause_lines",
    "error_cells",
    "errors_markdown",
    "errors_view",
    "not_compared_text",
    "shows_errors",
    "withheld_markdown",
    "withheld_rows",
    "withheld_view",
]

NOT_COMPARED = "not-compared"
_KINDS = (("model_errors", "model-error"), ("timeouts", "timeout"), ("crashes", "crash"))
_MORE_IDS_AFTER = 5


def _side(errors: dict[str, Any], name: str) -> tuple[str, dict[str, Any]] | None:
    for label, candidate in errors.get("candidates", {}).items():
        if candidate.get("name") == name:
            return label, candidate
    return None


def _sides(errors: dict[str, Any], names: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    return [side for side in (_side(errors, name) for name in names) if side is not None]


def not_compared_text(errors: dict[str, Any] | None, report: ComparisonReport) -> str | None:
    """``not compared (model errors: ...)`` when ``report``'s challenger is withheld."""
    if errors is None:
        return None
    side = _side(errors, report.b.name)
    why = None if side is None else errors.get("not_compared", {}).get(side[0])
    return None if why is None else f"not compared ({why})"


def _totals(candidate: dict[str, Any]) -> dict[str, int]:
    keys = ("tasks", "model_errors", "timeouts", "crashes", "other")
    return {key: sum(r[key] for r in candidate["replicates"]) for key in keys}


def error_cells(errors: dict[str, Any], name: str) -> str:
    """A candidate's error count for a table cell: ``0``, or ``3 (2 model-error,
    1 crash)``; ``—`` when the record has no such candidate."""
    side = _side(errors, name)
    if side is None:
        return "—"
    totals = _totals(side[1])
    parts = [f"{totals[key]} {word}" for key, word in _KINDS if totals[key]]
    if totals["other"]:
        parts.append(f"{totals['other']} other")
    count = sum(totals[key] for key, _ in _KINDS) + totals["other"]
    return f"{count} ({', '.join(parts)})" if count else "0"


def shows_errors(errors: dict[str, Any] | None, report: ComparisonReport) -> bool:
    """Whether a report of ``report`` has an Errors section: a side has an error, or
    the comparison is withheld."""
    if errors is None:
        return False
    if not_compared_text(errors, report) is not None:
        return True
    return any(
        sum(v for k, v in _totals(candidate).items() if k != "tasks")
        for _, candidate in _sides(errors, (report.a.name, report.b.name))
    )


def _ids(group: dict[str, Any]) -> str:
    shown = ", ".join(group["task_ids"])
    more = group["tasks"] - len(group["task_ids"])
    return f" ({shown}{f' and {more} more' if more > 0 else ''})" if shown else ""


def cause_lines(errors: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    """One line per cause group of these candidates' replicates, e.g. ``crash:
    calculator seed 2: 2 tasks (t-03, t-07): loop: ZeroDivisionError: division by
    zero``."""
    lines = []
    for _, candidate in _sides(errors, names):
        for replicate in candidate["replicates"]:
            for group in replicate["causes"]:
                part = f"{group['part']}: " if group.get("part") else ""
                noun = "task" if group["tasks"] == 1 else "tasks"
                lines.append(
                    f"{group['kind']}: {candidate['name']} seed {replicate['seed']}: "
                    f"{group['tasks']} {noun}{_ids(group)}: {part}{group['cause']}"
                )
    return lines


def _bound_line(errors: dict[str, Any]) -> str:
    return (
        f"A candidate with a replicate whose share of tasks ending in a model error "
        f"exceeds {errors['bound']:g} (comparison.max_model_error_share) is not compared: "
        "its numbers measure the endpoint, not the harness."
    )


def _md(text: str) -> str:
    # A cause is text the run recorded: a pipe or a newline must not break the table.
    return text.replace("|", "\\|").replace("\n", " ")


def errors_markdown(errors: dict[str, Any], report: ComparisonReport) -> list[str]:
    """report.md's Errors section for ``report``'s two sides."""
    names = (report.a.name, report.b.name)
    lines = [
        "## Errors",
        "",
        "Tasks without a result of the harness, by how they ended (a task counted once: "
        "its attested outcome, else its last attempt).",
        "",
        "| candidate | seed | tasks | model errors | timeouts | crashes | other |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, candidate in _sides(errors, names):
        for r in candidate["replicates"]:
            lines.append(
                f"| {_md(candidate['name'])} | {r['seed']} | {r['tasks']} | "
                f"{r['model_errors']} | {r['timeouts']} | {r['crashes']} | {r['other']} |"
            )
    causes = cause_lines(errors, names)
    if causes:
        lines += ["", "Causes, grouped:", "", *(f"- {_md(line)}" for line in causes)]
    lines += ["", _bound_line(errors)]
    why = not_compared_text(errors, report)
    if why is not None:
        lines += ["", f"**{report.b.name}: {why}**: no verdict is given."]
    return lines


def withheld_rows(report: ComparisonReport, text: str, columns: int) -> list[tuple[str, ...]]:
    """The objective rows of a withheld comparison: the objective, the verdict cell
    ``text``, every other cell ``—`` (``columns`` cells, the verdict sixth)."""
    rows = []
    for objective in report.spec.objectives:
        cells = ["—"] * columns
        cells[0] = f"{objective.metric} ({objective.direction})"
        cells[5] = text
        rows.append(tuple(cells))
    return rows


def withheld_markdown(report: ComparisonReport, errors: dict[str, Any], header: tuple) -> str:
    """report.md of a withheld comparison: what was run, no verdict, the errors."""
    text = not_compared_text(errors, report)
    assert text is not None
    lines = [
        f"# Comparison: {report.a.name} (A) vs {report.b.name} (B)",
        "",
        f"**Relation: {text}** — no verdict: the model errors make the numbers a "
        "measurement of the endpoint, not of the harness.",
        "",
        f"Suite {report.suite.name} `{report.suite.digest}`; seeds {list(report.seeds)}; "
        f"method {report.method}, k = {report.spec.k}; disclosure {report.spec.disclosure}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in withheld_rows(report, text, len(header))]
    lines += ["", *errors_markdown(errors, report)]
    return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorRow:
    """One replicate's counts in the page's Errors table."""

    candidate: str
    seed: int
    tasks: int
    model_errors: int
    timeouts: int
    crashes: int
    other: int


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorsView:
    """The page's Errors section: counts per replicate, causes, the bound, and why
    the comparison is withheld (None: it is not)."""

    rows: tuple[ErrorRow, ...]
    causes: tuple[str, ...]
    bound: str
    not_compared: str | None


def errors_view(errors: dict[str, Any] | None, report: ComparisonReport) -> ErrorsView | None:
    """The Errors section of ``report``'s page; None when it has none."""
    if errors is None or not shows_errors(errors, report):
        return None
    names = (report.a.name, report.b.name)
    rows = tuple(
        ErrorRow(
            candidate["name"],
            r["seed"],
            r["tasks"],
            r["model_errors"],
            r["timeouts"],
            r["crashes"],
            r["other"],
        )
        for _, candidate in _sides(errors, names)
        for r in candidate["replicates"]
    )
    return ErrorsView(
        rows=rows,
        causes=tuple(cause_lines(errors, names)),
        bound=_bound_line(errors),
        not_compared=not_compared_text(errors, report),
    )


def withheld_view(view: Any, report: ComparisonReport, errors: dict[str, Any] | None) -> Any:
    """``view`` (a ComparisonView) with its Errors section and, when the comparison is
    withheld, without any verdict, difference, rate, note or plot."""
    section = errors_view(errors, report)
    if section is None:
        return view
    text = section.not_compared
    if text is None:
        return dataclasses.replace(view, errors=section)
    badge = Badge(NOT_COMPARED, text)
    blank = {
        "a_mean": "—",
        "b_mean": "—",
        "ratio": "—",
        "mean": "—",
        "threshold": "—",
        "interval": "—",
        "verdict": badge,
        "reason": text,
        "spans_zero": False,
        "aa_rate": "—",
        "power_at": "—",
        "present": False,
    }
    objectives = tuple(_replaced(o, blank) for o in view.objectives)
    note = Note(
        "warning",
        "Not compared",
        f"{text}: the model errors make these numbers a measurement of the endpoint, "
        "not of the harness; no verdict is given. The Errors section says which tasks "
        "and why.",
    )
    cleared = {
        "relation": badge,
        "relation_words": "no verdict: see Errors",
        "objectives": objectives,
        "notes": (note,),
        "metrics": (),
        "collapsed": "",
        "wilson": (),
        "plots": (),
        "errors": section,
    }
    return _replaced(view, cleared)


def _replaced(record: Any, values: dict[str, Any]) -> Any:
    """``record`` with those of ``values`` that are its fields replaced."""
    names = {field.name for field in dataclasses.fields(record)}
    return dataclasses.replace(record, **{k: v for k, v in values.items() if k in names})
