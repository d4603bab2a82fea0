"""The data behind the entry page's task explorer (search, sort, filters).

One JSON document embedded in ``index.html`` (a ``<script type="application/json">``:
the page works from ``file://``, with no request): the columns, and per task its id,
its input as one line of text, each (seed, candidate) cell's state and label, its
contribution to each objective's mean paired difference (+ favours the baseline;
null where the task has none), the filters it is in and its error causes. Every
``<`` is written as ``\\u003c`` so no value can close the script element.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xaytune.core.domain.benchmark import Task
from xaytune.viewer._replicate import Cell

if TYPE_CHECKING:
    from xaytune.viewer._comparison import ComparisonView
    from xaytune.viewer._tree import RunTree

__all__ = ["INPUT_CHARS", "TaskRow", "explorer_json", "task_text"]

# Characters of a task's input the explorer holds (and searches): enough to find a
# task by what it asks, without copying a long prompt into the page.
INPUT_CHARS = 300


@dataclass(frozen=True, slots=True)
class TaskRow:
    """One task in the index: a cell per (seed, candidate), its filters, the error
    causes of its attempts, and its input as one line of text."""

    task_id: str
    cells: tuple[Cell, ...]
    filters: frozenset[str]
    causes: tuple[str, ...] = ()
    text: str = ""


def task_text(task: Task | None) -> str:
    """A task's input as one line: its values joined, whitespace collapsed, clipped."""
    if task is None:
        return ""
    parts = []
    for value in task.input.values():
        parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= INPUT_CHARS else text[: INPUT_CHARS - 1] + "…"


def explorer_json(
    tree: RunTree,
    rows: Sequence[TaskRow],
    comparisons: Sequence[ComparisonView],
    titles: dict[str, str],
) -> str:
    """The explorer's document, ready to embed (see the module docstring)."""
    columns = [
        {"seed": seed, "candidate": candidate.name}
        for seed in tree.seeds
        for candidate in tree.candidates
    ]
    objectives = []
    contributions: list[dict[str, float]] = []
    for comparison in comparisons:
        for objective in comparison.objectives:
            objectives.append(
                {"title": f"{objective.metric}: {comparison.name}", "slug": objective.slug}
            )
            contributions.append({t.task_id: t.contribution for t in objective.ranked})
    causes = sorted({cause for row in rows for cause in row.causes})
    filters: dict[str, Any] = dict(titles)
    filters.update({f"cause:{cause}": f"error cause: {cause}" for cause in causes})
    document = {
        "columns": columns,
        "objectives": objectives,
        "filters": filters,
        "rows": [
            {
                "id": row.task_id,
                "input": row.text,
                "cells": [[cell.state, " ".join((cell.label, *cell.notes))] for cell in row.cells],
                "contrib": [by_task.get(row.task_id) for by_task in contributions],
                "filters": sorted(row.filters) + [f"cause:{cause}" for cause in row.causes],
            }
            for row in rows
        ],
    }
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c")
