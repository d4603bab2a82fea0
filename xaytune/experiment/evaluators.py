"""The experiment's configured evaluators, and one replicate's evaluation by each.

:func:`configured_evaluation` builds the evaluator configured under a label (an
outcome evaluator, or a judge with its pinned judge model and, when granted, the
reference-egress grant the host issues) and its unbound evaluation spec.
:func:`evaluate` binds and runs one on a published subject, looking a DETERMINISTIC
evaluation up in the evidence cache's entry first (linked, checked, never measured
twice) and storing a fresh one there. :func:`observed_tasks` picks the per-task
observations a replicate record keeps.
"""

from __future__ import annotations

from pathlib import Path

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.domain.measurement import TaskObservation
from xaytune.core.errors import ConfigError
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessEvaluation,
    HarnessEvaluator,
    HarnessJudgeEvaluator,
    HarnessOutcomeEvaluator,
    PublishedSubject,
    ReferenceEgressGrant,
    bind_evaluation,
    run_harness_evaluation,
)
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.model_adapters import build_model
from xaytune.experiment.tree import cache_evaluations
from xaytune.experiment.tree.files import evaluation_dir

__all__ = [
    "configured_evaluation",
    "configured_evaluator",
    "evaluate",
    "observed_evaluations",
    "observed_tasks",
]


def configured_evaluator(
    cfg: ExperimentConfig, source: SuiteSource, label: str
) -> tuple[HarnessEvaluator, ReferenceEgressGrant | None]:
    """The evaluator configured under ``label`` and the grant the host issues for it
    (None unless a judge is granted reference egress)."""
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


def configured_evaluation(
    cfg: ExperimentConfig, source: SuiteSource, label: str
) -> tuple[HarnessEvaluator, EvaluationSpec]:
    """The evaluator configured under ``label`` and its evaluation spec (with the
    grant the host issues for it)."""
    evaluator, grant = configured_evaluator(cfg, source, label)
    config = cfg.evaluators[label]
    spec = EvaluationSpec(
        evaluator=EvaluatorSpec(name=config.name, config=config.config), grant=grant
    )
    return evaluator, spec


def evaluate(
    cfg: ExperimentConfig,
    label: str,
    subject: PublishedSubject,
    *,
    source: SuiteSource,
    directory: Path,
    seed: int,
    held: Path | None = None,
) -> HarnessEvaluation:
    """Bind and run the evaluator ``label`` on a published subject, its reports under
    ``directory``'s ``evaluation/<label>/``. ``held``: the evidence cache's entry of this
    subject, where a DETERMINISTIC evaluation is looked up first and stored after (when
    the cache is read-write). Refuses (``no-result``) an evaluation without a result."""
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
    if held is not None and key is not None and cfg.cache.mode == "read-write":
        cache_evaluations.store(held, key, evaluation)
    return evaluation


def observed_tasks(
    cfg: ExperimentConfig, evaluations: list[HarnessEvaluation]
) -> dict[str, tuple[TaskObservation, ...]]:
    """The per-task observations a replicate record keeps (what the comparison's
    task-level view reads), from its evaluations."""
    return {
        key: evaluation.task_observations[key]
        for key, evaluation in observed_evaluations(cfg, evaluations).items()
    }


def observed_evaluations(
    cfg: ExperimentConfig, evaluations: list[HarnessEvaluation]
) -> dict[str, HarnessEvaluation]:
    """Per metric key :func:`observed_tasks` keeps, the evaluation it is taken from."""
    observed = {}
    for evaluation in evaluations:
        assert evaluation.result is not None
        for key in _observed_keys(cfg):
            if evaluation.result.metric(key) is not None:
                observed[key] = evaluation
    return observed


def _observed_keys(cfg: ExperimentConfig) -> list[str]:
    # Per-task observations the comparison's task-level view needs: the objectives,
    # and task_success for Wilson intervals and pass^k.
    keys = [objective.metric for objective in cfg.comparison.objectives]
    return [*keys, "task_success"] if "task_success" not in keys else keys
