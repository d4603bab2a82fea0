"""Python's cyclic garbage collector while a command starts.

A command imports several hundred modules before it does its work (pydantic builds
~150 model classes), and every few hundred new objects the collector scans the young
ones and, now and then, the whole heap: ~85 ms of the quickstart audit's ~0.9 s of CPU,
~95 ms of the quickstart run's. Nearly all that importing makes lives as long as the
process. A command runs inside :func:`command_collector`: the collector is off from its
start until :func:`resume_collector` (the command's imports are done), which moves every
object it tracks to the permanent generation (:func:`gc.freeze`) and turns it back on, so
later collections scan only what the command's work makes. The command's end resumes it
if nothing did and undoes the freeze (:func:`gc.unfreeze`), so a caller that runs
commands in its own process (the tests) keeps collecting what they leave.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["command_collector", "resume_collector"]

# Whether the collector was on when the command paused it; empty: not paused.
_paused: list[bool] = []


@contextmanager
def command_collector() -> Iterator[None]:
    """The collector paused from here until :func:`resume_collector` (or the end); at the
    end, everything frozen collectable again and the collector as it was."""
    if not _paused:
        _paused.append(gc.isenabled())
        gc.disable()
    try:
        yield
    finally:
        resume_collector()
        gc.unfreeze()


def resume_collector() -> None:
    """The command's imports are done: freeze what the collector tracks and turn it back
    on (if it was on); nothing when it is not paused."""
    if _paused:
        enabled = _paused.pop()
        gc.freeze()
        if enabled:
            gc.enable()
