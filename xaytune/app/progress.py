"""Progress while tasks run: bars on a terminal, log lines everywhere else.

On a terminal: a rich progress bar per replicate (tasks done, errors, tokens). Without
one (CI, a batch job, a pipe): through the ``xaytune.progress`` logger (so users can
route it; Hydra's default logging prints it and keeps it in ``main.log``), one line
when a replicate starts, a heartbeat at most every ``HEARTBEAT_S`` seconds while it
runs, and one line when it finishes, with counts and rates.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from xaytune.harness.runner import AttemptResult

__all__ = ["HEARTBEAT_S", "replicate_progress"]

HEARTBEAT_S = 10.0
LOG = logging.getLogger("xaytune.progress")


class _Counts:
    """Tasks finished, errors and tokens of one replicate so far."""

    def __init__(self) -> None:
        self.done = 0
        self.errors = 0
        self.tokens = 0
        self.lock = threading.Lock()

    def add(self, attempt: AttemptResult) -> None:
        with self.lock:
            self.tokens += attempt.spend.input_tokens + attempt.spend.output_tokens
            failed = attempt.outcome is None or attempt.outcome.terminal == "model-error"
            self.errors += int(failed)
            self.done += int(attempt.outcome is not None)

    def line(self, title: str, total: int, started: float, word: str) -> str:
        with self.lock:
            elapsed = max(time.monotonic() - started, 1e-9)
            return (
                f"replicate {title}: {word} {self.done}/{total} tasks, {self.errors} errors, "
                f"{self.tokens:,} tokens, {elapsed:.1f} s ({self.done / elapsed:.1f} tasks/s)"
            )


@contextmanager
def replicate_progress(title: str, *, total: int, enabled: bool) -> Iterator[object]:
    """Yield a progress callback for ``run_many`` (None when disabled)."""
    if not enabled:
        yield None
        return
    if not sys.stderr.isatty():
        with _logged(title, total) as advance:
            yield advance
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    counts = {"errors": 0, "tokens": 0}
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors {task.fields[errors]}  tokens {task.fields[tokens]:,}"),
        transient=False,
    ) as progress:
        task = progress.add_task(title, total=total, errors=0, tokens=0)

        def advance(attempt: AttemptResult) -> None:
            counts["tokens"] += attempt.spend.input_tokens + attempt.spend.output_tokens
            failed = attempt.outcome is None or attempt.outcome.terminal == "model-error"
            counts["errors"] += int(failed)
            progress.update(task, advance=1 if attempt.outcome is not None else 0, **counts)

        yield advance


@contextmanager
def _logged(title: str, total: int) -> Iterator[object]:
    counts, started, stop = _Counts(), time.monotonic(), threading.Event()
    LOG.info("replicate %s: started, %d tasks", title, total)

    def heartbeat() -> None:
        while not stop.wait(HEARTBEAT_S):
            LOG.info(counts.line(title, total, started, "running"))

    beat = threading.Thread(target=heartbeat, name="xaytune-heartbeat", daemon=True)
    beat.start()
    try:
        yield counts.add
    finally:
        stop.set()
        beat.join()
    LOG.info(counts.line(title, total, started, "finished"))
