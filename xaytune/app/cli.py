"""The command line around the Hydra app: Hydra's own composition errors become one line.

Hydra reports a bad override (an unknown group option, a key not in the config) on
several lines and exits 1. Until composition has finished, stderr is held back; if
composition fails, the first lines of Hydra's report are printed as one line and the
exit code is 2, like every other configuration error.
"""

from __future__ import annotations

import io
import os
import re
import signal
import sys
from pathlib import Path

from xaytune.app._cli_checks import (
    check_flags,
    check_output_argument,
    config_groups,
    group_hint,
)
from xaytune.core.ids import is_valid_id
from xaytune.core.limits import clip

__all__ = ["composition_done", "register_resolvers", "run"]

_held: dict[str, object] = {}
_OS_ERRORS = frozenset(
    {
        "OSError",
        "PermissionError",
        "FileNotFoundError",
        "FileExistsError",
        "NotADirectoryError",
        "IsADirectoryError",
    }
)
# A message quotes the user's input: an override of 100 KB is named, not echoed.
_MESSAGE_CHARS = 400


def composition_done(*, replay: bool = True) -> None:
    """Release stderr: composition succeeded (called from the Hydra callbacks).

    What was held back is written out when ``replay``; a failed composition drops it
    and prints its own one line instead.
    """
    real = _held.pop("stderr", None)
    if real is not None:
        buffer = sys.stderr
        sys.stderr = real  # type: ignore[assignment]
        if replay and isinstance(buffer, io.StringIO) and buffer.getvalue():
            real.write(buffer.getvalue())  # type: ignore[attr-defined]


def _exception_of(report: str) -> tuple[str, str] | None:
    """(type, message) of the exception a traceback in ``report`` ends with, or None.

    A config file Hydra cannot parse (a YAML syntax error) reaches us as a traceback:
    its last exception, with the file, line and column, is what the user needs."""
    raw = report.splitlines()
    starts = [i for i, line in enumerate(raw) if line.startswith("Traceback (most recent")]
    if not starts:
        return None
    for i in range(starts[-1] + 1, len(raw)):
        line = raw[i]
        if line and not line[0].isspace():
            kind, _, first = line.partition(": ")
            rest = [
                part.strip()
                for part in raw[i + 1 :]
                if part.strip() and not part.startswith("Set the environment variable HYDRA")
            ]
            return kind, " ".join([first, *rest])[:500]
    return None


_NO_SUCH_KEY = re.compile(r"Could not override '([^']+)'\.")


def _one_line(report: str, argv: list[str]) -> str:
    raw = report.splitlines()
    lines = [
        line.strip()
        for line in raw
        if line.strip() and not line.startswith("Set the environment variable HYDRA_FULL_ERROR")
    ]
    if not lines:
        return "Hydra could not compose the config"
    missing = _NO_SUCH_KEY.match(lines[0])
    if missing is not None and missing[1] in config_groups(argv):
        return group_hint(missing[1], argv)
    if missing is not None:
        # Hydra suggests "+key=value", which only adds a key the schema then refuses:
        # for a misspelt key the fix is the spelling.
        return (
            f"{missing[1]}: no such key (a typo? `python -m xaytune +experiment=... --cfg job` "
            "prints every key)"
        )
    message = "; ".join(lines[:2])
    if lines[1:2] and lines[1].startswith("Available options"):
        # The options follow, one per tab-indented line: they are what the user needs.
        start = raw.index(next(line for line in raw if line.startswith("Available options")))
        options = []
        for line in raw[start + 1 :]:
            if not line.startswith("\t"):
                break
            options.append(line.strip())
        message += " " + ", ".join(options)
    return message


def _path_part(value: object) -> str:
    # An experiment name or sweep seed becomes a directory name before the config is
    # validated (Hydra creates the output dir first): never let "../x" escape the tree.
    # An invalid one gets a placeholder; validation then refuses it with one line.
    text = str(value)
    return text if is_valid_id(text) else "invalid-name"


def _fresh_dir(path: str) -> str:
    """A run's or sweep's own directory (see :func:`xaytune.experiment.tree.layout.fresh_dir`).

    A directory that cannot be made (a read-only or pseudo file system, a file where a
    directory is expected) stops the command with one ``bad-output`` line naming it:
    raised inside OmegaConf's resolver, the OSError would reach the user as Hydra's
    traceback (exit 1)."""
    from xaytune.core.errors import XaytuneError
    from xaytune.experiment.tree.layout import fresh_dir

    try:
        return str(fresh_dir(Path(path)))
    except OSError as error:
        failed = Path(error.filename) if error.filename else Path(path)
        why = error.strerror or type(error).__name__
        _held["output_error"] = (
            f"error: bad-output: {failed.absolute()}: cannot create the output directory "
            f"({why}); give a writable one with hydra.run.dir=<dir>"
        )
    except XaytuneError as error:
        _held["output_error"] = f"error: {error}"
    raise SystemExit(2)  # through OmegaConf and Hydra, which catch Exception only


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


def register_resolvers() -> None:
    """The resolvers conf/config.yaml uses (also needed in multirun worker processes)."""
    from omegaconf import OmegaConf

    # hydra.run.dir: a resumed run continues in its own directory; a new run gets a
    # directory of its own (cached: resolved once per config).
    # hydra.sweep.dir: a sweep directory of its own, made once in the launching process;
    # its jobs (in other processes too) get the resolved value with the config's cache.
    if not OmegaConf.has_resolver("xaytune_fresh_dir"):
        OmegaConf.register_new_resolver("xaytune_fresh_dir", _fresh_dir, use_cache=True)
    if not OmegaConf.has_resolver("xaytune_run_dir"):
        OmegaConf.register_new_resolver(
            "xaytune_run_dir",
            lambda resume, default: resume if resume else _fresh_dir(default),
            use_cache=True,
        )
    if not OmegaConf.has_resolver("xaytune_sweep_dir"):
        OmegaConf.register_new_resolver(
            "xaytune_sweep_dir",
            lambda resume, default: resume if resume else _fresh_dir(default),
            use_cache=True,
        )
    # hydra.output_subdir: a resumed run keeps the tree's .hydra/ (the original run's
    # config) instead of overwriting it, even when the resume is then refused.
    if not OmegaConf.has_resolver("xaytune_unless_resume"):
        OmegaConf.register_new_resolver(
            "xaytune_unless_resume", lambda resume, value: None if resume else value
        )
    if not OmegaConf.has_resolver("xaytune_path_part"):
        OmegaConf.register_new_resolver("xaytune_path_part", _path_part)


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


_TERMINATED: list[bool] = []


def terminated() -> bool:
    """Whether this process was asked to stop by SIGTERM (``timeout``, SLURM, ...)."""
    return bool(_TERMINATED)


def _on_sigterm(signum: int, frame: object) -> None:
    # Stop exactly as Ctrl-C does (in-flight attempts sealed partial, the resume hint),
    # then exit 143: the asyncio runner turns SIGINT into a cancellation of the run, and
    # the runner's watchdog stops code that holds the event loop (never awaits). Read
    # from sys.modules: nothing is imported in a signal handler, and a run that is not
    # under way has no watchdog to tell.
    _TERMINATED.append(True)
    harness = sys.modules.get("xaytune.harness")
    if harness is not None:
        harness.request_stop()
    os.kill(os.getpid(), signal.SIGINT)


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
    return [arg for arg in argv if arg != "--dry-run"] + ["dry_run=true"]


def run() -> None:
    """``python -m xaytune``."""
    from xaytune.app._hydra_repository import compose_once, share_config_store
    from xaytune.app.main import main

    share_config_store()  # --help lists the config groups in ~0.1 s, not ~0.7 s
    compose_once()  # a run composes its config once, not twice

    sys.argv[1:] = _dry_run_argument(sys.argv[1:])
    _check_resume_argument(sys.argv[1:])
    _check_run_dir_argument(sys.argv[1:])
    check_flags(sys.argv[1:])
    check_output_argument(sys.argv[1:])
    sys.argv[1:] = _sweep_arguments(sys.argv[1:])
    signal.signal(signal.SIGTERM, _on_sigterm)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started as `cmd &` by a non-interactive shell, SIGINT is ignored from the start;
        # restore Python's handler so SIGINT (and SIGTERM, re-sent as SIGINT) still stop
        # the run (asyncio only installs its own over the default handler).
        signal.signal(signal.SIGINT, signal.default_int_handler)
    register_resolvers()
    _held["stderr"] = sys.stderr
    sys.stderr = io.StringIO()
    try:
        main()
    except SystemExit as stop:
        output_error = _held.pop("output_error", None)
        if output_error is not None:
            composition_done(replay=False)
            print(output_error, file=sys.stderr)
            sys.exit(2)
        if "stderr" in _held and stop.code not in (0, None):
            report = sys.stderr.getvalue()  # type: ignore[attr-defined]
            composition_done(replay=False)
            exception = _exception_of(report)
            if exception is not None:
                kind, message = exception
                reason = "bad-yaml" if "yaml" in kind.lower() else "bad-override"
                if kind.rsplit(".", 1)[-1] in _OS_ERRORS:  # e.g. hydra.run.dir unusable
                    reason = "bad-output"
                kind = kind.rsplit(".", 1)[-1]
                print(f"error: {reason}: {kind}: {clip(message, _MESSAGE_CHARS)}", file=sys.stderr)
            else:
                line = clip(_one_line(report, sys.argv[1:]), _MESSAGE_CHARS)
                print(f"error: bad-override: {line}", file=sys.stderr)
            sys.exit(2)
        raise
    finally:
        composition_done()


# Registered on import too: a multirun worker process imports this module (through the
# task function) and resolves hydra.sweep.dir itself.
register_resolvers()
