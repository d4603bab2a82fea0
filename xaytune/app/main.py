"""``python -m xaytune +experiment=...``: the Hydra entry point.

Composes the config, validates it as a whole, runs every candidate x seed (or the
one seed of a multirun job), compares, writes the output tree and prints the table.
Refusals print one line and exit 2; a CI gate (``comparison.fail_on``) exits 1; a
replicate whose model-error share exceeds ``comparison.max_model_error_share`` exits 2
and its candidate is not compared (:mod:`xaytune.experiment.attempt_errors`);
Ctrl-C seals in-flight attempts partial, prints how to resume and exits 130; a model
that stays unreachable (``model-unavailable``) leaves its attempts partial, prints the
same resume command and exits 2. ``--dry-run`` checks everything, prints the dollar
estimate (:mod:`xaytune.experiment.cost`) and exits 0, keeping no run directory.
"""

from __future__ import annotations

import errno
import logging
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from xaytune.app.cli import composition_done, terminated
from xaytune.core.errors import ConfigError, XaytuneError

if TYPE_CHECKING:
    from xaytune.experiment.config import ExperimentConfig

# The modules that run, compare and report (numpy, scipy, rich) are imported when a run
# starts, and the config schema (which pulls in the harness and model modules) when a
# config is validated: --help or --cfg answers without loading them; matplotlib only in
# the plot worker (tests/app/test_app_lazy_imports.py).

__all__ = ["main", "resolve_config", "resume_command"]


def resolve_config(raw: DictConfig) -> tuple[ExperimentConfig, dict[str, Any]]:
    """Resolve interpolations and validate; one-line ConfigError naming the key."""
    if "hydra" in raw:
        # A callback's config still carries the hydra node, which has mandatory values
        # (hydra_help ...) a task never sees: leave it out before resolving.
        raw = OmegaConf.masked_copy(raw, [key for key in raw if key != "hydra"])
    try:
        plain = OmegaConf.to_container(raw, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as error:
        key = getattr(error, "full_key", None) or "config"
        message = str(error).splitlines()[0]
        raise ConfigError("bad-config", f"{key}: {message}") from None
    assert isinstance(plain, dict)
    plain.pop("hydra", None)
    from xaytune.experiment.config import validate_config
    from xaytune.experiment.parts import resolve_candidates

    return resolve_candidates(validate_config(plain)), plain


def _fail(error: XaytuneError) -> None:
    from xaytune.core.limits import clip

    print(f"error: {clip(str(error), 2000)}", file=sys.stderr)
    sys.exit(2)


def _quiet_http_logs() -> None:
    """An endpoint's per-request INFO lines (httpx) drown the progress lines: off
    unless the user configured those loggers (``hydra.job_logging.loggers.httpx``)."""
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def run_job(
    cfg: ExperimentConfig, plain: dict[str, Any], out: Path, *, compare: bool, prose: bool = True
) -> int:
    """Run this job's replicates into ``out``; compare and report when ``compare``
    (with the calibration and power prose when ``prose``: once per run)."""
    from xaytune.app.progress import replicate_progress
    from xaytune.experiment.order import candidate_order
    from xaytune.experiment.parts import experiment_toolbox
    from xaytune.experiment.replicate import load_source, run_replicate
    from xaytune.experiment.tree.intent import (
        intent_of,
        previous_intents,
        read_intent,
        write_intent,
    )
    from xaytune.experiment.tree.layout import remove_stale_temporaries
    from xaytune.experiment.tree.manifest import check_resume, what_is_run, write_manifest

    _quiet_http_logs()
    source = load_source(cfg)
    from xaytune.experiment.simulator_scope import simulator_scope

    scope = simulator_scope(cfg, source)
    if scope is not None and not cfg.resume:
        print(f"warning: {scope}", file=sys.stderr)
    toolbox = experiment_toolbox(cfg)
    # A resumed sweep's job that had not started yet has no manifest: it starts afresh.
    resuming = cfg.resume is not None and (cfg.seed is None or (out / "manifest.json").exists())
    extended: tuple[int, ...] = ()
    if resuming:
        extended = check_resume(out, plain, cfg)
        for path in remove_stale_temporaries(out):  # writes a kill cut short
            logging.getLogger("xaytune").info(
                "removed %s (a write a killed run never finished)", path
            )
    elif (out / "manifest.json").exists():
        raise ConfigError(
            "run-dir-exists", f"{out} holds a run already; only resume={out} continues it"
        )
    intent = write_intent(
        out, intent_of(cfg, what_is_run(plain), source), resume=resuming, extend=bool(extended)
    )
    if extended:
        _record_extended_config(out, plain)
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
            with replicate_progress(
                f"{harness.name} seed {seed}", total=_task_count(cfg, source), enabled=cfg.progress
            ) as progress:
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
        print(f"replicates written under {out}")
        return _model_error_gate(cfg, ran)
    # finish gates on every replicate's errors (resumed and reused ones too).
    return finish(out, cfg, plain, source, prose=prose)


def _model_error_gate(cfg: ExperimentConfig, ran: list) -> int:
    """A sweep job's gate, on the replicates it ran (its tree has no comparison, hence
    no errors record): :func:`~xaytune.experiment.attempt_errors.model_error_gate`."""
    from xaytune.experiment.attempt_errors import model_error_gate

    if not ran:
        return 0
    counts = [(r.candidate, r.seed, r.tasks, r.model_errors, tuple(r.error_causes)) for r in ran]
    return model_error_gate(counts, cfg.comparison.max_model_error_share, withheld={})


def _record_extended_config(out: Path, plain: dict[str, Any]) -> None:
    """A tree extended with seeds now runs under the longer list: its .hydra/config.yaml
    (which a resume otherwise keeps as first written) says so, as the manifest does."""
    from xaytune.harness.evidence.store import atomic_write

    hydra_config = out / ".hydra" / "config.yaml"
    if hydra_config.is_file():
        atomic_write(hydra_config, OmegaConf.to_yaml(OmegaConf.create(plain)).encode())


def _model_runs(
    raw: DictConfig, cfg: ExperimentConfig, *, multirun: bool
) -> dict[str, tuple[ExperimentConfig, dict[str, Any]]]:
    """Each model's experiment (``model`` set to it, resolved again so interpolations
    such as the evaluator's prices follow it), by label; empty without ``models``."""
    if not cfg.models:
        return {}
    if multirun:
        raise ConfigError(
            "sweep-unsupported", "models: a run with several models runs in one process"
        )
    subs = {}
    for label in cfg.models:
        sub = OmegaConf.masked_copy(raw, [key for key in raw if key != "hydra"])
        OmegaConf.set_struct(sub, False)
        sub.model = raw.models[label]
        sub.models = None
        subs[label] = resolve_config(sub)
    return subs


def run_several_models(
    cfg: ExperimentConfig,
    plain: dict[str, Any],
    subs: dict[str, tuple[ExperimentConfig, dict[str, Any]]],
    out: Path,
) -> int:
    """Every candidate under each model (``models/<label>/``, a run each), then the
    summary across models; the worst gate code."""
    from xaytune.experiment.models_run import run_models
    from xaytune.experiment.replicate import load_source
    from xaytune.experiment.tree.manifest import check_resume, write_manifest

    if cfg.resume is not None:
        check_resume(out, plain, cfg)
    elif (out / "manifest.json").exists():
        raise ConfigError(
            "run-dir-exists", f"{out} holds a run already; only resume={out} continues it"
        )
    source = load_source(cfg)
    write_manifest(out, cfg, plain, source, final=False)
    printed = []  # the calibration and power prose is printed once per run

    def job(sub_cfg: ExperimentConfig, sub_plain: dict[str, Any], sub_out: Path) -> int:
        code = run_job(sub_cfg, sub_plain, sub_out, compare=True, prose=not printed)
        printed.append(sub_out)
        return code

    code = run_models(cfg, subs, out, job)
    write_manifest(out, cfg, plain, source, final=True)
    return code


def finish(
    out: Path, cfg: ExperimentConfig, plain: dict[str, Any], source, *, prose: bool = True
) -> int:
    """Compare, write reports and the final manifest, print the tables (the calibration
    and power prose after the first only, when ``prose``); the gate code."""
    import json

    from xaytune.experiment.attempt_errors import ERRORS_FILE, recorded_gate
    from xaytune.experiment.reports import terminal_table
    from xaytune.experiment.summary import print_summary
    from xaytune.experiment.tree.gather import write_comparison
    from xaytune.experiment.tree.looks import read_looks, record_look
    from xaytune.experiment.tree.manifest import write_manifest
    from xaytune.report import cause_lines, set_plot_drawer

    if _plot_workers:  # matplotlib was imported there while the replicates ran
        set_plot_drawer(_plot_workers[0].draw)
    written = write_comparison(out, cfg, source, looks=read_looks(out))
    errors = json.loads((out / "comparison" / ERRORS_FILE).read_bytes())  # just written
    warning = record_look(
        out,
        "comparison",
        [(label, r) for label, r, _ in written],
        withheld=errors["not_compared"],
    )
    write_manifest(out, cfg, plain, source, final=True)
    for i, (_, report, directory) in enumerate(written):
        terminal_table(report.released(), prose=prose and i == 0, errors=errors)
        print(f"report: {directory / 'report.md'} (html: {directory / 'report.html'})")
    if warning:
        print(f"warning: {warning} (looks: {out / 'looks.md'})", file=sys.stderr)
    if len(written) > 1:
        summary = out / "comparison"
        print_summary(json.loads((summary / "summary.json").read_bytes()), prose=prose)
        print(f"summary: {summary / 'summary.md'} (html: {summary / 'report.html'})")
    for name in (candidate["name"] for candidate in errors["candidates"].values()):
        for line in cause_lines(errors, (name,)):  # one line per cause group, once
            print(line)
    withheld = errors["not_compared"]
    # A challenger that is not compared has no relation to gate on: its run exits 2.
    gated = [
        (label, r)
        for label, r, _ in written
        if r.relation in cfg.comparison.fail_on and label not in withheld
    ]
    for label, report in gated:
        where = "" if len(written) == 1 else f" for challenger {label} ({report.b.name})"
        print(f"gate: relation {report.relation}{where} is in comparison.fail_on", file=sys.stderr)
    return max(recorded_gate(errors), 1 if gated else 0)


# Refusals during a run that a resume can finish (the tree stays as sealed so far).
# A definitive model refusal mid-run (model-auth, ...) stops it the same way.
_RESUMABLE = frozenset({"model-unavailable", "publish-failed"}) | frozenset(
    {"model-auth", "model-unknown", "model-malformed", "usage-missing"}
)


def _resume_hint(out: Path | None) -> str:
    """The command that continues the tree ``out`` with this run's overrides; in a
    sweep, the command that continues the whole sweep (every job, then the summary)."""
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN:
        sweep = Path(hydra_cfg.sweep.dir).absolute()
        return f"resume with: {resume_command(sys.argv[1:], sweep, sweep=True)}"
    return f"resume with: {resume_command(sys.argv[1:], out, sweep=False)}"


# Dropped from a resume command: ``resume=`` names the tree, which also sets the run
# (or sweep) directory; the multirun flag is put first again for a sweep.
_NOT_RESUMED = ("resume=", "hydra.run.dir=", "hydra.sweep.dir=")


def resume_command(argv: list[str], tree: Path | None, *, sweep: bool) -> str:
    """The shell command that continues ``tree``: this run's own arguments ``argv``
    (every Hydra option kept as typed, ``--config-dir X``, ``-cn NAME``, ... so pasting
    it finds the same config) with ``resume=<tree>`` instead of a run directory."""
    kept = [
        arg
        for arg in argv
        if not arg.startswith(_NOT_RESUMED) and arg not in ("-m", "--multirun", "--dry-run")
    ]
    flag = ["-m"] if sweep else []
    return f"python -m xaytune {shlex.join([*flag, *kept, f'resume={tree}'])}"


def _task_count(cfg: ExperimentConfig, source) -> int:
    return cfg.sampling.sample(len(source.suite.tasks)).count or len(source.suite.tasks)


def _discard_unused(directory: Path) -> None:
    """Remove a run directory the refused config never used (only Hydra's own files).

    Hydra creates the output directory before the config is validated; a refused run
    should leave nothing behind. A directory with anything else in it is kept.
    """
    if not directory.is_dir() or (directory / "manifest.json").exists():
        return
    entries = {entry.name for entry in directory.iterdir()}
    if entries <= {".hydra", "main.log"}:
        shutil.rmtree(directory, ignore_errors=True)


def _draw_plots_aside(mode: RunMode | None, *, dry_run: bool) -> None:
    """Start the process that draws this run's plots (xaytune.report.plot_worker): it
    imports matplotlib while the replicates run. Not for a sweep's job or a dry run,
    which draw nothing; ended when this process exits (it holds nothing that must
    finish)."""
    if mode == RunMode.MULTIRUN or dry_run:
        return
    import atexit

    from xaytune.report.plot_worker import start_plot_worker

    worker = start_plot_worker()
    if worker is not None:
        _plot_workers.append(worker)  # handed the plots by finish()
        atexit.register(worker.close)


# This process's plot worker (at most one), started by _draw_plots_aside.
_plot_workers: list = []


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(raw: DictConfig) -> None:
    """Hydra task function."""
    composition_done()
    out: Path | None = None
    hydra_cfg = HydraConfig.get()
    _draw_plots_aside(hydra_cfg.mode, dry_run=raw.get("dry_run") is True)
    try:
        try:
            cfg, plain = resolve_config(raw)
            multirun = hydra_cfg.mode == RunMode.MULTIRUN
            if multirun and cfg.seed is None:
                raise ConfigError(
                    "bad-config", "seed: a multirun job needs seed=<s> (sweep seed=...)"
                )
            from xaytune.experiment.parts import preflight

            subs = _model_runs(raw, cfg, multirun=multirun)
            for sub_cfg, _ in subs.values() or ((cfg, plain),):
                preflight(sub_cfg)  # nothing is paid for before everything knowable is checked
            if subs:
                from xaytune.experiment.cost import check_total_cost
                from xaytune.experiment.replicate import load_source

                tasks = len(load_source(cfg).suite.tasks)
                lines = check_total_cost({k: c for k, (c, _) in subs.items()}, tasks)
                if cfg.dry_run:
                    print("\n".join([*lines, "dry run: nothing was run"]))
            elif cfg.dry_run:
                from xaytune.experiment.cost import dry_run

                dry_run(cfg)  # prints the dollar estimate; nothing runs
            if not cfg.dry_run:  # a dry run stays offline; a resume asks again
                from xaytune.experiment.preflight import preflight_endpoints

                configs = [c for c, _ in subs.values()] or [cfg]
                preflight_endpoints(
                    [
                        *(c.model for c in configs),
                        *(e.judge_model for c in configs for e in c.evaluators.values()),
                    ]
                )
        except XaytuneError:
            _discard_unused(Path(hydra_cfg.runtime.output_dir))
            raise
        if cfg.dry_run:
            _discard_unused(Path(hydra_cfg.runtime.output_dir))
            return
        # A sweep job (resumed or not) runs in its own job directory under the sweep's.
        resumed_run = cfg.resume is not None and not multirun
        out = Path(cfg.resume) if resumed_run else Path(hydra_cfg.runtime.output_dir)
        from xaytune.experiment.tree.layout import tree_lock

        with tree_lock(out):  # one writer per tree
            if subs:
                code = run_several_models(cfg, plain, subs, out)
            else:
                code = run_job(cfg, plain, out, compare=not multirun)
        if not multirun:  # a sweep's job is one part of a tree viewed once the sweep ends
            where = shlex.quote(str(out))
            print(f"view per task: xaytune view {where} (or: python -m xaytune.view {where})")
    except XaytuneError as error:
        if error.reason in _RESUMABLE and out is not None:
            print(f"error: {error}\n{_resume_hint(out)}", file=sys.stderr)
            sys.exit(2)
        _fail(error)
    except OSError as error:  # a full disk, a read-only or vanished output directory
        word = errno.errorcode.get(error.errno or 0, type(error).__name__)
        where = error.filename if error.filename is not None else out
        kept = out is not None and (out / "manifest.json").exists()
        hint = f"\n{_resume_hint(out)}" if kept else ""  # what was sealed stays sealed
        print(f"error: {word}: {where}: {error.strerror or error}{hint}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        stopped = "terminated" if terminated() else "interrupted"
        print(
            f"\n{stopped}: in-flight attempts were sealed partial; nothing attested is lost.\n"
            + _resume_hint(out),
            file=sys.stderr,
        )
        sys.exit(143 if terminated() else 130)
    if code:
        sys.exit(code)
