"""Attempt errors: what in a replicate's evidence is not a result, counted and grouped.

A task of a replicate ends in one of these ways, read from its verified evidence
(:func:`replicate_errors`):

- a result: an attested outcome that measures the harness (``answer``,
  ``budget-stop``, ``context-overflow``): not an error here;
- ``model-error``: the attested outcome is ``model-error`` (the endpoint refused a
  request definitively); also a task left without a result because the model stayed
  unreachable (``model-unavailable``, a crash event naming ``ModelUnavailable``): both
  measure the endpoint, not the harness, and both count against the bound;
- ``attempt-timeout``: no attested result, the last attempt ran past
  ``attempt_timeout_s`` (its ``timed-out`` event);
- ``crash``: no attested result, the last attempt raised (its ``crashed`` event: the
  exception type and message, and the part the runner records: ``loop`` or
  ``environment``; a tool's exception is a tool error the model sees, never a crash);
- ``other``: any other non-result (an attested ``cancelled``, an interruption, a
  partial attempt whose events name no cause).

A task is counted once, by how it ended (its attested outcome, else its last
attempt): a crash retried into an answer is a result. Causes are grouped by (kind,
part, first line clipped to :data:`CAUSE_CHARS`), each with its task count and the
first :data:`TASK_IDS_SHOWN` task ids. Nothing here reads a reference: an outcome
detail and an exception message are what the run itself recorded.

**Not compared.** A candidate with any replicate whose model-error share of tasks
exceeds ``comparison.max_model_error_share`` is not compared: its numbers measure the
endpoint. :func:`tree_errors` records that decision with the counts in
``errors.json`` (schema :data:`ERRORS_SCHEMA`) beside the comparison, from the
evidence of every replicate of the tree (a resumed or reused replicate counts as one
run whole would: from its published evidence). The reports (terminal, report.md,
report.html, the summary) render from that record and withhold every verdict of a
not-compared challenger (every challenger, when the baseline is over the bound);
``python -m xaytune.verify`` recomputes the record from the evidence and renders
again, so an edited record or an edited report is ``report-mismatch``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import XaytuneError
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.tree.files import CANDIDATE_FILE, REPLICATE_FILE
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.attempt_file import attempt_name, parse_line, split_attempt
from xaytune.harness.evidence.publish import PublishedSubject, load_published

__all__ = [
    "CAUSE_CHARS",
    "ERRORS_FILE",
    "ERRORS_SCHEMA",
    "TASK_IDS_SHOWN",
    "AttemptErrors",
    "CandidateErrors",
    "CauseGroup",
    "Loader",
    "ReplicateErrors",
    "comparison_errors",
    "errors_bytes",
    "gate_lines",
    "model_error_gate",
    "recorded_counts",
    "recorded_gate",
    "recorded_gate_lines",
    "replicate_errors",
    "tree_errors",
]

ERRORS_FILE = "errors.json"
ERRORS_SCHEMA = "xaytune.attempt-errors/v1"
# A cause is its first line, clipped: a provider's HTML error page is not a cause line.
CAUSE_CHARS = 160
TASK_IDS_SHOWN = 5

ErrorKind = Literal["model-error", "attempt-timeout", "crash", "other"]
_FROZEN = ConfigDict(frozen=True, extra="forbid")
# The events of a partial attempt that say why it ended without an outcome.
_CAUSE_EVENTS = ("crashed", "timed-out", "interrupted")


class CauseGroup(BaseModel):
    """Tasks of one replicate that ended the same way: ``kind``, the ``part`` that
    raised (None: not recorded), ``cause`` (one clipped line), how many tasks, and the
    first :data:`TASK_IDS_SHOWN` of their ids."""

    model_config = _FROZEN

    kind: ErrorKind
    part: str | None
    cause: str
    tasks: int
    task_ids: tuple[str, ...]


class ReplicateErrors(BaseModel):
    """One replicate's tasks and, of them, how many ended in each kind of error."""

    model_config = _FROZEN

    seed: int
    tasks: int
    model_errors: int
    timeouts: int
    crashes: int
    other: int
    causes: tuple[CauseGroup, ...]

    @property
    def errors(self) -> int:
        """Tasks without a result of the harness (every kind)."""
        return self.model_errors + self.timeouts + self.crashes + self.other


class CandidateErrors(BaseModel):
    """A candidate's replicates' errors; ``over_bound`` when any replicate's
    model-error share exceeds the bound."""

    model_config = _FROZEN

    name: str
    over_bound: bool
    replicates: tuple[ReplicateErrors, ...]

    @property
    def tasks(self) -> int:
        return sum(r.tasks for r in self.replicates)

    @property
    def model_errors(self) -> int:
        return sum(r.model_errors for r in self.replicates)


class AttemptErrors(BaseModel):
    """``errors.json``: every candidate's errors, the bound, and which challengers are
    not compared (label -> why, e.g. ``model errors: mental 3 of 4 tasks``)."""

    model_config = _FROZEN

    schema_: Literal["xaytune.attempt-errors/v1"] = ERRORS_SCHEMA
    bound: float
    baseline: str
    candidates: dict[str, CandidateErrors]
    not_compared: dict[str, str]

    def data(self) -> dict[str, Any]:
        """The record as JSON data (what the reports render from)."""
        data = self.model_dump(mode="json", exclude={"schema_"})
        return {"schema": ERRORS_SCHEMA, **data}


def _clipped(text: str) -> str:
    line = (text.strip().splitlines() or [""])[0].strip()
    return line if len(line) <= CAUSE_CHARS else line[: CAUSE_CHARS - 1] + "…"


def _last_cause(path: Path) -> tuple[ErrorKind, str | None, str]:
    """(kind, part, cause) of a partial attempt, from the last event that says why."""
    try:
        data = path.read_bytes()
        layout = split_attempt(data, str(path))
    except (OSError, XaytuneError):
        return "other", None, "no outcome (the attempt's events cannot be read)"
    lines = data[layout.record_end : layout.events_end].splitlines()
    for line in reversed(lines):
        try:
            event = parse_line(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("type") not in _CAUSE_EVENTS:
            continue
        v = event.get("v") if isinstance(event.get("v"), dict) else {}
        if event["type"] == "timed-out":
            deadline = v.get("deadline_s")
            after = f" {deadline:g} s" if isinstance(deadline, int | float) else " its deadline"
            return "attempt-timeout", None, f"ran past{after}"
        if event["type"] == "interrupted":
            return "other", None, f"interrupted by {v.get('by')}"
        error = str(v.get("error") or "unknown error")
        part = v.get("part") if isinstance(v.get("part"), str) else None
        if error.startswith("ModelUnavailable"):
            return "model-error", None, _clipped(error.removeprefix("ModelUnavailable: "))
        return "crash", part, _clipped(error)
    return "other", None, "no outcome (no event names a cause)"


def replicate_errors(evidence: HarnessRunEvidence, store_root: Path | None) -> ReplicateErrors:
    """The errors of one verified replicate (module docstring); ``store_root``: its
    store, whose partial attempts' events name their causes (None: not read, such
    tasks are ``other`` with no cause)."""
    groups: dict[tuple[str, str | None, str], list[str]] = {}
    for entry in evidence.entries:
        attested = entry.attested
        if attested is not None:
            terminal = attested.outcome.terminal if attested.outcome is not None else None
            if terminal == "model-error":
                detail = attested.outcome.detail if attested.outcome is not None else None
                key = ("model-error", None, _clipped(detail or "model-error"))
            elif terminal == "cancelled":
                key = ("other", None, "cancelled")
            else:
                continue
        elif store_root is None or not entry.attempts:
            key = ("other", None, "no attested result")
        else:
            last = entry.attempts[-1].attempt
            path = store_root / "tasks" / f"{entry.position:06d}" / attempt_name(last)
            key = _last_cause(path)
        groups.setdefault(key, []).append(entry.task_id)
    causes = tuple(
        CauseGroup(
            kind=kind, part=part, cause=cause, tasks=len(ids), task_ids=tuple(ids[:TASK_IDS_SHOWN])
        )
        for (kind, part, cause), ids in sorted(
            groups.items(), key=lambda item: (-len(item[1]), item[0][0], item[0][2])
        )
    )

    def count(kind: str) -> int:
        return sum(group.tasks for group in causes if group.kind == kind)

    return ReplicateErrors(
        seed=evidence.seed,
        tasks=len(evidence.entries),
        model_errors=count("model-error"),
        timeouts=count("attempt-timeout"),
        crashes=count("crash"),
        other=count("other"),
        causes=causes,
    )


def _over(replicate: ReplicateErrors, bound: float) -> bool:
    return bool(replicate.tasks) and replicate.model_errors / replicate.tasks > bound


# Loads a published subject (``load_published``, or a caller's cache of what it loaded).
Loader = Callable[[PublishedSubject], HarnessRunEvidence]


def _published_evidence(
    record: Path, load: Loader = load_published
) -> tuple[HarnessRunEvidence, Path]:
    """The evidence a replicate record's evaluations are of, and its store."""
    replicate = json.loads(record.read_bytes())
    digests = {e["subject_digest"] for e in replicate["evaluations"]}
    if len(digests) != 1:
        raise XaytuneError("evaluation-mismatch", f"{record}: not one evaluated subject")
    (digest,) = digests
    store = record.parent / "evidence"
    subject = PublishedSubject(
        digest=digest,
        path=str(store / "published" / f"{digest.removeprefix('sha256:')}.intoto.json"),
        store_root=str(store),
    )
    return load(subject), store


def tree_errors(
    root: Path,
    *,
    baseline: str,
    challengers: Iterable[str],
    bound: float,
    records: list[Path] | None = None,
    load: Loader = load_published,
) -> AttemptErrors:
    """The errors of every replicate under ``root`` (``records``: their record files,
    when the caller has listed the tree), by candidate label, and the challengers not
    compared at ``bound``. ``load`` loads each published subject (the auditor passes
    its cache, so a statement it verifies is parsed once; any loader must refuse what
    :func:`~xaytune.harness.evidence.publish.load_published` refuses)."""
    found: dict[str, tuple[str, list[ReplicateErrors]]] = {}
    for record in sorted(root.rglob(REPLICATE_FILE)) if records is None else records:
        candidate = json.loads((record.parent.parent / CANDIDATE_FILE).read_bytes())
        evidence, store = _published_evidence(record, load)
        entry = found.setdefault(candidate["label"], (candidate["name"], []))
        entry[1].append(replicate_errors(evidence, store))
    candidates = {
        label: CandidateErrors(
            name=name,
            over_bound=any(_over(r, bound) for r in replicates),
            replicates=tuple(sorted(replicates, key=lambda r: r.seed)),
        )
        for label, (name, replicates) in sorted(found.items())
    }
    not_compared = {}
    for label in challengers:
        over = [side for side in (baseline, label) if side in candidates]
        over = [side for side in over if candidates[side].over_bound]
        if over:
            not_compared[label] = "model errors: " + "; ".join(
                f"{candidates[side].name} {candidates[side].model_errors} of "
                f"{candidates[side].tasks} tasks"
                for side in over
            )
    return AttemptErrors(
        bound=bound, baseline=baseline, candidates=candidates, not_compared=not_compared
    )


def errors_bytes(errors: AttemptErrors) -> bytes:
    """``errors.json`` as written (canonical JSON)."""
    return canonical_bytes(errors.data()) + b"\n"


def comparison_errors(
    root: Path,
    cfg: ExperimentConfig,
    *,
    records: list[Path] | None = None,
    load: Loader = load_published,
) -> AttemptErrors:
    """The errors record of the run under ``root`` as ``cfg`` compares it (its
    baseline, challengers and ``comparison.max_model_error_share``); ``records`` and
    ``load`` as for :func:`tree_errors`."""
    return tree_errors(
        root,
        baseline=cfg.baseline,
        challengers=cfg.challengers,
        bound=cfg.comparison.max_model_error_share,
        records=records,
        load=load,
    )


def gate_lines(
    counts: list[tuple], bound: float, *, withheld: dict[str, str]
) -> tuple[int, str, tuple[str, ...]]:
    """What :func:`model_error_gate` prints, unprinted: (the exit code, the line of every
    replicate's model-error count, the ``error: model-errors:`` lines)."""
    shown = ", ".join(f"{name} seed {seed}: {errors}" for name, seed, _, errors, _ in counts)
    over = [c for c in counts if c[2] and c[3] / c[2] > bound]
    refusals = []
    for name, seed, tasks, errors, causes in over:
        grouped = "; ".join(f"{count} x {cause}" for cause, count in causes)
        what = f"; {withheld[name]}" if name in withheld else ""
        refusals.append(
            f"error: model-errors: {name} seed {seed}: {errors} of {tasks} "
            f"tasks ended model-error (bound {bound:g}); its numbers measure the endpoint, "
            f"not the harness{what}: {grouped}"
        )
    return 2 if over else 0, f"model errors (tasks ending model-error): {shown}", tuple(refusals)


def model_error_gate(counts: list[tuple], bound: float, *, withheld: dict[str, str]) -> int:
    """Print each replicate's model-error count (0 included); 2 when a replicate's share
    of tasks ending in a model error exceeds ``bound``
    (``comparison.max_model_error_share``), with one ``error: model-errors:`` line per
    such replicate on stderr naming its causes, grouped. ``counts``: (candidate name,
    seed, tasks, model errors, ((cause, tasks), ...)) per replicate; ``withheld``: by
    candidate name, what is not compared because of it."""
    code, line, refusals = gate_lines(counts, bound, withheld=withheld)
    print(line)
    for refusal in refusals:
        print(refusal, file=sys.stderr)
    return code


def recorded_counts(errors: dict[str, Any]) -> list[tuple]:
    """The counts :func:`model_error_gate` takes, from a run's errors record."""
    return [
        (
            candidate["name"],
            r["seed"],
            r["tasks"],
            r["model_errors"],
            tuple((g["cause"], g["tasks"]) for g in r["causes"] if g["kind"] == "model-error"),
        )
        for candidate in errors["candidates"].values()
        for r in candidate["replicates"]
    ]


def recorded_gate_lines(errors: dict[str, Any]) -> tuple[int, str, tuple[str, ...]]:
    """:func:`gate_lines` of a run's errors record (errors.json data): every replicate
    of the tree, resumed and reused ones included, at the recorded bound."""
    return gate_lines(recorded_counts(errors), errors["bound"], withheld=_withheld_names(errors))


def recorded_gate(errors: dict[str, Any]) -> int:
    """:func:`model_error_gate` of a run's errors record (errors.json data): every
    replicate of the tree, resumed and reused ones included, at the recorded bound."""
    return model_error_gate(
        recorded_counts(errors), errors["bound"], withheld=_withheld_names(errors)
    )


def _withheld_names(errors: dict[str, Any]) -> dict[str, str]:
    """By candidate name, what the errors record withholds because of it."""
    candidates = errors["candidates"]
    baseline = candidates.get(errors["baseline"], {}).get("name")
    found = {}
    for label, candidate in candidates.items():
        if not candidate["over_bound"]:
            continue
        if candidate["name"] == baseline:
            found[baseline] = "no challenger is compared with this baseline"
        elif label in errors["not_compared"]:
            found[candidate["name"]] = f"{candidate['name']} is not compared"
    return found
