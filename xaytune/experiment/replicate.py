"""One replicate (one candidate under one seed) as five named stages.

    prepare_replicate -> reuse_or_run -> assemble_and_publish -> evaluate_replicate
    -> record_replicate

:func:`run_replicate` runs them in that order; each stage is public, so a caller that
needs only part of it (a benchmark timing the attempts alone: :func:`prepare_replicate`
then :func:`run_attempts`) calls the stages it needs. What the first stage establishes
travels to every later one in one frozen record, :class:`PreparedReplicate`; each later
stage returns its own frozen record (:class:`Produced`, :class:`Published`), and the
last one the :class:`ReplicateOutcome` the manifest and the terminal summary read.

On disk, per replicate ``candidates/<name>/seed-<s>/`` (:mod:`xaytune.experiment.tree.files`):
``evidence/`` (the store, with its published subject), ``evaluation/<label>/`` and
``replicate.restricted.json`` (run values and per-task observations, which the
comparison reads back).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xaytune.comparison.compare import ReplicateRuns
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import (
    SeededSample,
    SuiteSource,
    TaskAssignment,
    record_assignment,
)
from xaytune.core.errors import ConfigError
from xaytune.evaluation.harness import HarnessEvaluation, PublishedSubject, publish_evidence
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.evaluators import evaluate, observed_tasks
from xaytune.experiment.facets import replicate_facets, timing_environment
from xaytune.experiment.model_adapters import build_model, model_adapter_identity
from xaytune.experiment.parts import experiment_toolbox
from xaytune.experiment.preflight import endpoint_key, model_error_counts, unvouched
from xaytune.experiment.source import load_source
from xaytune.experiment.stops import refuse_unfinished
from xaytune.experiment.tree import cache, cache_evaluations, cache_shared
from xaytune.experiment.tree.files import CANDIDATE_FILE, REPLICATE_FILE, replicate_dir
from xaytune.experiment.tree.intent import INTENT_FILE
from xaytune.experiment.tree.reuse import reuse_replicate
from xaytune.harness import (
    AgentExecutionSpec,
    Harness,
    HarnessEvidenceStore,
    HarnessRunner,
    Toolbox,
)
from xaytune.harness.evidence import HarnessRunEvidence, assemble_evidence
from xaytune.harness.evidence.store import atomic_write
from xaytune.harness.replicate import compile_replicate
from xaytune.harness.runner import AttemptResult, TaskRun
from xaytune.models import Model

__all__ = [
    "PreparedReplicate",
    "Produced",
    "Progress",
    "Published",
    "ReplicateOutcome",
    "assemble_and_publish",
    "evaluate_replicate",
    "prepare_replicate",
    "record_replicate",
    "reuse_or_run",
    "run_attempts",
    "run_replicate",
]

Progress = Callable[[AttemptResult], None]


@dataclass(frozen=True)
class PreparedReplicate:
    """One replicate, ready to run: what it runs and where, as :func:`prepare_replicate`
    set it up. Every later stage reads it; none changes it.

    ``fresh``: nothing had run in the replicate's store before (neither attempts of an
    earlier run, which a resume continues, nor a copy from the cache). ``cache_key``:
    the content address of its evidence; ``use_cache``: whether the evidence cache may
    serve or keep it (not when the cache is off, nor for an HTTP endpoint that was not
    asked who it is). ``entry``: the cache entry found under the key for a fresh
    replicate; its store is then not made yet (a reuse builds it whole from the entry;
    :func:`run_attempts` makes it when the replicate runs after all)."""

    cfg: ExperimentConfig
    label: str
    harness: Harness
    seed: int
    source: SuiteSource
    out: Path
    toolbox: Toolbox
    intent: str | None
    directory: Path
    fresh: bool
    store: HarnessEvidenceStore
    sampling: SeededSample
    assignment: TaskAssignment
    model: Model
    specs: tuple[AgentExecutionSpec, ...]
    cache_key: str
    use_cache: bool
    entry: Path | None = None

    @property
    def tools(self) -> frozenset[str]:
        """The tools this candidate is granted (its own, of the shared toolbox)."""
        return frozenset(self.harness.tool_names)

    @property
    def cache_root(self) -> Path:
        """The evidence cache's directory."""
        return cache.cache_root(self.cfg.cache.dir)


@dataclass(frozen=True)
class Produced:
    """What :func:`reuse_or_run` produced: the task runs of this process (none when the
    evidence came from the cache), the cache entry the evidence was copied from (now or
    by the run this one resumes; None when it ran here), and, when nothing ran, the
    evidence verified from the cache and, when the reuse published it, its subject."""

    runs: tuple[TaskRun, ...]
    reused: cache.CachedReplicate | None
    cached: HarnessRunEvidence | None
    subject: PublishedSubject | None


@dataclass(frozen=True)
class Published:
    """The replicate's verified evidence and its published subject (what evaluators
    read), with what produced them."""

    produced: Produced
    evidence: HarnessRunEvidence
    subject: PublishedSubject

    @property
    def timing_environment(self) -> str:
        """Where the evidence was timed: here, or where a reused one ran."""
        reused = self.produced.reused
        return timing_environment() if reused is None else reused.timing_environment


@dataclass(frozen=True)
class ReplicateOutcome:
    """What one replicate produced (for the manifest and the terminal summary)."""

    candidate: str
    seed: int
    evidence_digest: str
    evaluator_fingerprints: tuple[str, ...]
    attempts: int
    skipped: int
    # Tasks whose attested outcome is ``model-error``, of ``tasks``; their causes grouped
    # (the outcome detail's first line, which starts with the reason word) with counts.
    tasks: int = 0
    model_errors: int = 0
    error_causes: tuple[tuple[str, int], ...] = ()
    # Copied from the evidence cache (nothing ran here), and the input + output tokens
    # every attempt of the evidence spent: what the progress line says of a reused one.
    reused: bool = False
    tokens: int = 0


def run_replicate(
    cfg: ExperimentConfig,
    *,
    label: str,
    seed: int,
    out: Path,
    harness: Harness | None = None,
    source: SuiteSource | None = None,
    toolbox: Toolbox | None = None,
    progress: Progress | None = None,
    intent: str | None = None,
) -> ReplicateOutcome:
    """Run, assemble, verify, publish, evaluate and record the candidate ``label`` under
    ``seed`` into the run tree ``out`` (the five stages, in order).

    ``cfg`` is a validated config with its candidates' parts resolved
    (``parts.resolve_candidates``). ``harness`` defaults to ``cfg.candidates[label]``,
    ``source`` to the configured suite, ``toolbox`` to the one holding every candidate's
    tools (``parts.experiment_toolbox``; this candidate is granted its own). ``intent``
    is the run's intent digest (``tree.intent.write_intent``), which every attempt
    record and the evidence carry; the evidence cache keeps only evidence run under
    one. ``progress`` is called with each finished attempt.

    Raises the typed refusals of each stage (``ExecutionError`` ``model-unavailable`` or
    the endpoint's reason when the model could not be reached: the attempts are sealed
    partial and a resume runs them again)."""
    prepared = prepare_replicate(
        cfg, label=label, seed=seed, out=out, harness=harness, source=source,
        toolbox=toolbox, intent=intent,
    )  # fmt: skip
    produced = reuse_or_run(prepared, progress=progress)
    published = assemble_and_publish(prepared, produced)
    evaluations = evaluate_replicate(prepared, published)
    return record_replicate(prepared, published, evaluations)


def prepare_replicate(
    cfg: ExperimentConfig,
    *,
    label: str,
    seed: int,
    out: Path,
    harness: Harness | None = None,
    source: SuiteSource | None = None,
    toolbox: Toolbox | None = None,
    intent: str | None = None,
) -> PreparedReplicate:
    """Stage 1: set the replicate up (defaults as :func:`run_replicate`'s).

    Removes a copy from the cache a kill cut short, writes the candidate's
    ``candidate.json``, opens the evidence store, records the seeded assignment, builds
    the model (a simulated one seeded by ``seed``), compiles one spec per assigned task
    and computes the evidence's cache key. No model call is made. The store's task
    directories are made unless the cache holds the evidence of a fresh replicate
    (``entry``): a reuse builds the store whole from the entry, so making a fresh one
    first (a marker written durably, a directory per task) would be work thrown away."""
    if harness is None:
        if label not in cfg.candidates:
            raise ConfigError("bad-config", f"candidates.{label}: no such candidate")
        harness = cfg.candidates[label]
    source = load_source(cfg) if source is None else source
    toolbox = experiment_toolbox(cfg) if toolbox is None else toolbox
    suite = source.suite
    directory = replicate_dir(out, harness.name, seed)
    cache.remove_restores(directory)  # a copy from the cache a kill cut short
    # Nothing run here yet (a resume of this replicate holds attempts, or a copy).
    fresh = not any((directory / "evidence" / "tasks").glob("*/*.jsonl"))
    directory.mkdir(parents=True, exist_ok=True)
    candidate = {
        "label": label,
        "name": harness.name,
        "harness_fingerprint": harness.fingerprint,
        "harness": harness.model_dump(mode="json"),
    }
    _write_unless_same(directory.parent / CANDIDATE_FILE, canonical_bytes(candidate) + b"\n")
    store = HarnessEvidenceStore(directory / "evidence", durability=cfg.durability)
    sampling = cfg.sampling.sample(len(suite.tasks))
    assignment = record_assignment(suite, sampling, seed=seed)
    model = build_model(cfg.model, seed=seed)
    specs = compile_replicate(
        harness,
        suite=suite,
        assignment=assignment,
        store=store,
        authorized_tools=frozenset(harness.tool_names),
        model=model.identity,
        prices=cfg.model.prices,
        make_dirs=False,  # below, once it is known whether the cache holds the evidence
    )
    key = cache.replicate_key(
        suite_digest=suite.digest,
        assignment_digest=assignment.digest,
        specs=specs,
        model=model.identity.model_dump(mode="json"),
        seed=seed,
        durability=cfg.durability,
        model_adapter=model_adapter_identity(model).model_dump(mode="json"),
        endpoint=endpoint_key(cfg.model),
    )
    # An HTTP endpoint not asked who it is (preflight: false) cannot vouch for a cache entry.
    use_cache = cfg.cache.mode != "off" and not unvouched(cfg.model)
    entry = None
    if fresh and use_cache:
        entry = cache.lookup(cache.cache_root(cfg.cache.dir), key)
    if entry is None:
        _make_store(store, len(specs))
    return PreparedReplicate(
        cfg=cfg, label=label, harness=harness, seed=seed, source=source, out=out,
        toolbox=toolbox, intent=intent, directory=directory, fresh=fresh, store=store,
        sampling=sampling, assignment=assignment, model=model, specs=tuple(specs),
        cache_key=key, use_cache=use_cache, entry=entry,
    )  # fmt: skip


def _make_store(store: HarnessEvidenceStore, tasks: int) -> None:
    """The store's marker and the task directories its ``tasks`` specs write to (what
    compiling with ``make_dirs`` makes; positions are assignment order)."""
    for position in range(tasks):
        store.task_output(position)


def _write_unless_same(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (whole, durably) unless the file already holds exactly
    it: each seed of a candidate has the same ``candidate.json``, and rewriting it costs
    an fsync per replicate (a tenth of a reused replicate's time on this disk)."""
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    atomic_write(path, data)


def reuse_or_run(prepared: PreparedReplicate, *, progress: Progress | None = None) -> Produced:
    """Stage 2: the replicate's evidence from the cache, or its attempts run here.

    A replicate copied from the cache by the run this one resumes is assembled from that
    copy; a fresh one is linked from the cache when an entry under its key verifies
    (:func:`~xaytune.experiment.tree.reuse.reuse_replicate`, which publishes it);
    otherwise every task runs (:func:`run_attempts`; a resume runs only what is left).
    The model's client is closed either way."""
    p = prepared
    reused = cache.reused_from(p.store.root)
    cached = subject = None
    if reused is not None:  # a resume of a replicate copied from the cache
        cached = assemble_evidence(
            p.specs, p.source.suite, p.sampling, p.assignment, p.source, p.store,
            intent=reused.intent_digest,
        )  # fmt: skip
    elif p.fresh and p.use_cache:
        found = reuse_replicate(
            p.cache_root, p.cache_key, p.specs, p.sampling, p.assignment, p.source, p.store
        )
        if found is not None:  # linked from the cache, verified and published here
            reused, cached, subject = found
    if cached is not None:
        if hasattr(p.model, "aclose"):  # no event loop for a model without a client
            asyncio.run(_close(p.model))
        return Produced(runs=(), reused=reused, cached=cached, subject=subject)
    return Produced(runs=run_attempts(p, progress=progress), reused=None, cached=None, subject=None)


def run_attempts(
    prepared: PreparedReplicate, *, progress: Progress | None = None
) -> tuple[TaskRun, ...]:
    """Run every task of a prepared replicate into its store (``cfg.concurrency`` at a
    time; with ``cfg.resume``, only the tasks without a sealed outcome), then close the
    model's client. Nothing is assembled or checked here."""
    p = prepared
    if p.entry is not None:  # left for a reuse that did not happen (a miss, a refused entry)
        _make_store(p.store, len(p.specs))
    runner = HarnessRunner(durability=p.cfg.durability, intent=p.intent)

    runs: list[TaskRun] = []

    # The runs are kept here, not returned: asyncio.run (3.11) formats a repr of its
    # task, result included, when it restores the SIGINT handler it installed.
    async def run_all() -> None:
        try:
            runs[:] = await runner.run_many(
                p.specs,
                model=p.model,
                toolbox=p.toolbox,
                authorized_tools=p.tools,
                concurrency=p.cfg.concurrency,
                resume=p.cfg.resume is not None,
                progress=progress,
            )
        finally:
            await _close(p.model)  # a client's connection pool belongs to this event loop

    asyncio.run(run_all())
    return tuple(runs)


def assemble_and_publish(prepared: PreparedReplicate, produced: Produced) -> Published:
    """Stage 3: the verified evidence and its published subject.

    Evidence run here is first checked for tasks the model could not reach (a refusal:
    :func:`~xaytune.experiment.stops.refuse_unfinished`), then assembled and verified,
    published, and, when the cache is read-write, this is a fresh run under an intent
    and no attempt met a model error, stored in the evidence cache."""
    p = prepared
    evidence = produced.cached
    if evidence is None:
        refuse_unfinished(produced.runs, p.harness, p.seed)
        evidence = assemble_evidence(
            p.specs, p.source.suite, p.sampling, p.assignment, p.source, p.store,
            intent=p.intent,
        )  # fmt: skip
    subject = produced.subject
    if subject is None:
        subject = publish_evidence(evidence, p.store)
    published = Published(produced=produced, evidence=evidence, subject=subject)
    if (
        produced.cached is None
        and p.fresh
        and p.cfg.cache.mode == "read-write"
        and p.use_cache
        and p.intent is not None
        # Evidence touched by a model error is never stored: it would replay the error.
        and cache.cacheable(attempt for run in produced.runs for attempt in run.attempts)
    ):
        cache.publish(
            p.cache_root,
            p.cache_key,
            store_root=p.store.root,
            intent_bytes=(p.out / INTENT_FILE).read_bytes(),
            evidence_digest=evidence.digest,
            timing_environment=published.timing_environment,
            max_bytes=int(p.cfg.cache.max_gb * 1e9),
        )
    return published


def evaluate_replicate(
    prepared: PreparedReplicate, published: Published
) -> tuple[HarnessEvaluation, ...]:
    """Stage 4: every configured evaluator (in label order) on the published subject.

    The cache entry holding this very evidence keeps its deterministic evaluations:
    found there, one is linked, not measured again."""
    p = prepared
    held = None
    if p.use_cache:
        held = cache_evaluations.entry_for(p.cache_root, p.cache_key, published.evidence.digest)
    return tuple(
        evaluate(
            p.cfg,
            label,
            published.subject,
            source=p.source,
            directory=p.directory,
            seed=p.seed,
            held=held,
        )
        for label in sorted(p.cfg.evaluators)
    )


def record_replicate(
    prepared: PreparedReplicate,
    published: Published,
    evaluations: tuple[HarnessEvaluation, ...],
) -> ReplicateOutcome:
    """Stage 5: write ``replicate.restricted.json`` (the run values, execution facets,
    timing environment and per-task observations the comparison reads back) and
    return what the replicate produced."""
    p = prepared
    suite, produced, evidence = p.source.suite, published.produced, published.evidence
    results = tuple(e.result for e in evaluations if e.result is not None)
    assert len(results) == len(evaluations)  # evaluate() refuses an evaluation without one
    record = ReplicateRuns(
        seed=p.seed,
        suite_digest=suite.digest,
        assignment_digest=p.assignment.digest,
        evaluations=results,
        facets=replicate_facets(p.cfg, p.model, p.toolbox),
        timing_environment=published.timing_environment,
        task_observations=observed_tasks(p.cfg, list(evaluations)),
    )
    held = None  # the cache entry of this evidence, which may keep these very bytes
    if p.use_cache:
        held = cache_evaluations.entry_for(p.cache_root, p.cache_key, evidence.digest)
    cache_shared.write_shared(
        p.directory / REPLICATE_FILE, canonical_bytes(record) + b"\n", held,
        keep=p.cfg.cache.mode == "read-write",
    )  # fmt: skip
    from_cache = produced.cached is not None
    return ReplicateOutcome(
        candidate=p.harness.name,
        seed=p.seed,
        evidence_digest=evidence.digest,
        evaluator_fingerprints=tuple(result.evaluator_fingerprint for result in results),
        attempts=sum(len(run.attempts) for run in produced.runs),
        skipped=len(p.specs) if from_cache else sum(run.skipped for run in produced.runs),
        **model_error_counts(evidence),
        reused=from_cache,
        tokens=sum(
            a.spend.input_tokens + a.spend.output_tokens
            for entry in evidence.entries
            for a in entry.attempts
        ),
    )


async def _close(model: Model) -> None:
    close = getattr(model, "aclose", None)
    if close is not None:
        await close()
