"""The viewer's static site over one run: the comparison, the tasks behind each verdict,
every task's transcripts.

Layout of the output directory (relative links only; every page works from
``file://``; only ``index.html`` carries a script, inline)::

    index.html                  the entry page: the run's state, each challenger's
                                relation and objectives' verdicts (each verdict links
                                to its ranked tasks), error causes grouped, and a task
                                explorer (search by task id or input, sort by any
                                column, a filter for every objective; its state is
                                kept in the URL's fragment: #q=...&filter=...&sort=...)
    objective-<label>-<metric>.html
                                one objective of one comparison: the tasks ranked by
                                their contribution to its mean paired difference
    <filter>.html, <filter>-<n>.html
                                the tasks a filter keeps, 200 a page (``all.html``:
                                every task), readable without a script
    tasks/<task id>.html        one task: its input, its reference answer, per seed
                                each candidate's outcome and scorer reasons, and the
                                attempts' transcripts side by side, one column per
                                candidate

Filters: :mod:`xaytune.viewer._filters`. A task's outcome is shown only when its
record and every attempt verify. Writing is one pass over the tasks (each attempt file
read, verified and rendered once), then the index pages: linear in the run's size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xaytune.core.errors import XaytuneError
from xaytune.report.jinja import render
from xaytune.viewer._attempts import AttemptView
from xaytune.viewer._comparison import read_comparisons
from xaytune.viewer._explorer import TaskRow, explorer_json, task_text
from xaytune.viewer._filters import (
    BASE_FILTERS,
    filter_titles,
    objective_filters,
    outcome_filters,
)
from xaytune.viewer._replicate import NOT_ASSIGNED, Cell, ReplicateReader
from xaytune.viewer._tree import RunTree

__all__ = [
    "FILTERS",
    "PAGE_SIZE",
    "CauseGroup",
    "Cell",
    "ModelsNav",
    "Site",
    "TaskRow",
    "write_site",
]

PAGE_SIZE = 200
FILTERS = BASE_FILTERS
# Task ids a cause group lists on the entry page (the rest are counted).
CAUSE_TASKS_SHOWN = 30
# Ranked tasks shown under each verdict on the entry page (the objective page has all).
RANKED_SHOWN = 5


@dataclass
class CauseGroup:
    """Attempts that ended without an answer for one cause: how many, one recorded
    detail (the first), and where (task id, candidate, seed)."""

    cause: str
    detail: str | None
    where: list[tuple[str, str, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ModelsNav:
    """A model's site inside a models run: every model's label and this one's."""

    labels: tuple[str, ...]
    current: str


@dataclass
class Site:
    """What was written: the output directory and how many tasks each filter keeps
    (``models``: each model's site, for a models run)."""

    out: Path
    counts: dict[str, int] = field(default_factory=dict)
    tasks: int = 0
    models: dict[str, Site] = field(default_factory=dict)

    @property
    def outcome_counts(self) -> dict[str, int]:
        """The counts of the outcome filters (the objective filters left out)."""
        objective = ("-baseline", "-challenger")
        return {name: n for name, n in self.counts.items() if not name.endswith(objective)}


@dataclass(frozen=True, slots=True)
class SideView:
    """One candidate's attempts at one task under one seed (a task page column)."""

    candidate: str
    position: int | None
    cell: Cell
    attempts: tuple[AttemptView, ...]
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SeedView:
    seed: int
    sides: tuple[SideView, ...]


def _page_name(name: str, number: int) -> str:
    return f"{name}.html" if number == 1 else f"{name}-{number}.html"


def _page_links(name: str, page: int, pages: int) -> list[tuple[int | None, str]]:
    """Links to the first, the last and the pages near ``page`` (None: a gap), so a
    page's size does not grow with the number of pages."""
    shown = sorted({1, pages, *range(max(1, page - 3), min(pages, page + 3) + 1)})
    links: list[tuple[int | None, str]] = []
    for number in shown:
        if links and links[-1][0] is not None and number > links[-1][0] + 1:
            links.append((None, ""))
        links.append((number, _page_name(name, number)))
    return links


def _task_order(tree: RunTree) -> dict[str, dict[tuple[str, int], int]]:
    """Every assigned task, in suite order: (label, seed) -> its position there."""
    placed: dict[str, dict[tuple[str, int], int]] = {}
    for replicate in tree.replicates:
        for position, task_id in enumerate(replicate.assignment.task_ids):
            placed.setdefault(task_id, {})[(replicate.candidate.label, replicate.seed)] = position
    order = {task_id: index for index, task_id in enumerate(tree.suite.task_ids)}
    return dict(sorted(placed.items(), key=lambda item: order.get(item[0], len(order))))


def _reference(tree: RunTree, task_id: str) -> tuple[str | None, str | None]:
    """The task's held-out reference answer (the suite's door to it), or the problem."""
    if tree.source is None:
        return None, None
    try:
        return tree.source.reference(task_id).text, None
    except XaytuneError as error:
        return None, str(error)


def _state(tree: RunTree) -> dict[str, Any]:
    """What the banner says of the run: finished, unfinished, or being written."""
    return {
        "complete": tree.complete,
        "writer": tree.writer,
        "records": sum(1 for r in tree.replicates if r.scores),
        "replicates": len(tree.replicates),
    }


def _context(tree: RunTree, models: ModelsNav | None) -> dict[str, Any]:
    return {
        "run": tree.root.name,
        "experiment": tree.experiment,
        "suite": tree.suite,
        "candidates": tree.candidates,
        "seeds": tree.seeds,
        "state": _state(tree),
        "models": models,
    }


class _Pages:
    """Writes the pages of one site (``depth``: "" or "../"; ``path``: the page's own
    path, for the model switcher's links to the same page under another model)."""

    def __init__(self, out: Path, context: dict[str, Any]) -> None:
        self.out, self.context = out, context

    def write(self, path: str, template: str, *, same: str | None = None, **values: Any) -> None:
        """``same``: the page another model's site surely has for this one (a list's
        first page: another model's list may have fewer pages); default ``path``."""
        depth = "../" * path.count("/")
        html = render(template, **self.context, **values, depth=depth, path=same or path)
        (self.out / path).write_text(html, encoding="utf-8")


def _add_causes(
    groups: dict[str, CauseGroup],
    task_id: str,
    candidate: str,
    seed: int,
    attempts: tuple[AttemptView, ...],
) -> None:
    """Count the verified attempts that ended without an answer, by cause (kept as the
    pages are written: no attempt is held once its page is)."""
    for attempt in attempts:
        if attempt.verifies and attempt.cause is not None:
            group = groups.setdefault(attempt.cause, CauseGroup(attempt.cause, None))
            group.detail = group.detail or attempt.cause_detail
            group.where.append((task_id, candidate, seed))


def write_site(
    tree: RunTree, out: Path, *, page_size: int = PAGE_SIZE, models: ModelsNav | None = None
) -> Site:
    """Write the viewer's site for ``tree`` (finished or not) into ``out``; nothing is
    written into the tree. ``models``: this run is one model of a models run."""
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    readers = {(r.candidate.label, r.seed): ReplicateReader(r, tree) for r in tree.replicates}
    comparisons = read_comparisons(tree)
    names = [(c.label, c.name) for c in tree.candidates]
    titles = filter_titles(names, comparisons)
    by_objective = objective_filters(comparisons)
    pages = _Pages(out, _context(tree, models))
    rows: list[TaskRow] = []
    groups: dict[str, CauseGroup] = {}
    # Per objective, task id -> its ranked entry (a task page looks its own up).
    entries = [
        (comparison, objective, {t.task_id: t for t in objective.ranked})
        for comparison in comparisons
        for objective in comparison.objectives
    ]
    for task_id, placed in _task_order(tree).items():
        seeds, states_by_seed, flags, cells_all, causes = [], [], set(), [], []
        for seed in tree.seeds:
            sides = []
            for candidate in tree.candidates:
                key = (candidate.label, seed)
                position = placed.get(key)
                reasons: tuple[str, ...] = ()
                if position is None or key not in readers:
                    cell, views = NOT_ASSIGNED, ()
                else:
                    cell, views = readers[key].side(position, task_id)
                    reasons = tuple(readers[key].reasons.get(task_id, ()))
                sides.append(SideView(candidate.name, position, cell, views, reasons))
                cells_all.append(cell)
                _add_causes(groups, task_id, candidate.name, seed, views)
                for attempt in views:
                    if attempt.error:
                        flags.add("errors")
                    if attempt.budget_stop:
                        flags.add("budget-stops")
                    if attempt.verifies and attempt.cause and attempt.cause not in causes:
                        causes.append(attempt.cause)
            states = [side.cell.state for side in sides]
            if any(state != "not-assigned" for state in states):
                seeds.append(SeedView(seed, tuple(sides)))
            states_by_seed.append(states)
        kept = outcome_filters([label for label, _ in names], states_by_seed, flags)
        kept |= {name for name, tasks in by_objective.items() if task_id in tasks}
        task = tree.suite.task(task_id) if task_id in tree.suite else None
        row = TaskRow(
            task_id,
            tuple(cells_all),
            frozenset(kept | {"all"}),
            tuple(causes),
            task_text(task),
        )
        rows.append(row)
        reference, reference_problem = _reference(tree, task_id)
        pages.write(
            f"tasks/{task_id}.html",
            "viewer_task.html.j2",
            task=task,
            task_id=task_id,
            row=row,
            titles=titles,
            seed_views=tuple(seeds),
            reference=reference,
            reference_problem=reference_problem,
            objectives=[(c, o, ranked.get(task_id)) for c, o, ranked in entries],
        )
    site = Site(out, tasks=len(rows))
    for name in titles:
        site.counts[name] = sum(1 for row in rows if name in row.filters)
    for name in titles:
        kept_rows = [row for row in rows if name in row.filters]
        count = max(1, -(-len(kept_rows) // page_size))
        for number in range(1, count + 1):
            pages.write(
                _page_name(name, number),
                "viewer_list.html.j2",
                same=_page_name(name, 1),
                current=name,
                titles=titles,
                counts=site.counts,
                rows=kept_rows[(number - 1) * page_size : number * page_size],
                first=(number - 1) * page_size + 1,
                page=number,
                pages=_page_links(name, number, count),
                page_count=count,
            )
    for comparison in comparisons:
        for objective in comparison.objectives:
            pages.write(
                f"objective-{objective.slug}.html",
                "viewer_objective.html.j2",
                comparison=comparison,
                objective=objective,
            )
    pages.write(
        "index.html",
        "viewer_index.html.j2",
        comparisons=comparisons,
        shown=RANKED_SHOWN,
        causes=sorted(groups.values(), key=lambda g: (-len(g.where), g.cause)),
        cause_tasks=CAUSE_TASKS_SHOWN,
        titles=titles,
        counts=site.counts,
        explorer=explorer_json(tree, rows, comparisons, titles),
    )
    return site
