"""One replicate's side of every task: its attempts verified, and the cell the index
shows for it (the outcome the evaluator recorded, shown only when the replicate's
record and every attempt verify), with the outcome scorer's reasons.

In an unfinished run (its manifest says ``complete: false``) a task not yet run is
``not run yet``, a last attempt with no seal is ``running`` (a live writer holds the
tree) or ``open (no seal)``, and the store's journal (still being appended to) is not
read: attempts are checked by record, hash chain and seal.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import XaytuneError
from xaytune.harness.evidence.journal import read_journal
from xaytune.harness.evidence.rebuild_attempt import Expected
from xaytune.harness.evidence.store import HarnessEvidenceStore, attempt_paths
from xaytune.viewer._attempts import AttemptView, read_attempt
from xaytune.viewer._tree import Replicate, RunTree

__all__ = ["NOT_ASSIGNED", "Cell", "ReplicateReader", "is_open"]


@dataclass(frozen=True, slots=True)
class Cell:
    """One candidate on one seed for one task, as the index shows it.

    ``state``: success, failure, score (a value other than 0 or 1), absent,
    not-assigned, does-not-verify (an attempt, the record, or the store)."""

    state: str
    label: str
    notes: tuple[str, ...] = ()
    problem: str | None = None


def _scorer_reasons(replicate: Replicate, tree: RunTree) -> tuple[dict[str, list[str]], list]:
    """Task id -> the outcome scorers' reasons (``<evaluator>: <reason>``) from the
    replicate's restricted evaluation reports, each bound to the digest the manifest
    records (an unfinished run's are not yet: read as they are); and the problems."""
    reasons: dict[str, list[str]] = {}
    problems = []
    recorded = {} if tree.manifest is None else tree.manifest.reports
    pattern = "evaluation/*/restricted/evaluation.restricted.json"
    for path in sorted(replicate.directory.glob(pattern)):
        shown = path.relative_to(tree.root).as_posix()
        try:
            data = path.read_bytes()
        except OSError as error:
            problems.append(f"{shown}: unreadable ({error.strerror})")
            continue
        if tree.complete and recorded.get(shown) != sha256_digest(data):
            problems.append(f"{shown}: digest-mismatch: not the file the manifest recorded")
            continue
        try:
            given = json.loads(data).get("scorer_reasons") or []
            evaluator = path.parents[1].name
            for item in given:
                reasons.setdefault(item["task_id"], []).append(f"{evaluator}: {item['reason']}")
        except (ValueError, AttributeError, KeyError, TypeError):
            problems.append(f"{shown}: not an evaluation report")
    return reasons, problems


class ReplicateReader:
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
        self.live = tree.writer is not None
        self.unfinished = not tree.complete
        self.quarantined: dict[int, tuple[int, str]] = {}
        # An unfinished run's journal is still being appended to (a seal may reach its
        # attempt file before the journal): its attempts are checked without it.
        self.committed: dict[tuple[int, int], str] | None = None if self.unfinished else {}
        self.reasons, self.reason_problems = _scorer_reasons(replicate, tree)
        if self.problem is None:
            store = HarnessEvidenceStore(replicate.store)
            try:
                store.check_schema()
                for position, number, reason in store.quarantined():
                    self.quarantined[position] = (number, reason)
                if not self.unfinished:
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
            if self.unfinished:
                return Cell("absent", "not run yet")  # an unfinished run: still to come
            problem = f"no-attempts: task {task_id} (position {position}) has no attempt file"
        if problem is None and self.unfinished and attempts and is_open(attempts[-1]):
            # An unfinished run's last attempt without a seal: running (or cut short
            # by the run's end), not a broken one; what is sealed before it is shown.
            return Cell("absent", "running" if self.live else "open (no seal)")
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
            unscored = "not scored yet" if self.unfinished else "not scored"
            return Cell("absent", unscored, tuple(notes))
        if self.unfinished:
            notes.append("record not sealed yet")
        if score.value is None:
            return Cell("absent", f"absent: {score.absence}", tuple(notes))
        if score.value == 1:
            return Cell("success", "✓ success", tuple(notes))
        if score.value == 0:
            return Cell("failure", "✗ failure", tuple(notes))
        return Cell("score", f"score {score.value:g}", tuple(notes))


def is_open(attempt: AttemptView) -> bool:
    """An attempt with no seal yet (or not even a whole record: a file being
    created), as a live writer leaves it; shown as such in an unfinished run only."""
    words = ("open-attempt:", "bad-record:")
    return not attempt.verifies and (attempt.problem or "").startswith(words)


def _unverified(problem: str) -> Cell:
    return Cell("does-not-verify", "does not verify", (), problem)


NOT_ASSIGNED = Cell("not-assigned", "·")
