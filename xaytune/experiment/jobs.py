"""Running a checked experiment into its tree: replicates, comparison, several models.

The steps :func:`xaytune.run` takes once everything knowable is checked
(:mod:`xaytune.experiment.api`), and what ``python -m xaytune`` runs through it:

- :func:`run_job`: every candidate x seed of this job into ``out`` (a resumed tree
  keeps what it holds), then, unless this is a sweep's job, :func:`finish`;
- :func:`finish`: compare, write the reports, the look and the final manifest;
- :func:`run_several_models`: every candidate under each model in
  ``out/models/<label>/``, then the summary across models.

Nothing here prints: progress, warnings and comparisons go to the
:class:`~xaytune.experiment.results.RunObserver`.
"""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import ConfigError
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.replicate import ReplicateOutcome
from xaytune.experiment.results import (
    ChallengerComparison,
    ModelErrorGate,
    RunComparison,
    RunObserver,
)

__all__ = ["SubRun", "finish", "run_job", "run_several_models", "sweep_job_gate"]

# A model's experiment in a run with several: its config and its plain (resolved) dict.
SubRun = tuple[ExperimentConfig, dict[str, Any]]

_log = logging.getLogger("xaytune")


def run_job(
    cfg: ExperimentConfig,
    plain: dict[str, Any],
    out: Path,
    *,
    compare: bool,
    observer: RunObserver,
    model: str | None = None,
) -> RunComparison | ModelErrorGate | None:
    """Run this job's replicates into ``out``; with ``compare``, :func:`finish` (the
    comparison), else (a sweep's job) the model-error gate over the replicates this job
    ran (None when it ran none).

    Refuses (``run-dir-exists``) a tree that holds a run unless ``cfg.resume`` names it,
    and whatever :func:`~xaytune.experiment.tree.manifest.check_resume` refuses."""
    from xaytune.experiment.order import candidate_order
    from xaytune.experiment.parts import experiment_toolbox
    from xaytune.experiment.replicate import run_replicate
    from xaytune.experiment.simulator_scope import simulator_scope
    from xaytune.experiment.source import load_source
    from xaytune.experiment.tree.intent import (
        intent_of,
        previous_intents,
        read_intent,
        write_intent,
    )
    from xaytune.experiment.tree.layout import remove_stale_temporaries
    from xaytune.experiment.tree.manifest import check_resume, what_is_run, write_manifest

    source = load_source(cfg)
    scope = simulator_scope(cfg, source)
    if scope is not None and not cfg.resume:
        observer.warning(scope)
    toolbox = experiment_toolbox(cfg)
    # A resumed sweep's job that had not started yet has no manifest: it starts afresh.
    resuming = cfg.resume is not None and (cfg.seed is None or (out / "manifest.json").exists())
    extended: tuple[int, ...] = ()
    if resuming:
        extended = check_resume(out, plain, cfg)
        for path in remove_stale_temporaries(out):  # writes a kill cut short
            _log.info("removed %s (a write a killed run never finished)", path)
    elif (out / "manifest.json").exists():
        raise ConfigError(
            "run-dir-exists", f"{out} holds a run already; only resume={out} continues it"
        )
    out.mkdir(parents=True, exist_ok=True)
    intent = write_intent(
        out, intent_of(cfg, what_is_run(plain), source), resume=resuming, extend=bool(extended)
    )
    if extended:  # the tree now runs under the longer seed list
        observer.tree_extended(out, plain)
    # Seeds run under an earlier intent (before the tree was extended) stay as they are.
    earlier = {
        seed
        for before in previous_intents(read_intent(out)[0]).values()
        for seed in before["seeds"]
    }
    write_manifest(out, cfg, plain, source, final=False)
    fingerprints = {label: h.fingerprint for label, h in cfg.candidates.items()}
    ran = []  # this run's replicates (not those an earlier intent ran)
    for seed in (seed for seed in cfg.job_seeds if seed not in earlier):
        # A seeded permutation per seed (xaytune.experiment.order): a fixed order would hand
        # the within-run drift of time metrics to the same candidate on every seed.
        for label in candidate_order(seed, fingerprints):
            harness = cfg.candidates[label]
            title = f"{harness.name} seed {seed}"
            watching = (
                observer.replicate(title, total=_task_count(cfg, source))
                if cfg.progress
                else nullcontext(None)
            )
            with watching as progress:
                outcome = run_replicate(
                    cfg,
                    label=label,
                    harness=harness,
                    seed=seed,
                    source=source,
                    out=out,
                    toolbox=toolbox,
                    progress=progress,
                    intent=intent,
                )
                if progress is not None and outcome.reused:  # no attempt ran to count
                    progress.reused(
                        tasks=outcome.tasks, errors=outcome.model_errors, tokens=outcome.tokens
                    )
                ran.append(outcome)
    if not compare:
        # A sweep job: its own manifest is complete once its replicates are (with their
        # reports' digests); the sweep root's is written when the sweep ends.
        write_manifest(out, cfg, plain, source, final=True)
        return sweep_job_gate(cfg, ran)
    # finish gates on every replicate's errors (resumed and reused ones too).
    return finish(out, cfg, plain, source, observer=observer, model=model)


def sweep_job_gate(cfg: ExperimentConfig, ran: list[ReplicateOutcome]) -> ModelErrorGate | None:
    """A sweep job's gate, on the replicates it ran (its tree has no comparison, hence
    no errors record): :func:`~xaytune.experiment.attempt_errors.gate_lines`."""
    from xaytune.experiment.attempt_errors import gate_lines

    if not ran:
        return None
    counts = [(r.candidate, r.seed, r.tasks, r.model_errors, tuple(r.error_causes)) for r in ran]
    return ModelErrorGate(*gate_lines(counts, cfg.comparison.max_model_error_share, withheld={}))


def run_several_models(
    cfg: ExperimentConfig,
    plain: dict[str, Any],
    subs: dict[str, SubRun],
    out: Path,
    *,
    observer: RunObserver,
) -> tuple[list[RunComparison], dict[str, Any]]:
    """Every candidate under each model (``models/<label>/``, a run each, resuming the
    ones a resumed tree holds), then the summary across models: each model's
    comparison and comparison/models.json."""
    from xaytune.experiment.models_run import MODELS_DIR, models_summary_files
    from xaytune.experiment.source import load_source
    from xaytune.experiment.tree.gather import COMPARISON_DIR
    from xaytune.experiment.tree.manifest import check_resume, write_manifest
    from xaytune.harness.evidence.store import atomic_write

    if cfg.resume is not None:
        check_resume(out, plain, cfg)
    elif (out / "manifest.json").exists():
        raise ConfigError(
            "run-dir-exists", f"{out} holds a run already; only resume={out} continues it"
        )
    source = load_source(cfg)
    out.mkdir(parents=True, exist_ok=True)
    write_manifest(out, cfg, plain, source, final=False)
    comparisons = []
    for label, (sub_cfg, sub_plain) in subs.items():
        sub_out = out / MODELS_DIR / label
        sub_out.mkdir(parents=True, exist_ok=True)
        if not (sub_out / "manifest.json").exists():  # not started before: a fresh run
            sub_cfg = sub_cfg.model_copy(update={"resume": None})
        observer.model_started(label)
        done = run_job(sub_cfg, sub_plain, sub_out, compare=True, observer=observer, model=label)
        assert isinstance(done, RunComparison)  # compare=True
        comparisons.append(done)
    files = models_summary_files(cfg, out)
    directory = out / COMPARISON_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        atomic_write(directory / name, data)
    summary = json.loads(files["models.json"])
    observer.models_compared(summary)
    write_manifest(out, cfg, plain, source, final=True)
    return comparisons, summary


def finish(
    out: Path,
    cfg: ExperimentConfig,
    plain: dict[str, Any],
    source: SuiteSource,
    *,
    observer: RunObserver,
    model: str | None = None,
) -> RunComparison:
    """Compare every challenger with the baseline from what the tree holds, write the
    reports, record the look and write the final manifest; tell ``observer``."""
    from xaytune.experiment.attempt_errors import ERRORS_FILE, recorded_gate_lines
    from xaytune.experiment.tree.gather import COMPARISON_DIR, write_comparison
    from xaytune.experiment.tree.looks import read_looks, record_look
    from xaytune.experiment.tree.manifest import write_manifest

    written = write_comparison(out, cfg, source, looks=read_looks(out))
    errors = json.loads((out / COMPARISON_DIR / ERRORS_FILE).read_bytes())  # just written
    warning = record_look(
        out,
        "comparison",
        [(label, r) for label, r, _ in written],
        withheld=errors["not_compared"],
    )
    write_manifest(out, cfg, plain, source, final=True)
    summary = None
    if len(written) > 1:
        summary = json.loads((out / COMPARISON_DIR / "summary.json").read_bytes())
    withheld = errors["not_compared"]
    # A challenger that is not compared has no relation to gate on: its run exits 2.
    gated = tuple(
        label
        for label, r, _ in written
        if r.relation in cfg.comparison.fail_on and label not in withheld
    )
    model_errors = ModelErrorGate(*recorded_gate_lines(errors))
    comparison = RunComparison(
        out=out,
        challengers=tuple(ChallengerComparison(label, r, d) for label, r, d in written),
        errors=errors,
        summary=summary,
        look_warning=warning or None,
        gated=gated,
        model_errors=model_errors,
        exit_code=max(model_errors.code, 1 if gated else 0),
        model=model,
    )
    observer.compared(comparison)
    return comparison


def _task_count(cfg: ExperimentConfig, source: SuiteSource) -> int:
    return cfg.sampling.sample(len(source.suite.tasks)).count or len(source.suite.tasks)
