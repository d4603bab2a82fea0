"""A run tree as the viewer reads it: candidates, replicates, assignments and the
per-task outcomes the evaluators recorded.

Nothing a tree says is taken on trust where it can be checked cheaply: the suite is
opened by its digest (``SuiteSource`` verifies every file), each replicate's
assignment is recomputed from the suite, the sampling and the seed and compared with
the manifest's, and each replicate record (``replicate.restricted.json``, which holds
the per-task ``task_success`` the outcome evaluator scored) must have the digest the
manifest records. A replicate that fails a check keeps its ``problem``; its outcomes
are then not shown as valid. Attempt files are verified one by one as their task's
page is written (:mod:`xaytune.report.viewer._attempts`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xaytune.app._manifest_view import (
    ManifestView,
    ReplicateView,
    inside,
    read_manifest,
    recorded_suite,
)
from xaytune.app.audit import refuse_busy_tree
from xaytune.app.cache import reused_from
from xaytune.app.config import validate_config
from xaytune.app.experiment import REPLICATE_FILE
from xaytune.app.intent import INTENT_FILE, read_intent
from xaytune.app.manifest import MANIFEST
from xaytune.core.canonical import sha256_digest
from xaytune.core.domain.benchmark import (
    BenchmarkSuite,
    SuiteSource,
    TaskAssignment,
    record_assignment,
)
from xaytune.core.errors import XaytuneError
from xaytune.core.harness_comparison import ReplicateRuns
from xaytune.harness.evidence.store import STORE_MARKER

__all__ = ["Candidate", "Replicate", "RunTree", "TaskScore", "open_run"]

OUTCOME_METRIC = "task_success"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A candidate of the run: its label (``a`` is the baseline), name and harness."""

    label: str
    name: str
    harness_fingerprint: str


@dataclass(frozen=True, slots=True)
class TaskScore:
    """One task's ``task_success`` as the outcome evaluator recorded it: a value, or an
    absence with its reason (never a zero standing in for it)."""

    value: float | None
    absence: str | None


@dataclass(frozen=True, slots=True)
class Replicate:
    """One candidate under one seed: where its store is, what it was assigned, and
    the digest of the run's intent its attempt records carry (None: the run records
    none), the per-task scores of its record (by position), or the ``problem`` that
    keeps them from being shown."""

    candidate: Candidate
    seed: int
    directory: Path
    assignment: TaskAssignment
    intent: str | None
    scores: dict[int, TaskScore]
    problem: str | None

    @property
    def store(self) -> Path:
        return self.directory / "evidence"


@dataclass(frozen=True, slots=True)
class RunTree:
    """What the viewer shows: the run's suite (public part), its candidates in label
    order, its seeds and every replicate."""

    root: Path
    experiment: str
    suite: BenchmarkSuite
    candidates: tuple[Candidate, ...]
    seeds: tuple[int, ...]
    replicates: tuple[Replicate, ...]

    def replicate(self, label: str, seed: int) -> Replicate | None:
        for replicate in self.replicates:
            if replicate.candidate.label == label and replicate.seed == seed:
                return replicate
        return None


def _not_a_run(root: Path, why: str) -> XaytuneError:
    return XaytuneError("not-a-run", f"{root}: {why}; not an xaytune run tree")


def _suite(manifest: ManifestView, path: Path, suites: tuple[Path, ...]) -> BenchmarkSuite:
    """The manifest's suite, pinned by its digest (``suites``: directories to use
    instead of the path the manifest records, matched by digest)."""
    for location in suites:
        source = SuiteSource(location)
        if source.digest == manifest.suite.digest:
            return source.suite
    try:
        return recorded_suite(manifest, path).suite
    except OSError as error:
        raise XaytuneError(
            "suite-missing", f"{path}: its suite is unreadable ({error.strerror}); pass --suite"
        ) from None


def _scores(
    record_path: Path, recorded: str | None, seed: int, assignment: TaskAssignment
) -> tuple[dict[int, TaskScore], str | None]:
    """The per-task scores of a replicate record, or a problem naming the file."""
    try:
        data = record_path.read_bytes()
    except OSError as error:
        return {}, f"{record_path}: unreadable ({error.strerror})"
    if recorded is None:
        return {}, f"{record_path}: the manifest records no digest of it"
    if sha256_digest(data) != recorded:
        return {}, f"{record_path}: digest-mismatch: not the file the manifest recorded"
    try:
        record = ReplicateRuns.model_validate_json(data)
    except (ValueError, XaytuneError) as error:
        first = str(error).splitlines()[0]
        return {}, f"{record_path}: not a replicate record ({first})"
    if record.seed != seed or record.assignment_digest != assignment.digest:
        return {}, f"{record_path}: a record of another seed or assignment"
    scores = {}
    for observation in record.task_observations.get(OUTCOME_METRIC, ()):
        position = observation.position
        if assignment.position(observation.task_id) != position:
            return {}, f"{record_path}: task {observation.task_id} is not at position {position}"
        scores[position] = TaskScore(observation.value, observation.absence)
    return scores, None


def _intent(directory: Path, root: Path) -> str | None:
    """The digest of the intent of the run ``directory`` belongs to: the nearest
    ``intent.json`` above it, up to ``root`` (None when the run records none)."""
    reused = reused_from(directory / "evidence")  # copied from the evidence cache
    if reused is not None:
        return reused.intent_digest  # (verify checks that it meant this replicate)
    for base in (directory, *directory.parents):
        if (base / INTENT_FILE).exists():
            return read_intent(base)[1]
        if base == root:
            return None
    return None


def _checked(
    root: Path,
    directory: Path,
    listed: ReplicateView,
    assignment: TaskAssignment,
    manifest: ManifestView,
) -> tuple[str | None, dict[int, TaskScore], str | None]:
    """A replicate's intent digest and per-task scores, or the problem found first."""
    try:
        intent = _intent(directory, root)
    except XaytuneError as error:
        return None, {}, str(error)
    if assignment.digest != listed.assignment_digest:
        return (
            intent,
            {},
            (
                f"{directory}: assignment-mismatch: the suite, sampling and seed give "
                f"{assignment.digest}, the manifest records {listed.assignment_digest}"
            ),
        )
    record = directory / REPLICATE_FILE
    recorded = manifest.reports.get(record.relative_to(root).as_posix())
    scores, problem = _scores(record, recorded, listed.seed, assignment)
    return intent, scores, problem


def _relative(problem: str | None, root: Path) -> str | None:
    """A problem naming files relative to the run (pages hold no machine paths)."""
    return None if problem is None else problem.replace(f"{root}{os.sep}", "")


def open_run(root: Path, *, suites: tuple[Path, ...] = ()) -> RunTree:
    """The run tree at ``root``; ``not-a-run`` (one line naming it) if it is none."""
    if not root.is_dir():
        raise _not_a_run(root, "not a directory")
    refuse_busy_tree(root, command="view")
    path = root / MANIFEST
    if not path.is_file():
        raise _not_a_run(root, f"no {MANIFEST}")
    manifest = read_manifest(path)
    try:
        cfg = validate_config(manifest.config)
    except XaytuneError as error:
        raise XaytuneError("bad-manifest", f"{path}: config: {error}") from None
    if not manifest.replicates:
        raise _not_a_run(root, f"{MANIFEST} lists no replicates")
    suite = _suite(manifest, path, suites)
    # The baseline first (the filters read "baseline right, challenger wrong").
    order = sorted(manifest.candidates.items(), key=lambda item: item[0] != cfg.baseline)
    names = {c.name: Candidate(label, c.name, c.harness_fingerprint) for label, c in order}
    sampling = cfg.sampling.sample(len(suite.tasks))
    replicates = []
    for listed in manifest.replicates:
        directory = inside(root, listed.path)
        if directory is None or not (directory / "evidence" / STORE_MARKER).is_file():
            raise XaytuneError("bad-manifest", f"{path}: replicate {listed.path!r} has no store")
        candidate = names.get(directory.parent.name)
        if candidate is None:
            raise XaytuneError(
                "bad-manifest", f"{path}: replicate {listed.path!r} is of no listed candidate"
            )
        assignment = record_assignment(suite, sampling, seed=listed.seed)
        intent, scores, problem = _checked(root, directory, listed, assignment, manifest)
        problem = _relative(problem, root)
        replicates.append(
            Replicate(candidate, listed.seed, directory, assignment, intent, scores, problem)
        )
    replicates.sort(key=lambda r: (r.seed, r.candidate.label))
    return RunTree(
        root=root,
        experiment=cfg.experiment.name,
        suite=suite,
        candidates=tuple(names.values()),
        seeds=tuple(sorted({r.seed for r in replicates})),
        replicates=tuple(replicates),
    )
