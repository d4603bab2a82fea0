"""The experiment's parts, resolved and checked before the first model call.

:func:`resolve_candidates` runs when the config is validated: every candidate's
tools and loop are imported, instantiated and checked, and each harness gains the
code identity of its parts (so its fingerprint covers them). :func:`preflight` then
checks everything else knowable from config before money is spent: every objective
names a metric the selected catalog can record (:mod:`xaytune.experiment.objectives`), the
suite opens and holds the sample, the dollar budgets hold (:mod:`xaytune.experiment.cost`),
the model adapter builds, every evaluator binds (its scorer resolves). A refusal is
one line naming the config key; nothing has been written yet.

The model is built through the plugin registry (:mod:`xaytune.experiment.model_adapters`).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from xaytune.core.domain.benchmark import record_assignment
from xaytune.core.errors import XaytuneError
from xaytune.evaluation.harness import bind_evaluation
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.cost import check_cost_config
from xaytune.experiment.evaluators import configured_evaluation
from xaytune.experiment.model_adapters import adapter_identity, build_model, model_adapter_identity
from xaytune.experiment.objectives import check_objectives
from xaytune.experiment.source import load_source
from xaytune.harness import Toolbox
from xaytune.harness.parts import resolve_harness, shared_toolbox
from xaytune.plugins import CodeIdentity, code_identity, import_target

__all__ = [
    "experiment_parts",
    "experiment_toolbox",
    "part_change",
    "preflight",
    "resolve_candidates",
]


def resolve_candidates(cfg: ExperimentConfig) -> ExperimentConfig:
    """``cfg`` with every candidate's parts resolved (``Harness.parts`` filled in) and
    one toolbox possible for all of them (``duplicate-tool`` otherwise)."""
    resolved = {
        label: resolve_harness(harness, where=f"candidates.{label}")
        for label, harness in cfg.candidates.items()
    }
    shared_toolbox(resolved.values())
    candidates = {label: item.harness for label, item in resolved.items()}
    return cfg.model_copy(update={"candidates": candidates})


def experiment_toolbox(cfg: ExperimentConfig) -> Toolbox:
    """One toolbox with the tools of every candidate (the C4 toolbox facet is the
    same for all of them; each candidate is granted only its own tools)."""
    return shared_toolbox(
        resolve_harness(harness, where=f"candidates.{label}")
        for label, harness in cfg.candidates.items()
    )


def part_change(recorded: CodeIdentity) -> str | None:
    """How the code of a part the run recorded differs here, or None when it is the
    same (what ``verify`` warns about: the evidence is intact, the code is not what
    produced it)."""
    where = f"{recorded.kind} {recorded.name!r} ({recorded.target})"
    try:
        current = code_identity(
            recorded.kind, recorded.name, import_target(recorded.target, where=where), where=where
        )
    except XaytuneError as error:
        return f"{where}: the recorded code ({recorded.target}) cannot be loaded here: {error}"
    # The source decides: a version may be declared by an instance (set in __init__
    # from params the fingerprint covers) that importing the class cannot see.
    if current.source_sha256 != recorded.source_sha256:
        return (
            f"{where}: code here differs from the code the run recorded "
            f"({recorded.source_sha256} recorded, {current.source_sha256} here)"
        )
    return None


def experiment_parts(cfg: ExperimentConfig) -> dict[str, Any]:
    """The code identities an experiment's results depend on beyond its harnesses:
    each outcome evaluator's scorer and the model adapter class (recorded in the
    manifest; a resume with other code is refused, ``verify`` warns)."""
    from xaytune.evaluation.config import OutcomeEvaluationConfig, resolve_config
    from xaytune.evaluation.scorers import resolve_scorer

    scorers = {}
    for label, evaluator in sorted(cfg.evaluators.items()):
        config = resolve_config(evaluator.config)
        if isinstance(config, OutcomeEvaluationConfig):
            where = f"evaluators.{label}.config.spec.scorer"
            scorer = resolve_scorer(config.spec.scorer, config.spec.match, where=where)
            scorers[label] = scorer.code.model_dump(mode="json")
    identity = adapter_identity(cfg.model)
    return {"scorers": scorers, "model_adapter": identity.model_dump(mode="json")}


def preflight(cfg: ExperimentConfig) -> str | None:
    """Check everything knowable from ``cfg`` before any model call (see module doc);
    the sampling's note (a count above the suite's size, every task runs) for the
    caller to show, or None."""
    check_objectives(cfg)
    source = load_source(cfg)
    task_count = len(source.suite.tasks)
    record_assignment(source.suite, cfg.sampling.sample(task_count), seed=cfg.job_seeds[0])
    note = cfg.sampling.note(source.suite.name, task_count)
    check_cost_config(cfg, task_count)  # dollar budgets, before a model is even built
    model = build_model(cfg.model, seed=cfg.job_seeds[0])
    model_adapter_identity(model)
    _close(model)
    for label in sorted(cfg.evaluators):
        evaluator, spec = configured_evaluation(cfg, source, label)
        try:
            bind_evaluation(evaluator, spec)
        finally:
            _close(getattr(evaluator, "judge_model", None))
    return note


def _close(model: Any) -> None:
    close = getattr(model, "aclose", None)
    if close is not None and inspect.iscoroutinefunction(close):
        asyncio.run(close())
