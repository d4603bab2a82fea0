"""``python -m xaytune +experiment=...``: the Hydra entry point.

Hydra composes the config; this task function hands it, as a plain dict, to the
Python API (:mod:`xaytune.experiment.api`: check everything knowable, then run every
candidate x seed, or the one seed of a multirun job, and compare), prints what the
API reports (:class:`~xaytune.app.progress.TerminalObserver`) and maps the outcome
to an exit code. Refusals print one line and exit 2; a CI gate
(``comparison.fail_on``) exits 1; a replicate whose model-error share exceeds
``comparison.max_model_error_share`` exits 2 and its candidate is not compared
(:mod:`xaytune.experiment.attempt_errors`); Ctrl-C seals in-flight attempts partial,
prints how to resume and exits 130; a model that stays unreachable
(``model-unavailable``) leaves its attempts partial, prints the same resume command
and exits 2. ``--dry-run`` checks everything, prints the dollar estimate
(:mod:`xaytune.experiment.cost`) and exits 0, keeping no run directory.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from xaytune.app.composition import composition_done
from xaytune.app.signals import terminated
from xaytune.core.collector import resume_collector
from xaytune.core.errors import ConfigError, XaytuneError

if TYPE_CHECKING:
    from xaytune.experiment.config import ExperimentConfig

# The modules that run, compare and report (numpy, scipy, rich) are imported when a run
# starts, and the config schema (which pulls in the harness and model modules) when a
# config is validated: --help or --cfg answers without loading them; matplotlib only in
# the plot worker (tests/app/test_app_lazy_imports.py).

__all__ = [
    "finish_sweep",
    "main",
    "model_configs",
    "plain_config",
    "resolve_config",
    "resume_command",
    "run_job",
]


def plain_config(raw: DictConfig) -> dict[str, Any]:
    """The composed config as the dict the Python API takes: Hydra's own node left
    out, interpolations resolved; a one-line ConfigError naming the key."""
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
    return {str(key): value for key, value in plain.items()}


def model_configs(raw: DictConfig) -> dict[str, dict[str, Any]] | None:
    """With ``models``: each model's experiment by label (``model`` set to it, resolved
    again so interpolations such as the evaluator's prices follow it); else None."""
    models = raw.get("models")
    if not models:
        return None
    subs = {}
    for label in models:
        sub = OmegaConf.masked_copy(raw, [key for key in raw if key != "hydra"])
        OmegaConf.set_struct(sub, False)
        sub.model = raw.models[label]
        sub.models = None
        subs[str(label)] = plain_config(sub)
    return subs


def resolve_config(raw: DictConfig) -> tuple[ExperimentConfig, dict[str, Any]]:
    """Resolve interpolations and validate; one-line ConfigError naming the key."""
    from xaytune.experiment.api import resolve_config as resolve

    return resolve(plain_config(raw))


def run_job(cfg: ExperimentConfig, plain: dict[str, Any], out: Path, *, compare: bool) -> int:
    """This job's replicates into ``out``, compared and printed when ``compare`` (an
    in-process run of a validated config, without the tree's lock); the exit code."""
    from xaytune.app.progress import TerminalObserver, print_gate
    from xaytune.experiment.jobs import run_job as run
    from xaytune.experiment.results import RunComparison

    done = run(cfg, plain, out, compare=compare, observer=TerminalObserver())
    if isinstance(done, RunComparison):
        return done.exit_code
    print(f"replicates written under {out}")
    if done is None:
        return 0
    print_gate(done)
    return done.code


def finish_sweep(config: DictConfig, root: Path) -> int | None:
    """Compare a multirun sweep at its root and print it (the sweep callback's work);
    the exit code, or None for a dry sweep (nothing ran, nothing to compare)."""
    from xaytune.app.progress import TerminalObserver
    from xaytune.experiment.api import gather_sweep

    done = gather_sweep(plain_config(config), root, observer=TerminalObserver())
    return None if done.dry_run else done.exit_code


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


@contextlib.contextmanager
def _helper_process(mode: RunMode | None, *, dry_run: bool) -> Iterator[None]:
    """While the run goes on, a process that imports scipy and matplotlib beside it
    (xaytune.report.plot_worker) computes its comparison and draws its plots when asked
    (or, gone, this process does). Not for a sweep's job or a dry run, which compare and
    draw nothing; ended with the run (it holds nothing that must finish), so an
    in-process caller of ``main`` is not left with one per run."""
    from xaytune.report.plot_worker import lent, start_plot_worker, take_handed

    started = take_handed()  # by the command line, before Hydra composed (xaytune.app.cli)
    if mode == RunMode.MULTIRUN or dry_run:
        if started is not None:
            started.close()
        yield
        return
    worker = started or start_plot_worker()
    if worker is None:
        yield
        return
    with lent(worker):  # the comparison, pages and plots made there (or, gone, here)
        yield


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(raw: DictConfig) -> None:
    """Hydra task function."""
    composition_done()
    hydra_cfg = HydraConfig.get()
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    with _helper_process(hydra_cfg.mode, dry_run=raw.get("dry_run") is True):
        _run(raw, hydra_cfg, multirun=multirun)


def _run(raw: DictConfig, hydra_cfg: Any, *, multirun: bool) -> None:
    """The task function's work (see :func:`main`)."""
    from xaytune.experiment.api import check, execute

    out: Path | None = None
    try:
        try:
            checked = check(plain_config(raw), sweep_job=multirun, models=model_configs(raw))
        except XaytuneError:
            _discard_unused(Path(hydra_cfg.runtime.output_dir))
            raise
        cfg = checked.cfg
        for note in checked.notes:
            print(note)
        if cfg.dry_run:
            print("\n".join(checked.estimate))
            _discard_unused(Path(hydra_cfg.runtime.output_dir))
            return
        # A sweep job (resumed or not) runs in its own job directory under the sweep's.
        resumed_run = cfg.resume is not None and not multirun
        out = Path(cfg.resume) if resumed_run else Path(hydra_cfg.runtime.output_dir)
        _quiet_http_logs()
        from xaytune.app.progress import TerminalObserver, print_gate

        resume_collector()  # what the run imported stays; its work is collected as usual
        result = execute(checked, out=out, observer=TerminalObserver())
        code = result.exit_code
        if multirun:  # a sweep's job is one part of a tree viewed once the sweep ends
            print(f"replicates written under {out}")
            if result.model_errors is not None:
                print_gate(result.model_errors)
        else:
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
