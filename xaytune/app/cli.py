"""``python -m xaytune``: the command line around the Hydra app.

Before Hydra sees the command line, the checks here and in
:mod:`xaytune.app._cli_checks` refuse what Hydra would accept and then fail on (a
``resume=`` that is not a run, a run directory that holds a run, a sweep over anything
but seeds, an option Hydra does not know) with one line and exit 2. Then Hydra composes
the config with its exceptions raised, not printed (:mod:`xaytune.app.composition`):
one that reaches here before the task starts becomes one line by its type
(:mod:`xaytune.app.hydra_errors`), exit 2, like every other configuration error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from xaytune.app._cli_checks import check_arguments, check_output_argument
from xaytune.app.composition import (
    composing,
    composition_finished,
    take_output_error,
)
from xaytune.app.hydra_errors import composition_error_line
from xaytune.app.signals import install_stop_handlers
from xaytune.core.collector import command_collector
from xaytune.core.errors import XaytuneError

if TYPE_CHECKING:
    from xaytune.report.plot_worker import PlotWorker

__all__ = ["run"]


def _resumed_dir(resume: object, *, sweep: bool) -> str:
    """The tree ``resume`` names, refused unless it is a run of ours: a run's
    ``manifest.json``, or a sweep's ``multirun.yaml`` (checked on the command line,
    before Hydra writes a byte into the directory)."""
    path = Path(str(resume))
    marker = "multirun.yaml" if sweep else "manifest.json"
    if not (path / marker).is_file():
        kind = "sweep" if sweep else "run"
        raise ValueError(f"resume={resume}: not an xaytune {kind} directory (no {marker})")
    return str(path)


def _check_resume_argument(argv: list[str]) -> None:
    """Refuse a ``resume=`` that is not a tree of ours, before Hydra writes anything
    into it (its log file, its multirun.yaml): one line, exit 2."""
    values = [arg.split("=", 1)[1] for arg in argv if arg.startswith("resume=")]
    if not values or values[-1] in ("", "null"):
        return
    sweep = "-m" in argv or "--multirun" in argv
    try:
        _resumed_dir(values[-1], sweep=sweep)
    except ValueError as error:
        print(f"error: resume-mismatch: {error}", file=sys.stderr)
        sys.exit(2)


def _check_run_dir_argument(argv: list[str]) -> None:
    """Refuse an explicit ``hydra.run.dir`` that holds anything already (a finished
    tree would be overwritten), before Hydra writes its .hydra/ there."""
    if any(arg.startswith("resume=") and arg not in ("resume=", "resume=null") for arg in argv):
        return
    values = [arg.split("=", 1)[1] for arg in argv if arg.startswith("hydra.run.dir=")]
    if values and "-m" not in argv and "--multirun" not in argv:
        path = Path(values[-1])
        if path.is_dir() and any(path.iterdir()):
            print(
                f"error: run-dir-exists: {path} is not empty; a new run needs a new directory "
                f"(resume={path} continues a run)",
                file=sys.stderr,
            )
            sys.exit(2)


def _sweep_arguments(argv: list[str]) -> list[str]:
    """``argv`` for a multirun: a seed sweep (``seed=1,2,3``) implies ``seeds=[1,2,3]``
    unless seeds are given; a sweep over any other key is refused before anything runs
    (each job must be one complete paired comparison)."""
    if "-m" not in argv and "--multirun" not in argv:
        return argv
    from hydra.core.override_parser.overrides_parser import OverridesParser

    flags = {"-m", "--multirun"}
    overrides = [a for a in argv if not a.startswith("-") and "=" in a and a not in flags]
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception:
        return argv  # Hydra reports its own grammar errors (one line, see run())
    seeds_given = any(o.key_or_group == "seeds" for o in parsed)
    extra: list[str] = []
    for override in parsed:
        if not override.is_sweep_override():
            continue
        if override.key_or_group != "seed":
            print(
                f"error: sweep-unsupported: {override.input_line}: a sweep runs one seed per "
                "job; sweep seeds only (seed=101,102,103) and run other variants as their own "
                "experiments",
                file=sys.stderr,
            )
            sys.exit(2)
        if not seeds_given:
            values = list(override.sweep_iterator())
            extra.append(f"seeds=[{','.join(str(v) for v in values)}]")
    return argv + extra


def _dry_run_argument(argv: list[str]) -> list[str]:
    """``--dry-run`` (which Hydra's own parser would refuse) as the override
    ``dry_run=true``: everything is checked, the dollar estimate printed, nothing run."""
    if "--dry-run" not in argv:
        return argv
    rest = [arg for arg in argv if arg != "--dry-run"]
    # Beside the other overrides: argparse takes the overrides as one run of arguments.
    last = max((i for i, arg in enumerate(rest) if _is_override(arg)), default=len(rest) - 1)
    return [*rest[: last + 1], "dry_run=true", *rest[last + 1 :]]


def _is_override(arg: str) -> bool:
    return not arg.startswith("-") and ("=" in arg or arg.startswith("~"))


def _apply_patches(args: argparse.Namespace) -> None:
    """The Hydra patches this command is faster with (:mod:`xaytune.app._hydra_repository`):
    the shared ConfigStore for help (84 config-group lookups), one composition for a
    run or a sweep. ``--cfg`` and ``--info`` run Hydra as it is."""
    from xaytune.app._hydra_repository import compose_once, share_config_store

    if args.help or args.hydra_help:
        share_config_store()
    elif not (args.cfg or args.info or args.shell_completion):
        compose_once()


# Hydra's options after which nothing is compared or drawn: help, the config printed,
# shell completion, a sweep (each job compares nothing), a dry run.
_NOTHING_DRAWN = frozenset(
    {
        *("-h", "--help", "--hydra-help", "--version", "-c", "--cfg", "-i", "--info"),
        *("-sc", "--shell-completion", "-m", "--multirun", "--dry-run", "dry_run=true"),
    }
)


def _start_worker(argv: list[str]) -> PlotWorker | None:
    """The run's plot worker (:mod:`xaytune.report.plot_worker`), started before Hydra
    is imported and composes (~0.5 s it imports scipy and matplotlib beside them),
    unless the arguments say nothing will be drawn; the task function takes it."""
    if _NOTHING_DRAWN.intersection(argv):
        return None
    from xaytune.report.plot_worker import hand_over, start_plot_worker

    worker = start_plot_worker()
    if worker is not None:
        hand_over(worker)
    return worker


def run() -> None:
    """``python -m xaytune``."""
    with command_collector():  # off while the command imports (resumed by the run)
        worker = _start_worker(sys.argv[1:])
        try:
            _run()
        finally:  # refused before the task function took it, or left by it: ended here
            if worker is not None:
                worker.close()


def _run() -> None:
    argv = _dry_run_argument(sys.argv[1:])
    _check_resume_argument(argv)
    _check_run_dir_argument(argv)
    args = check_arguments(argv)
    check_output_argument(argv)
    argv = _sweep_arguments(argv)
    sys.argv[1:] = argv  # what @hydra.main reads
    try:
        _apply_patches(args)
    except XaytuneError as error:  # another Hydra than the one patched (hydra-unsupported)
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    install_stop_handlers()
    from xaytune.app.main import main

    with composing():
        try:
            main()
        except SystemExit:
            output_error = take_output_error()  # a run or sweep directory not made
            if output_error is not None:
                print(output_error, file=sys.stderr)
                sys.exit(2)
            raise
        except Exception as error:
            if composition_finished():  # the run's own failure, reported by Hydra's rules
                raise
            print(composition_error_line(error, argv), file=sys.stderr)
            sys.exit(2)
