"""Test helper (tests/support is on pytest's pythonpath): run an entry point as a user
would, in a process of its own or in this one.

:func:`spawn` runs ``python -m <module> <args>`` in a subprocess, with ``cwd`` set and
the repository importable: for what only a process shows (signals, the real exit code
of the interpreter, what a fresh interpreter imports, one smoke test per entry point).

:func:`call` runs the same entry point here, with what ``python -m`` would give it:
``sys.argv``, the working directory, ``cwd`` first on ``sys.path`` (a user's parts
module beside the config), the environment the subprocess gets; it returns the same
:class:`Result` (the exit code is ``SystemExit``'s, or 0 when ``main`` returns; an
uncaught exception is a traceback on stderr and exit 1, as the interpreter does). It
costs no interpreter start and no imports (about a second of CPU a run saved), and
everything it changes is put back: the working directory, ``sys.argv``, ``sys.path``,
the environment, the SIGINT/SIGTERM handlers, the logging handlers Hydra installs (its
``main.log`` handler would otherwise keep writing into a finished tree), and the
modules imported from ``cwd`` (the next test's ``userparts.py`` is its own).
``XAYTUNE_TEST_SPAWN=1`` makes :func:`call` spawn, to tell whether a failure comes from
running in-process.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import runpy
import signal
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENTRY_POINTS", "REPO_ROOT", "Result", "call", "cli_env", "run_module", "spawn"]

REPO_ROOT = Path(__file__).resolve().parents[2]

# The entry points ``python -m`` runs, and the function each one's __main__ calls
# (None: run the package's __main__ module itself, whatever it calls).
ENTRY_POINTS: dict[str, tuple[str, str | None]] = {
    "xaytune": ("xaytune", None),
    "xaytune.verify": ("xaytune.verify", "main"),
    "xaytune.compare": ("xaytune.compare", "main"),
    "xaytune.share": ("xaytune.share", "main"),
    "xaytune.sign": ("xaytune.sign", "main"),
    "xaytune.view": ("xaytune.view", "main"),
    "xaytune.suites": ("xaytune.suites.__main__", "main"),
}


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every CLI run gets: the repository importable, Hydra's full
    tracebacks off (they would defeat the one-line error checks), and a terminal wide
    enough that the rich table never wraps the words the tests look for."""
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + existing if existing else "")
    env.pop("HYDRA_FULL_ERROR", None)
    env["COLUMNS"] = "160"
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Result:
    """A finished entry-point run."""

    args: tuple[str, ...]
    cwd: Path
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"python {' '.join(self.args)} (cwd {self.cwd}) -> {self.returncode}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )


def spawn(
    module: str,
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 240,
) -> Result:
    """``python -m <module> <args>`` in ``cwd``, in a subprocess of its own."""
    full = ("-m", module, *args)
    done = subprocess.run(
        [sys.executable, *full],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Result(full, Path(cwd), done.returncode, done.stdout, done.stderr)


def call(
    module: str, args: Sequence[str], cwd: Path, *, env: Mapping[str, str] | None = None
) -> Result:
    """``python -m <module> <args>`` in ``cwd``, run in this process (see the module
    docstring for what is set up and put back)."""
    if module not in ENTRY_POINTS:
        raise ValueError(f"{module}: not an entry point ({', '.join(ENTRY_POINTS)})")
    if os.environ.get("XAYTUNE_TEST_SPAWN") == "1":  # to tell an in-process artefact apart
        return spawn(module, args, cwd, env=env)
    owner, name = ENTRY_POINTS[module]
    out, err = io.StringIO(), io.StringIO()
    with (
        _as_python_m(module, list(args), Path(cwd), cli_env(env)),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = _exit_code(owner, name, list(args))
    return Result(("-m", module, *args), Path(cwd), code, out.getvalue(), err.getvalue())


def run_module(args: Sequence[str], cwd: Path, *, timeout: float = 240) -> Result:
    """``python -m <args>`` in ``cwd``, run in this process (:func:`call`; ``timeout`` is
    pytest-timeout's here). Imported from here, never from ``conftest``: which
    conftest module that name holds depends on the directories pytest was given."""
    module, *rest = args
    return call(module, rest, cwd)


def _exit_code(owner: str, name: str | None, args: list[str]) -> int:
    try:
        if name is None:  # the Hydra app reads sys.argv
            runpy.run_module(owner, run_name="__main__", alter_sys=False)
            return 0
        returned = getattr(importlib.import_module(owner), name)(args)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)  # as the interpreter prints sys.exit("text")
        return 1
    except Exception:  # the interpreter's last resort: a traceback, exit 1
        traceback.print_exc()
        return 1
    return returned if isinstance(returned, int) else 0


@contextlib.contextmanager
def _as_python_m(module: str, args: list[str], cwd: Path, env: dict[str, str]) -> Iterator[None]:
    saved_cwd = os.getcwd()
    saved_argv = sys.argv[:]
    saved_path = sys.path[:]
    saved_env = dict(os.environ)
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    saved_modules = set(sys.modules)
    saved_logging = _logging_state()
    os.chdir(cwd)
    # ``python -m`` puts the working directory first on sys.path (a user's parts module).
    sys.path.insert(0, str(cwd))
    sys.argv = [str(REPO_ROOT / module.replace(".", "/") / "__main__.py"), *args]
    os.environ.clear()
    os.environ.update(env)
    importlib.invalidate_caches()  # a module written this second is found
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        for signum, handler in saved_signals.items():
            signal.signal(signum, handler)
        _restore_logging(saved_logging)
        _forget_modules_under(cwd, saved_modules)


_LoggingState = dict[str, tuple[list[logging.Handler], int, bool, bool]]


def _logging_state() -> _LoggingState:
    loggers: dict[str, logging.Logger] = {"": logging.getLogger()}
    for name, logger in logging.Logger.manager.loggerDict.items():
        if isinstance(logger, logging.Logger):
            loggers[name] = logger
    return {
        name: (logger.handlers[:], logger.level, logger.disabled, logger.propagate)
        for name, logger in loggers.items()
    }


def _restore_logging(saved: _LoggingState) -> None:
    """Loggers that existed before get back their handlers and settings (Hydra's
    dictConfig replaces the root's); a logger first made during the run keeps what its
    library set at import, but loses any file handler (Hydra's ``main.log`` would keep
    writing into a finished tree)."""
    for name, (handlers, _level, _disabled, _propagate) in _logging_state().items():
        logger = logging.getLogger(name or None)
        if name not in saved:
            for handler in handlers:
                if isinstance(handler, logging.FileHandler):
                    logger.removeHandler(handler)
                    handler.close()
            continue
        kept, level, disabled, propagate = saved[name]
        for handler in handlers:
            if handler not in kept:
                logger.removeHandler(handler)
                handler.close()
        logger.handlers[:] = kept
        logger.setLevel(level)
        logger.disabled = disabled
        logger.propagate = propagate


def _forget_modules_under(cwd: Path, before: set[str]) -> None:
    root = os.path.realpath(cwd)
    for name in set(sys.modules) - before:
        where = getattr(sys.modules[name], "__file__", None) or ""
        if where and os.path.realpath(where).startswith(root + os.sep):
            del sys.modules[name]
