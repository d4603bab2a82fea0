"""How ``python -m xaytune`` stops: SIGTERM exactly as Ctrl-C, exit 143.

A run stopped by ``timeout``, SLURM or ``kill`` seals its in-flight attempts partial and
prints the resume command, as Ctrl-C does; the task function asks :func:`terminated` to
tell the two apart (exit 143 instead of 130).
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["install_stop_handlers", "terminated"]

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


def install_stop_handlers() -> None:
    """SIGTERM stops the run as Ctrl-C does; SIGINT gets Python's handler back when the
    process started with it ignored."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started as `cmd &` by a non-interactive shell, SIGINT is ignored from the start;
        # restore Python's handler so SIGINT (and SIGTERM, re-sent as SIGINT) still stop
        # the run (asyncio only installs its own over the default handler).
        signal.signal(signal.SIGINT, signal.default_int_handler)
