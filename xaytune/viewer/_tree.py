"""A run tree as the viewer reads it: candidates, replicates, assignments and the
per-task outcomes the evaluators recorded.

Nothing a tree says is taken on trust where it can be checked cheaply: the suite is
opened by its digest (``SuiteSource`` verifies every file), each replicate's
assignment is recomputed from the suite, the sampling and the seed and compared with
the manifest's, and each replicate record (``replicate.restricted.json``, which holds
the per-task ``task_success`` the outcome evaluator scored) must have the digest the
manifest records. A replicate that fails a check keeps its ``problem``; its outcomes
are then not shown as valid. Attempt files are verified one by one as their task's
page is written (:mod:`xaytune.viewer._attempts`).

An unfinished tree (its manifest says ``complete: false``: a run still going, or one
that stopped) is opened too, and marked as such: its replicates are the stores on disk
(the manifest lists none yet), and their records are read without a digest to check
them against (the manifest records none yet; a missing record is a replicate still
running). Opening never writes into the tree and
never takes its lock: a live writer is found by reading ``/proc/locks``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xaytune.comparison.compare import ReplicateRuns
from xaytune.core.canonical import sha256_digest
from xaytune.core.domain.benchmark import (
    BenchmarkSuite,
    SuiteSource,
    TaskAssignment,
    record_assignment,
)
from xaytune.core.errors import XaytuneError
from xaytune.experiment.config import ExperimentConfig, validate_config
from xaytune.experiment.tree.cache import reused_from
from xaytune.experiment.tree.files import REPLICATE_FILE
from xaytune.experiment.tree.intent import INTENT_FILE, previous_intents, read_intent
from xaytune.experiment.tree.layout import LOCK_FILE
from xaytune.experiment.tree.manifest import MANIFEST
from xaytune.experiment.tree.manifest_view import (
    ManifestView,
    ReplicateView,
    inside,
    read_manifest,
    recorded_suite,
)
from xaytune.harness.evidence.store import STORE_MARKER

__all__ = ["Candidate", "Replicate", "RunTree", "TaskScore", "open_run", "tree_writer_pid"]

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
    """What the viewer shows: the run's suite (public part; ``source`` is the door to
    its references, shown on the restricted task pages), its candidates (the baseline
    first), its seeds, every replicate, and whether the run finished (``complete``) or
    a live process is writing it (``writer``: its pid)."""

    root: Path
    experiment: str
    suite: BenchmarkSuite
    candidates: tuple[Candidate, ...]
    seeds: tuple[int, ...]
    replicates: tuple[Replicate, ...]
    source: SuiteSource | None = None
    complete: bool = True
    writer: str | None = None
    manifest: ManifestView | None = None
    config: ExperimentConfig | None = None

    def replicate(self, label: str, seed: int) -> Replicate | None:
        for replicate in self.replicates:
            if replicate.candidate.label == label and replicate.seed == seed:
                return replicate
        return None


def _not_a_run(root: Path, why: str) -> XaytuneError:
    return XaytuneError("not-a-run", f"{root}: {why}; not an xaytune run tree")


def _suite(manifest: ManifestView, path: Path, suites: tuple[Path, ...]) -> SuiteSource:
    """The manifest's suite, pinned by its digest (``suites``: directories to use
    instead of the path the manifest records, matched by digest)."""
    for location in suites:
        source = SuiteSource(location)
        if source.digest == manifest.suite.digest:
            return source
    try:
        return recorded_suite(manifest, path)
    except OSError as error:
        raise XaytuneError(
            "suite-missing", f"{path}: its suite is unreadable ({error.strerror}); pass --suite"
        ) from None


def _scores(
    record_path: Path,
    recorded: str | None,
    seed: int,
    assignment: TaskAssignment,
    *,
    sealed: bool = True,
) -> tuple[dict[int, TaskScore], str | None]:
    """The per-task scores of a replicate record, or a problem naming the file
    (``sealed``: the manifest must record its digest; an unfinished run's manifest
    records none yet, and a missing record there is a replicate still running)."""
    try:
        data = record_path.read_bytes()
    except FileNotFoundError:
        if not sealed:
            return {}, None
        return {}, f"{record_path}: unreadable (No such file or directory)"
    except OSError as error:
        return {}, f"{record_path}: unreadable ({error.strerror})"
    if recorded is None and sealed:
        return {}, f"{record_path}: the manifest records no digest of it"
    if recorded is not None and sha256_digest(data) != recorded:
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


def _intent(directory: Path, root: Path, seed: int) -> str | None:
    """The digest of the intent the replicate in ``directory`` ran under: that of the
    nearest ``intent.json`` above it, up to ``root`` (None when the run records none)
    or, in a tree extended with seeds, the earliest intent it records that set out to
    run ``seed`` (the digest its attempts carry; verify checks the chain)."""
    reused = reused_from(directory / "evidence")  # copied from the evidence cache
    if reused is not None:
        return reused.intent_digest  # (verify checks that it meant this replicate)
    for base in (directory, *directory.parents):
        if (base / INTENT_FILE).exists():
            intent, digest = read_intent(base)
            for earlier, before in previous_intents(intent).items():  # oldest first
                if seed in (before.get("seeds") or ()):
                    return earlier
            return digest
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
        intent = _intent(directory, root, listed.seed)
    except XaytuneError as error:
        return None, {}, str(error)
    if listed.assignment_digest and assignment.digest != listed.assignment_digest:
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
    sealed = manifest.complete
    scores, problem = _scores(record, recorded, listed.seed, assignment, sealed=sealed)
    return intent, scores, problem


def _relative(problem: str | None, root: Path) -> str | None:
    """A problem naming files relative to the run (pages hold no machine paths)."""
    return None if problem is None else problem.replace(f"{root}{os.sep}", "")


def tree_writer_pid(root: Path) -> str | None:
    """The pid of a live process holding ``root``'s write lock (a run or a resume),
    or None: read from ``/proc/locks`` by the lock file's inode, so the viewer never
    opens, locks or creates the lock file (a probe with a lock of its own could make a
    resume starting that instant fail ``tree-locked``). None where ``/proc/locks``
    cannot be read (then the banner says only "unfinished")."""
    try:
        stat = os.stat(root / LOCK_FILE, follow_symlinks=False)
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            table = handle.read()
    except OSError:
        return None
    for line in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (device in hex, inode decimal)
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or fields[0] == "->":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            device = os.makedev(int(major, 16), int(minor, 16))
        except ValueError:
            continue
        if int(inode) == stat.st_ino and device == stat.st_dev:
            return fields[4]
    return None


def _manifest(path: Path) -> ManifestView:
    """The manifest at ``path``, finished or not (``bad-manifest`` unless it reads)."""
    try:
        return read_manifest(path)
    except XaytuneError as error:
        if error.reason != "incomplete-run":
            raise
    # Read and bounded once already by read_manifest: only its completeness differed.
    return ManifestView.model_validate_json(path.read_bytes())


def _stores_on_disk(root: Path) -> tuple[ReplicateView, ...]:
    """The replicates of an unfinished run: each ``candidates/<name>/seed-<s>/`` with a
    store (the manifest lists them only once the run ends)."""
    found = []
    for store in sorted(root.glob(f"candidates/*/seed-*/evidence/{STORE_MARKER}")):
        directory = store.parent.parent
        seed = directory.name.removeprefix("seed-")
        if not seed.isdigit() or seed != str(int(seed)):
            continue  # not a seed directory the app writes
        found.append(
            ReplicateView(
                path=directory.relative_to(root).as_posix(),
                seed=int(seed),
                assignment_digest="",
                evidence_digests=(),
            )
        )
    return tuple(found)


def open_run(root: Path, *, suites: tuple[Path, ...] = ()) -> RunTree:
    """The run tree at ``root``, finished or not; ``not-a-run`` (one line naming it)
    if it is none. A models run's root holds several runs: :func:`open_models_run`."""
    if not root.is_dir():
        raise _not_a_run(root, "not a directory")
    path = root / MANIFEST
    if not path.is_file():
        raise _not_a_run(root, f"no {MANIFEST}")
    writer = tree_writer_pid(root)
    manifest = _manifest(path)
    try:
        cfg = validate_config(manifest.config)
    except XaytuneError as error:
        raise XaytuneError("bad-manifest", f"{path}: config: {error}") from None
    listed_replicates = manifest.replicates if manifest.complete else _stores_on_disk(root)
    if manifest.complete and not manifest.replicates:
        raise _not_a_run(root, f"{MANIFEST} lists no replicates")
    source = _suite(manifest, path, suites)
    suite = source.suite
    # The baseline first (the filters read "baseline right, challenger wrong").
    order = sorted(manifest.candidates.items(), key=lambda item: item[0] != cfg.baseline)
    names = {c.name: Candidate(label, c.name, c.harness_fingerprint) for label, c in order}
    sampling = cfg.sampling.sample(len(suite.tasks))
    replicates = []
    for listed in listed_replicates:
        directory = inside(root, listed.path)
        if directory is None or not (directory / "evidence" / STORE_MARKER).is_file():
            raise XaytuneError("bad-manifest", f"{path}: replicate {listed.path!r} has no store")
        candidate = names.get(directory.parent.name)
        if candidate is None:
            if not manifest.complete:
                continue  # a directory the manifest does not name: not shown
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
        source=source,
        complete=manifest.complete,
        writer=writer,
        manifest=manifest,
        config=cfg,
    )
