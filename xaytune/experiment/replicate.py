"""Running an experiment's replicates: every candidate x seed, into the output tree.

Per replicate ``candidates/<name>/seed-<s>/``: ``evidence/`` (the store, with its
published subject), ``evaluation/`` (released and restricted reports) and
``replicate.restricted.json`` (run values and per-task observations, which the
comparison reads back; restricted because it holds per-task reference-derived
scores).
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xaytune.comparison.compare import ReplicateRuns
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import SuiteSource, record_assignment
from xaytune.core.domain.measurement import TaskObservation
from xaytune.core.errors import ConfigError, ExecutionError
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessEvaluation,
    HarnessEvaluator,
    HarnessJudgeEvaluator,
    HarnessOutcomeEvaluator,
    ReferenceEgressGrant,
    bind_evaluation,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.experiment.config import (
    AnthropicModelConfig,
    ExperimentConfig,
    LlamaCppLocalModelConfig,
    ModelConfig,
    SimulatedModelConfig,
    TargetModelConfig,
)
from xaytune.experiment.parts import model_adapter_identity
from xaytune.experiment.preflight import endpoint_key, model_error_counts, unvouched
from xaytune.experiment.tree import cache, cache_evaluations
from xaytune.experiment.tree.cache import replicate_key
from xaytune.experiment.tree.intent import INTENT_FILE
from xaytune.experiment.tree.reuse import reuse_replicate
from xaytune.harness import (
    Harness,
    HarnessEvidenceStore,
    HarnessRunner,
    Toolbox,
)
from xaytune.harness.evidence import assemble_evidence
from xaytune.harness.evidence.store import atomic_write
from xaytune.harness.replicate import compile_replicate
from xaytune.harness.runner import AttemptResult, TaskRun
from xaytune.models import DEFINITIVE_REASONS, Model, SimulatedModel
from xaytune.suites import builtin_suite_path

__all__ = [
    "REPLICATE_FILE",
    "Progress",
    "build_model",
    "configured_evaluation",
    "evaluation_dir",
    "load_source",
    "observed_tasks",
    "replicate_dir",
    "run_replicate",
    "timing_environment",
]

_log = logging.getLogger("xaytune.cache")

REPLICATE_FILE = "replicate.restricted.json"
CANDIDATE_FILE = "candidate.json"
Progress = Callable[[AttemptResult], None]


def load_source(cfg: ExperimentConfig) -> SuiteSource:
    """Open the configured suite (verifying every digest)."""
    if cfg.suite.builtin is not None:
        return SuiteSource(builtin_suite_path(cfg.suite.builtin))
    assert cfg.suite.path is not None
    return SuiteSource(Path(cfg.suite.path).expanduser())


def build_model(config: ModelConfig, *, seed: int) -> Model:
    """The model a replicate runs against (a simulated one is seeded per replicate)."""
    if isinstance(config, SimulatedModelConfig):
        return SimulatedModel(
            seed=config.seed if config.seed is not None else seed,
            latency_s=config.latency_s,
            transient_error_rate=config.transient_error_rate,
            context_window=config.context_window,
            mental_error_base=config.mental_error_base,
            usage_details=config.usage_details,
        )
    if isinstance(config, TargetModelConfig):
        from xaytune.experiment.parts import build_target_model

        return build_target_model(config, seed=seed)
    # The HTTP adapters (aiohttp, httpx) are imported only when a run uses one.
    if isinstance(config, LlamaCppLocalModelConfig):
        from xaytune.models.llama_cpp_local import llama_cpp_local_model

        # One server per process, shared by the replicates; the runtime is the [local] extra.
        return llama_cpp_local_model(seed=seed, **config.model_dump(exclude={"kind", "prices"}))
    if isinstance(config, AnthropicModelConfig):
        from xaytune.models import AnthropicModel

        return AnthropicModel(
            config.name,
            base_url=config.base_url,
            api_key_env=config.api_key_env,
            anthropic_version=config.anthropic_version,
            revision=config.revision,
            parameters=dict(config.parameters),
            max_tokens=config.max_tokens,
            timeout_s=config.timeout_s,
            total_timeout_s=config.total_timeout_s,
            max_retries=config.max_retries,
        )
    from xaytune.models import OpenAICompatibleModel

    return OpenAICompatibleModel(
        config.base_url,
        config.name,
        api_key_env=config.api_key_env,
        revision=config.revision,
        parameters=dict(config.parameters),
        timeout_s=config.timeout_s,
        total_timeout_s=config.total_timeout_s,
        max_retries=config.max_retries,
    )


def timing_environment() -> str:
    """The declared timing environment: time metrics compare only within one."""
    system = f"{platform.system()}-{platform.machine()}"
    return f"{system}-{os.cpu_count()}cpu-py{platform.python_version()}"


def replicate_dir(out: Path, harness: Harness, seed: int) -> Path:
    return out / "candidates" / harness.name / f"seed-{seed}"


def _evaluator(cfg: ExperimentConfig, source: SuiteSource, label: str):
    """The evaluator configured under ``label`` and the grant the host issues for it."""
    config = cfg.evaluators[label]
    if config.name == "harness-outcome":
        return HarnessOutcomeEvaluator(source), None
    judge_config = config.judge_model
    if judge_config is None:
        raise ConfigError(
            "bad-config", f"evaluators.{label}.judge_model: missing for harness-judge"
        )
    judge = build_model(judge_config, seed=0)
    grant = None
    if config.grant_reference_egress:
        grant = ReferenceEgressGrant.issue(
            suite_digest=source.digest,
            judge_model=judge.identity,
            issued_by=f"xaytune-app:{cfg.experiment.name}",
        )
    grants = () if grant is None else (grant,)
    return HarnessJudgeEvaluator(source, judge_model=judge, grants=grants), grant


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
    harness: Harness,
    seed: int,
    source: SuiteSource,
    out: Path,
    toolbox: Toolbox,
    progress: Progress | None = None,
    intent: str | None = None,
) -> ReplicateOutcome:
    """Run, assemble, verify, publish and evaluate one candidate under one seed.

    ``toolbox`` holds every candidate's tools (``parts.experiment_toolbox``); this
    candidate is granted its own. ``intent`` is the run's intent digest, which
    every attempt record and the evidence carry."""
    suite = source.suite
    directory = replicate_dir(out, harness, seed)
    cache.remove_restores(directory)  # a copy from the cache a kill cut short
    # Nothing run here yet (a resume of this replicate holds attempts, or a copy).
    fresh = not any((directory / "evidence" / "tasks").glob("*/*.jsonl"))
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(
        directory.parent / CANDIDATE_FILE,
        canonical_bytes(
            {
                "label": label,
                "name": harness.name,
                "harness_fingerprint": harness.fingerprint,
                "harness": harness.model_dump(mode="json"),
            }
        )
        + b"\n",
    )
    store = HarnessEvidenceStore(directory / "evidence", durability=cfg.durability)
    sampling = cfg.sampling.sample(len(suite.tasks))
    assignment = record_assignment(suite, sampling, seed=seed)
    model = build_model(cfg.model, seed=seed)
    tools = frozenset(harness.tool_names)
    specs = compile_replicate(
        harness,
        suite=suite,
        assignment=assignment,
        store=store,
        authorized_tools=tools,
        model=model.identity,
        prices=cfg.model.prices,
    )
    cached = reuse = None
    key = replicate_key(
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
    reused = cache.reused_from(store.root)
    if reused is not None:  # a resume of a replicate copied from the cache
        cached = assemble_evidence(
            specs, suite, sampling, assignment, source, store, intent=reused.intent_digest
        )
    elif fresh and use_cache:
        root = cache.cache_root(cfg.cache.dir)
        reuse = reuse_replicate(root, key, specs, sampling, assignment, source, store)
        if reuse is not None:  # linked from the cache, verified and published here
            reused, cached, subject = reuse
    runner = HarnessRunner(durability=cfg.durability, intent=intent)

    async def run_all():
        try:
            return await runner.run_many(
                specs,
                model=model,
                toolbox=toolbox,
                authorized_tools=tools,
                concurrency=cfg.concurrency,
                resume=cfg.resume is not None,
                progress=progress,
            )
        finally:
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()  # a client's connection pool belongs to this event loop

    if cached is not None:
        runs, evidence = [], cached
        asyncio.run(_close(model))
    else:
        runs = asyncio.run(run_all())
        _refuse_unfinished(runs, harness, seed)
        evidence = assemble_evidence(
            specs, suite, sampling, assignment, source, store, intent=intent
        )
    if reuse is None:
        subject = publish_evidence(evidence, store)
    if (
        cached is None
        and fresh
        and cfg.cache.mode == "read-write"
        and use_cache
        and intent is not None
        # Evidence touched by a model error is never stored: it would replay the error.
        and cache.cacheable(attempt for run in runs for attempt in run.attempts)
    ):
        cache.publish(
            cache.cache_root(cfg.cache.dir),
            key,
            store_root=store.root,
            intent_bytes=(out / INTENT_FILE).read_bytes(),
            evidence_digest=evidence.digest,
            # Reused evidence was timed where it ran.
            timing_environment=timing_environment()
            if reused is None
            else reused.timing_environment,
            max_bytes=int(cfg.cache.max_gb * 1e9),
        )
    # The cache entry holding this very evidence keeps its deterministic evaluations.
    held = None
    if use_cache:
        held = cache_evaluations.entry_for(cache.cache_root(cfg.cache.dir), key, evidence.digest)
    evaluations = [
        _evaluate(cfg, label, subject, source=source, directory=directory, seed=seed, held=held)
        for label in sorted(cfg.evaluators)
    ]
    observations = observed_tasks(cfg, evaluations)
    replicate = ReplicateRuns(
        seed=seed,
        suite_digest=suite.digest,
        assignment_digest=assignment.digest,
        evaluations=tuple(evaluation.result for evaluation in evaluations),
        facets={
            "model": model.identity.model_dump(mode="json", exclude={"parameters"})
            | {"parameters": _facet_parameters(model)},
            "toolbox": toolbox.version,
            "model_adapter": model_adapter_identity(model).model_dump(mode="json"),
            "runtime": "xaytune-local/v1",
            "durability": cfg.durability,
            **_price_facet(cfg),
        },
        # Reused evidence was timed where it ran.
        timing_environment=timing_environment() if reused is None else reused.timing_environment,
        task_observations=observations,
    )
    atomic_write(directory / REPLICATE_FILE, canonical_bytes(replicate) + b"\n")
    return ReplicateOutcome(
        candidate=harness.name,
        seed=seed,
        evidence_digest=evidence.digest,
        evaluator_fingerprints=tuple(e.result.evaluator_fingerprint for e in evaluations),
        attempts=sum(len(run.attempts) for run in runs),
        skipped=sum(run.skipped for run in runs) if cached is None else len(specs),
        **model_error_counts(evidence),
        reused=cached is not None,
        tokens=sum(
            a.spend.input_tokens + a.spend.output_tokens
            for entry in evidence.entries
            for a in entry.attempts
        ),
    )


async def _close(model) -> None:
    close = getattr(model, "aclose", None)
    if close is not None:
        await close()


def _refuse_unfinished(runs: list[TaskRun], harness: Harness, seed: int) -> None:
    """Stop (``model-unavailable``) when tasks ended without an outcome because the
    model could not be reached: comparing now would compare holes. Their attempts are
    sealed partial, so a resume of the tree runs exactly those tasks again."""
    refused = [
        text
        for text in (
            (run.last.error or "").removeprefix("ModelUnavailable: ")
            for run in runs
            if run.last is not None and run.last.outcome is None
        )
        if text.split(":", 1)[0] in DEFINITIVE_REASONS
    ]
    if refused:  # the endpoint refuses every call alike: a resume after it is fixed
        reason, cause = refused[0].split(": ", 1)
        waiting = sum(run.not_started for run in runs)
        stopped = f", {waiting} not started (the run stopped at the refusal)" if waiting else ""
        raise ExecutionError(
            reason,
            f"{cause}; {len(refused)} of {len(runs)} tasks of {harness.name} seed {seed} "
            f"were refused{stopped}, their attempts are sealed partial, nothing attested "
            "is lost",
        )
    unreachable = [
        run.last.error
        for run in runs
        if run.last is not None
        and run.last.outcome is None
        and (run.last.error or "").startswith("ModelUnavailable")
    ]
    if unreachable:
        first = unreachable[0].removeprefix("ModelUnavailable: ")
        raise ExecutionError(
            "model-unavailable",
            f"{len(unreachable)} of {len(runs)} tasks of {harness.name} seed {seed} could not "
            f"reach the model ({first}); their attempts are sealed partial, nothing attested "
            "is lost",
        )


def configured_evaluation(
    cfg: ExperimentConfig, source: SuiteSource, label: str
) -> tuple[HarnessEvaluator, EvaluationSpec]:
    """The evaluator configured under ``label`` and its evaluation spec (with the
    grant the host issues for it)."""
    evaluator, grant = _evaluator(cfg, source, label)
    config = cfg.evaluators[label]
    spec = EvaluationSpec(
        evaluator=EvaluatorSpec(name=config.name, config=config.config), grant=grant
    )
    return evaluator, spec


def evaluation_dir(directory: Path, label: str) -> Path:
    """Where a replicate's evaluation by the evaluator ``label`` writes its reports."""
    return directory / "evaluation" / label


def observed_tasks(
    cfg: ExperimentConfig, evaluations: list[HarnessEvaluation]
) -> dict[str, tuple[TaskObservation, ...]]:
    """The per-task observations a replicate record keeps (what the comparison's
    task-level view reads), from its evaluations."""
    observations = {}
    for evaluation in evaluations:
        assert evaluation.result is not None
        for key in _observed_keys(cfg):
            if evaluation.result.metric(key) is not None:
                observations[key] = evaluation.task_observations[key]
    return observations


def _evaluate(cfg, label: str, subject, *, source, directory: Path, seed: int, held=None):
    """Bind and run one configured evaluator on a published subject. ``held``: the
    evidence cache's entry of this subject, where a DETERMINISTIC evaluation is looked
    up first (linked, checked, never measured twice) and stored after."""
    evaluator, unbound = configured_evaluation(cfg, source, label)
    spec = bind_evaluation(evaluator, unbound)
    key = None
    if held is not None and spec.determinism == "DETERMINISTIC":
        key, header = cache_evaluations.keyed(spec, evaluator, subject, source, seed)
        found = cache_evaluations.load(held, key, evaluation_dir(directory, label), header)
        if found is not None and found.result is not None:
            return found
    evaluation = run_harness_evaluation(
        evaluator,
        spec,
        subject,
        source=source,
        output_uri=str(evaluation_dir(directory, label)),
        seed=seed,
    )
    if evaluation.result is None:
        raise ConfigError(
            "no-result",
            f"{directory}: evaluator {label} produced no result (no task was attested)",
        )
    if key is not None and cfg.cache.mode == "read-write":
        cache_evaluations.store(held, key, evaluation)
    return evaluation


def _observed_keys(cfg: ExperimentConfig) -> list[str]:
    # Per-task observations the comparison's task-level view needs: the objectives,
    # and task_success for Wilson intervals and pass^k.
    keys = [objective.metric for objective in cfg.comparison.objectives]
    return [*keys, "task_success"] if "task_success" not in keys else keys


def _facet_parameters(model: Model) -> dict[str, object]:
    # A simulated model is seeded per replicate; the seed is the replicate's, not a
    # facet of the execution environment, so it is left out of C4.
    return {k: v for k, v in model.identity.parameters.items() if k != "seed"}


def _price_facet(cfg: ExperimentConfig) -> dict[str, object]:
    # The model's price table, when it has one: two sides priced differently are not
    # comparable (C4). No table, no facet: the facets are those of before.
    prices = cfg.model.prices
    return {} if prices is None else {"prices": prices.model_dump(mode="json")}
