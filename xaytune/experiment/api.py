"""``xaytune.run(config)``: run an experiment from a dict, without Hydra.

``config`` holds the keys of the composed Hydra config, resolved (``python -m xaytune
+experiment=quickstart --cfg job --resolve`` prints them; the schema is
:func:`xaytune.experiment.config.validate_config`): the CLI resolves interpolations
(app/main.py), the API takes plain values and never loads Hydra or OmegaConf. A run
writes the tree the CLI writes (intent, manifest, candidates, comparison, reports)
except Hydra's own ``.hydra/`` and ``main.log``, and returns an
:class:`~xaytune.experiment.results.ExperimentResult` with the exit code
``python -m xaytune`` would use for the same config.

Two steps, which the CLI takes too: :func:`check` validates everything knowable
(schema, parts, prices, cost bound, endpoints) and runs nothing; :func:`execute` runs
a checked experiment into its tree. Refusals raise the typed
:class:`~xaytune.core.errors.XaytuneError` with their reason word; nothing here prints
or exits. An interruption (KeyboardInterrupt) leaves in-flight attempts sealed partial
and propagates; ``resume=<tree>`` continues it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xaytune.core.errors import ConfigError
from xaytune.experiment.results import (
    ExperimentResult,
    ReplicateWatcher,
    RunComparison,
    RunObserver,
    SilentObserver,
)

if TYPE_CHECKING:
    from xaytune.experiment.config import ExperimentConfig

__all__ = ["CheckedExperiment", "check", "execute", "gather_sweep", "resolve_config", "run"]

# The CLI's run directory (conf/config.yaml hydra.run.dir), relative to the working
# directory: experiments/<experiment.name>/<timestamp>.
OUTPUT_ROOT = Path("experiments")
_TIMESTAMP = "%Y-%m-%d_%H-%M-%S"


def _interpolation(value: Any, key: str) -> str | None:
    """The key of the first value that is an OmegaConf interpolation (``${...}``, the
    whole string: a prompt may hold ``${`` as text), or None."""
    if isinstance(value, str):
        return key if value.startswith("${") and value.endswith("}") else None
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for name, item in items:
        found = _interpolation(item, f"{key}.{name}" if key else str(name))
        if found is not None:
            return found
    return None


def resolve_config(
    config: Mapping[str, Any] | ExperimentConfig,
) -> tuple[ExperimentConfig, dict[str, Any]]:
    """Validate ``config`` (a dict of plain values, or an
    :class:`~xaytune.experiment.config.ExperimentConfig`, taken as its JSON dump, which
    validates to an equal config): the experiment (candidates resolved to harnesses) and
    the plain dict the manifest records. A one-line ConfigError naming the key
    (``bad-config``, or the schema's reason words); an OmegaConf interpolation left in
    a value is refused (``bad-config``): the CLI resolves them, the API takes values."""
    from xaytune.experiment.config import ExperimentConfig, validate_config
    from xaytune.experiment.parts import resolve_candidates

    if isinstance(config, ExperimentConfig):
        plain = config.model_dump(mode="json", by_alias=True)
    elif isinstance(config, Mapping):
        plain = copy.deepcopy({str(k): v for k, v in config.items() if k != "hydra"})
    else:
        raise ConfigError("bad-config", f"config: a mapping, not {type(config).__name__}")
    found = _interpolation(plain, "")
    if found is not None:
        raise ConfigError(
            "bad-config",
            f"{found}: an interpolation; xaytune.run takes resolved values "
            "(`--cfg job --resolve` prints a config resolved)",
        )
    return resolve_candidates(validate_config(plain)), plain


@dataclass(frozen=True)
class CheckedExperiment:
    """An experiment :func:`check` accepted: its config, the plain dict the manifest
    records, each model's experiment in a run with several (by label), whether this is
    one job of a sweep, a dry run's lines, and the notes to show before it runs (a
    sampling count above the suite's size: every task runs)."""

    cfg: ExperimentConfig
    plain: dict[str, Any]
    models: dict[str, tuple[ExperimentConfig, dict[str, Any]]] = field(default_factory=dict)
    sweep_job: bool = False
    estimate: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _model_runs(
    plain: dict[str, Any],
    cfg: ExperimentConfig,
    models: Mapping[str, Mapping[str, Any]] | None,
    *,
    sweep_job: bool,
) -> dict[str, tuple[ExperimentConfig, dict[str, Any]]]:
    """Each model's experiment by label: ``models[label]`` when given (the CLI resolves
    each again so interpolations such as the evaluator's prices follow the model), else
    the config with ``model`` set to that model; empty without ``models`` in the config."""
    if not cfg.models:
        return {}
    if sweep_job:
        raise ConfigError(
            "sweep-unsupported", "models: a run with several models runs in one process"
        )
    if models is None:
        models = {
            label: {**plain, "model": plain["models"][label], "models": None}
            for label in cfg.models
        }
    elif set(models) != set(cfg.models):
        raise ConfigError("bad-config", f"models: {sorted(models)} are not {sorted(cfg.models)}")
    return {label: resolve_config(models[label]) for label in cfg.models}


def check(
    config: Mapping[str, Any] | ExperimentConfig,
    *,
    sweep_job: bool = False,
    models: Mapping[str, Mapping[str, Any]] | None = None,
) -> CheckedExperiment:
    """Everything knowable before a model is called: the schema, the parts, the
    objectives and prices, the cost bound (``max_cost_usd``) and, unless this is a dry
    run, that every endpoint answers as configured. Runs nothing and writes nothing.

    ``sweep_job``: ``config`` is one job of a multirun sweep (it needs ``seed``).
    ``models``: with ``models`` in the config, each model's whole experiment by label
    (default: the config with ``model`` set to it)."""
    from xaytune.experiment.cost import check_total_cost, dry_run_lines
    from xaytune.experiment.parts import preflight
    from xaytune.experiment.preflight import forget_served
    from xaytune.experiment.source import load_source

    cfg, plain = resolve_config(config)
    forget_served()  # this run asks every endpoint again, whatever ran in this process
    if sweep_job and cfg.seed is None:
        raise ConfigError("bad-config", "seed: a multirun job needs seed=<s> (sweep seed=...)")
    subs = _model_runs(plain, cfg, models, sweep_job=sweep_job)
    notes = []
    for sub_cfg, _ in subs.values() or ((cfg, plain),):
        note = preflight(sub_cfg)  # nothing is paid for before everything knowable is checked
        if note is not None:
            notes.append(note)
    estimate: tuple[str, ...] = ()
    if subs:
        tasks = len(load_source(cfg).suite.tasks)
        lines = check_total_cost({k: c for k, (c, _) in subs.items()}, tasks)
        if cfg.dry_run:
            estimate = (*lines, "dry run: nothing was run")
    elif cfg.dry_run:
        estimate = tuple(dry_run_lines(cfg, len(load_source(cfg).suite.tasks)))
    if not cfg.dry_run:  # a dry run stays offline; a resume asks again
        from xaytune.experiment.preflight import preflight_endpoints

        configs = [c for c, _ in subs.values()] or [cfg]
        preflight_endpoints(
            [
                *(c.model for c in configs),
                *(e.judge_model for c in configs for e in c.evaluators.values()),
            ]
        )
    return CheckedExperiment(cfg, plain, subs, sweep_job, estimate, tuple(notes))


def execute(
    checked: CheckedExperiment, *, out: Path, observer: RunObserver | None = None
) -> ExperimentResult:
    """Run a checked experiment into ``out`` (made if missing) under the tree's write
    lock: every candidate x seed (this seed, for a sweep's job), then the comparison
    (not for a sweep's job: :func:`gather_sweep` compares at the sweep root). A dry
    run returns its estimate and touches nothing."""
    from xaytune.experiment.jobs import run_job, run_several_models
    from xaytune.experiment.tree.layout import tree_lock

    cfg = checked.cfg
    if cfg.dry_run:
        return ExperimentResult(
            None, 0, estimate=checked.estimate, dry_run=True, notes=checked.notes
        )
    watcher = _Recording(observer or SilentObserver())
    out.mkdir(parents=True, exist_ok=True)
    with tree_lock(out):  # one writer per tree
        if checked.models:
            comparisons, summary = run_several_models(
                cfg, checked.plain, checked.models, out, observer=watcher
            )
            code = max(c.exit_code for c in comparisons)
            return ExperimentResult(
                out,
                code,
                tuple(comparisons),
                summary,
                warnings=tuple(watcher.warnings),
                notes=checked.notes,
            )
        done = run_job(cfg, checked.plain, out, compare=not checked.sweep_job, observer=watcher)
    warnings = tuple(watcher.warnings)
    if not isinstance(done, RunComparison):  # a sweep's job: its replicates, no comparison
        code = 0 if done is None else done.code
        return ExperimentResult(
            out, code, warnings=warnings, model_errors=done, notes=checked.notes
        )
    return ExperimentResult(out, done.exit_code, (done,), warnings=warnings, notes=checked.notes)


def gather_sweep(
    config: Mapping[str, Any], root: Path, *, observer: RunObserver | None = None
) -> ExperimentResult:
    """The comparison of a multirun sweep whose jobs wrote their replicates under
    ``root`` (what the CLI's sweep callback runs once every job ended). A dry sweep
    ran nothing: its result is a dry run's."""
    from xaytune.experiment.jobs import finish
    from xaytune.experiment.source import load_source
    from xaytune.experiment.tree.layout import tree_lock

    cfg, plain = resolve_config(config)
    if cfg.dry_run:
        return ExperimentResult(out=None, exit_code=0, dry_run=True)
    watcher = _Recording(observer or SilentObserver())
    with tree_lock(root):
        done = finish(root, cfg, plain, load_source(cfg), observer=watcher)
    return ExperimentResult(root, done.exit_code, (done,), warnings=tuple(watcher.warnings))


def run(
    config: Mapping[str, Any] | ExperimentConfig,
    *,
    out: Path | str | None = None,
    observer: RunObserver | None = None,
) -> ExperimentResult:
    """Check ``config`` (:func:`check`), then run it (:func:`execute`) into ``out``.

    ``config``: the composed config's keys as a dict (interpolations allowed), or a
    validated :class:`~xaytune.experiment.config.ExperimentConfig` (its dump is what
    the manifest records).

    ``out`` defaults to the CLI's directory, ``experiments/<experiment.name>/<timestamp>``
    under the working directory (``-2``, ``-3``, ... when taken), or the tree
    ``resume`` names. A refused config leaves no directory behind. ``observer``: told of
    progress, warnings and each comparison (:class:`~xaytune.experiment.results.
    RunObserver`); by default nothing is reported and nothing printed."""
    from xaytune.experiment.tree.layout import fresh_dir

    checked = check(config)
    cfg = checked.cfg
    if cfg.dry_run:
        return ExperimentResult(
            None, 0, estimate=checked.estimate, dry_run=True, notes=checked.notes
        )
    if cfg.resume is not None:
        tree = Path(cfg.resume)
        if not (tree / "manifest.json").is_file():
            raise ConfigError(
                "resume-mismatch",
                f"resume={cfg.resume}: not an xaytune run directory (no manifest.json)",
            )
        if out is not None and Path(out).resolve() != tree.resolve():
            raise ConfigError("bad-config", f"out={out}: a resumed run continues resume={tree}")
        target = tree
    elif out is not None:
        target = Path(out)
    else:
        stamp = time.strftime(_TIMESTAMP, time.localtime())
        target = fresh_dir(OUTPUT_ROOT / cfg.experiment.name / stamp)
    return execute(checked, out=target, observer=observer)


class _Recording:
    """Passes every event on to ``observer`` and keeps the warnings for the result."""

    def __init__(self, observer: RunObserver) -> None:
        self.observer = observer
        self.warnings: list[str] = []

    def warning(self, message: str) -> None:
        self.warnings.append(message)
        self.observer.warning(message)

    def replicate(
        self, title: str, *, total: int
    ) -> AbstractContextManager[ReplicateWatcher | None]:
        return self.observer.replicate(title, total=total)

    def model_started(self, label: str) -> None:
        self.observer.model_started(label)

    def compared(self, comparison: RunComparison) -> None:
        if comparison.look_warning:
            self.warnings.append(comparison.look_warning)
        self.observer.compared(comparison)

    def models_compared(self, summary: Mapping[str, Any]) -> None:
        self.observer.models_compared(summary)

    def tree_extended(self, out: Path, config: Mapping[str, Any]) -> None:
        self.observer.tree_extended(out, config)
