"""The composition phase of ``python -m xaytune``: the resolvers conf/config.yaml uses,
and the window in which Hydra raises instead of printing.

Hydra's ``run_and_report`` prints an exception it catches while composing (a bad
override, a missing config option, a YAML syntax error) as several lines and exits 1;
with ``HYDRA_FULL_ERROR=1`` it raises the exception instead (its documented switch).
:func:`composing` sets that switch while Hydra composes, so the CLI receives the
exception itself and turns it into one line by its type
(:mod:`xaytune.app.hydra_errors`); :func:`composition_done` (the task function, or the
sweep's start callback) ends the window, so a failure inside the run is reported as
Hydra always reports it, and no process started by the run inherits the switch.

Importing this module registers the resolvers: a multirun worker process imports the
task function's module, which imports this one, and resolves ``hydra.sweep.dir``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from xaytune.core.ids import is_valid_id

__all__ = [
    "composing",
    "composition_done",
    "composition_finished",
    "register_resolvers",
    "take_output_error",
]

_SWITCH = "HYDRA_FULL_ERROR"
# The value HYDRA_FULL_ERROR had before composing (None: unset), while composing.
_saved: list[str | None] = []
# Set once the composed config reaches the task (or the sweep starts).
_finished: list[bool] = []
# A run directory that could not be made: the line to print (see _fresh_dir).
_output_errors: list[str] = []


@contextmanager
def composing() -> Iterator[None]:
    """Hydra raises what it catches while composing (until :func:`composition_done`)."""
    _finished.clear()
    _output_errors.clear()
    _saved[:] = [os.environ.get(_SWITCH)]
    os.environ[_SWITCH] = "1"
    try:
        yield
    finally:
        _restore()


def composition_done() -> None:
    """Composition succeeded: Hydra reports what fails from here on in its own way."""
    _finished.append(True)
    _restore()


def composition_finished() -> bool:
    """Whether the config reached the task (an exception now is the run's, not a bad
    override's)."""
    return bool(_finished)


def take_output_error() -> str | None:
    """The line for a run or sweep directory that could not be made, once."""
    return _output_errors.pop() if _output_errors else None


def _restore() -> None:
    if not _saved:
        return
    before = _saved.pop()
    if before is None:
        os.environ.pop(_SWITCH, None)
    else:
        os.environ[_SWITCH] = before


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
    raised inside OmegaConf's resolver, the OSError would reach the user wrapped in
    OmegaConf's and Hydra's reports; SystemExit passes through both (they catch
    Exception only) and the CLI prints the line kept here."""
    from xaytune.core.errors import XaytuneError
    from xaytune.experiment.tree.layout import fresh_dir

    try:
        return str(fresh_dir(Path(path)))
    except OSError as error:
        failed = Path(error.filename) if error.filename else Path(path)
        why = error.strerror or type(error).__name__
        _output_errors.append(
            f"error: bad-output: {failed.absolute()}: cannot create the output directory "
            f"({why}); give a writable one with hydra.run.dir=<dir>"
        )
    except XaytuneError as error:
        _output_errors.append(f"error: {error}")
    raise SystemExit(2)


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


register_resolvers()
