"""The viewer's static site: an index of tasks with filters, and a page per task.

Layout of the output directory (every page self-contained: inline CSS, no script,
relative links only)::

    index.html                  all tasks, page 1 (200 tasks a page)
    all-<n>.html                all tasks, page n
    <filter>.html, <filter>-<n>.html
                                the tasks a filter keeps, paginated alike
    tasks/<task id>.html        one task: per seed, each candidate's outcome and its
                                attempts' transcripts side by side

Filters, per seed where both candidates ran the task (``a`` is the baseline, every
other candidate a challenger): ``regressions`` (the baseline succeeded, a
challenger failed), ``improvements`` (the reverse), ``both-wrong``, ``errors`` (an
attempt sealed partial, or ended in a model error, a context overflow or a
cancellation), ``budget-stops``, ``does-not-verify`` (an attempt or the replicate's
record fails its check). A task's outcome is shown only when its record and every
attempt verify. Writing is one pass over the tasks (each attempt file read, verified
and rendered once), then the index pages: linear in the run's size.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from xaytune.core.errors import XaytuneError
from xaytune.harness.evidence._rebuild_attempt import Expected
from xaytune.harness.evidence.journal import read_journal
from xaytune.harness.evidence.store import HarnessEvidenceStore, attempt_paths
from xaytune.report._jinja import render
from xaytune.report.viewer._attempts import AttemptView, read_attempt
from xaytune.report.viewer._tree import Replicate, RunTree

__all__ = ["FILTERS", "PAGE_SIZE", "Cell", "Site", "TaskRow", "write_site"]

PAGE_SIZE = 200
FILTERS = (
    "all",
    "regressions",
    "improvements",
    "both-wrong",
    "errors",
    "budget-stops",
    "does-not-verify",
)


@dataclass(frozen=True, slots=True)
class Cell:
    """One candidate on one seed for one task, as the index shows it.

    ``state``: success, failure, score (a value other than 0 or 1), absent,
    not-assigned, does-not-verify (an attempt, the record, or the store)."""

    state: str
    label: str
    notes: tuple[str, ...] = ()
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class TaskRow:
    """One task in the index: a cell per (seed, candidate), and its filters."""

    task_id: str
    cells: tuple[Cell, ...]
    filters: frozenset[str]


@dataclass
class Site:
    """What was written: the output directory and how many tasks each filter keeps."""

    out: Path
    counts: dict[str, int] = field(default_factory=dict)
    tasks: int = 0


@dataclass(frozen=True, slots=True)
class SideView:
    """One candidate's attempts at one task under one seed (a task page column)."""

    candidate: str
    position: int | None
    cell: Cell
    attempts: tuple[AttemptView, ...]


@dataclass(frozen=True, slots=True)
class SeedView:
    seed: int
    sides: tuple[SideView, ...]


class _ReplicateReader:
    """Verifies the attempts of one replicate, task by task (one Expected per
    replicate, as the evidence room's own verification keeps one)."""

    def __init__(self, replicate: Replicate, tree: RunTree) -> None:
        self.replicate = replicate
        self.root = tree.root
        self.tasks_dir = os.path.join(replicate.store, "tasks")
        self.expected = Expected(
            tree.suite,
            replicate.assignment,
            replicate.candidate.harness_fingerprint,
            0,
            intent=replicate.intent,
        )
        self.problem = replicate.problem
        self.quarantined: dict[int, tuple[int, str]] = {}
        self.committed: dict[tuple[int, int], str] = {}
        if self.problem is None:
            store = HarnessEvidenceStore(replicate.store)
            try:
                store.check_schema()
                for position, number, reason in store.quarantined():
                    self.quarantined[position] = (number, reason)
                self.committed = read_journal(replicate.store)
            except XaytuneError as error:
                self.problem = str(error)

    def side(self, position: int, task_id: str) -> tuple[Cell, tuple[AttemptView, ...]]:
        directory = os.path.join(self.tasks_dir, f"{position:06d}")
        try:
            listed = attempt_paths(directory)
        except XaytuneError as error:
            return _unverified(str(error)), ()
        attempts = []
        first_spec: bytes | None = None
        for number, path in listed:
            shown = os.path.relpath(path, self.root)
            view, first_spec = read_attempt(
                position,
                number,
                path,
                task_id=task_id,
                expected=self.expected,
                first_spec=first_spec,
                shown_as=shown,
                committed=self.committed,
            )
            attempts.append(view)
        return self._cell(position, task_id, attempts), tuple(attempts)

    def _cell(self, position: int, task_id: str, attempts: list[AttemptView]) -> Cell:
        problem = self.problem
        if problem is None and position in self.quarantined:
            number, reason = self.quarantined[position]
            problem = f"quarantined-attempt: task {task_id} attempt {number:03d} ({reason})"
        if problem is None and not attempts:
            problem = f"no-attempts: task {task_id} (position {position}) has no attempt file"
        if problem is None:
            failed = next((a for a in attempts if not a.verifies), None)
            if failed is not None:
                problem = failed.problem
        complete = [a for a in attempts if a.status == "complete"]
        if problem is None and len(complete) > 1:
            problem = f"multiple-complete: task {task_id} has {len(complete)} complete attempts"
        if problem is not None:
            return _unverified(problem)
        notes = []
        for attempt in attempts:
            if attempt.status == "partial":
                notes.append("partial" + (" (recovered)" if attempt.recovered else ""))
            elif attempt.terminal not in (None, "answer"):
                notes.append(attempt.terminal)
        if len(attempts) > 1:
            notes.append(f"{len(attempts)} attempts")
        score = self.replicate.scores.get(position)
        if score is None:
            return Cell("absent", "not scored", tuple(notes))
        if score.value is None:
            return Cell("absent", f"absent: {score.absence}", tuple(notes))
        if score.value == 1:
            return Cell("success", "✓ success", tuple(notes))
        if score.value == 0:
            return Cell("failure", "✗ failure", tuple(notes))
        return Cell("score", f"score {score.value:g}", tuple(notes))


def _unverified(problem: str) -> Cell:
    return Cell("does-not-verify", "does not verify", (), problem)


NOT_ASSIGNED = Cell("not-assigned", "·")


def _filters(cells_by_seed: list[list[Cell]], sides: list[list[tuple[AttemptView, ...]]]) -> set:
    found: set[str] = set()
    for cells, attempts in zip(cells_by_seed, sides, strict=True):
        states = [cell.state for cell in cells]
        if "does-not-verify" in states:
            found.add("does-not-verify")
        flat = [a for side in attempts for a in side]
        if any(a.error for a in flat):
            found.add("errors")
        if any(a.budget_stop for a in flat):
            found.add("budget-stops")
        baseline, challengers = states[0], states[1:]
        if not challengers or "not-assigned" in states:
            continue
        if baseline == "success" and "failure" in challengers:
            found.add("regressions")
        if baseline == "failure" and "success" in challengers:
            found.add("improvements")
        if all(state == "failure" for state in states):
            found.add("both-wrong")
    return found


def _page_name(name: str, number: int) -> str:
    if number == 1:
        return "index.html" if name == "all" else f"{name}.html"
    return f"{name}-{number}.html"


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


def _filter_titles(tree: RunTree) -> dict[str, str]:
    a = tree.candidates[0].name
    others = ", ".join(c.name for c in tree.candidates[1:]) or "—"
    return {
        "all": "all tasks",
        "regressions": f"regressions ({a} right, {others} wrong)",
        "improvements": f"improvements ({a} wrong, {others} right)",
        "both-wrong": "both wrong",
        "errors": "errors",
        "budget-stops": "budget stops",
        "does-not-verify": "does not verify",
    }


def _task_order(tree: RunTree) -> dict[str, dict[tuple[str, int], int]]:
    """Every assigned task, in suite order: (label, seed) -> its position there."""
    placed: dict[str, dict[tuple[str, int], int]] = {}
    for replicate in tree.replicates:
        for position, task_id in enumerate(replicate.assignment.task_ids):
            placed.setdefault(task_id, {})[(replicate.candidate.label, replicate.seed)] = position
    order = {task_id: index for index, task_id in enumerate(tree.suite.task_ids)}
    return dict(sorted(placed.items(), key=lambda item: order.get(item[0], len(order))))


def write_site(tree: RunTree, out: Path, *, page_size: int = PAGE_SIZE) -> Site:
    """Write the viewer's site for ``tree`` into ``out`` (an empty directory)."""
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    readers = {(r.candidate.label, r.seed): _ReplicateReader(r, tree) for r in tree.replicates}
    titles = _filter_titles(tree)
    context = {
        "run": tree.root.name,
        "experiment": tree.experiment,
        "suite": tree.suite,
        "candidates": tree.candidates,
        "seeds": tree.seeds,
    }
    rows: list[TaskRow] = []
    for task_id, placed in _task_order(tree).items():
        seeds, cells_by_seed, attempts_by_seed = [], [], []
        for seed in tree.seeds:
            sides, cells, attempts = [], [], []
            for candidate in tree.candidates:
                key = (candidate.label, seed)
                position = placed.get(key)
                if position is None or key not in readers:
                    cell, views = NOT_ASSIGNED, ()
                else:
                    cell, views = readers[key].side(position, task_id)
                sides.append(SideView(candidate.name, position, cell, views))
                cells.append(cell)
                attempts.append(views)
            if any(cell.state != "not-assigned" for cell in cells):
                seeds.append(SeedView(seed, tuple(sides)))
            cells_by_seed.append(cells)
            attempts_by_seed.append(attempts)
        row = TaskRow(
            task_id,
            tuple(cell for cells in cells_by_seed for cell in cells),
            frozenset(_filters(cells_by_seed, attempts_by_seed) | {"all"}),
        )
        rows.append(row)
        index_page = _page_name("all", len(rows) // page_size + (len(rows) % page_size > 0))
        html = render(
            "viewer_task.html.j2",
            **context,
            depth="../",
            task=tree.suite.task(task_id) if task_id in tree.suite else None,
            task_id=task_id,
            row=row,
            titles=titles,
            seed_views=tuple(seeds),
            index_page=index_page,
        )
        (out / "tasks" / f"{task_id}.html").write_text(html, encoding="utf-8")
    site = Site(out, tasks=len(rows))
    for name in FILTERS:
        kept = [row for row in rows if name in row.filters]
        site.counts[name] = len(kept)
    for name in FILTERS:
        kept = [row for row in rows if name in row.filters]
        pages = max(1, -(-len(kept) // page_size))
        for number in range(1, pages + 1):
            html = render(
                "viewer_index.html.j2",
                **context,
                depth="",
                current=name,
                titles=titles,
                counts=site.counts,
                rows=kept[(number - 1) * page_size : number * page_size],
                first=(number - 1) * page_size + 1,
                page=number,
                pages=_page_links(name, number, pages),
                page_count=pages,
                filter_pages={f: _page_name(f, 1) for f in FILTERS},
            )
            (out / _page_name(name, number)).write_text(html, encoding="utf-8")
    return site
