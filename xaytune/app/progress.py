"""Progress while tasks run: bars on a terminal, log lines everywhere else.

On a terminal: a rich progress bar per replicate (tasks done, errors, tokens). Log
records that would go to the terminal while a bar is drawn (the evidence cache's
"reused ...", a warning) are printed above the bar, through the bar's console, never
into it. Without a terminal (CI, a batch job, a pipe): through the
``xaytune.progress`` logger (so users can route it; Hydra's default logging prints
it and keeps it in ``main.log``), one line when a replicate starts, a heartbeat at
most every ``HEARTBEAT_S`` seconds while it runs, and one line when it finishes, with
counts and rates.

A replicate copied from the evidence cache runs no task: it says so ("reused") with
the numbers its evidence holds (:meth:`ReplicateProgress.reused`), never "0/20 tasks".

:class:`TerminalObserver` is the CLI's
:class:`~xaytune.experiment.results.RunObserver`: these bars, the run's warnings on
stderr, and each comparison's tables, report paths, error causes and gate lines.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from xaytune.experiment.results import ModelErrorGate, RunComparison
from xaytune.harness.runner import AttemptResult

__all__ = [
    "HEARTBEAT_S",
    "ReplicateProgress",
    "TerminalObserver",
    "print_gate",
    "replicate_progress",
]

HEARTBEAT_S = 10.0
LOG = logging.getLogger("xaytune.progress")


class ReplicateProgress:
    """One replicate's counts: called with each finished attempt (``run_many``'s
    progress callback), or told once that the replicate was reused."""

    def __init__(self, title: str, total: int) -> None:
        self.title = title
        self.total = total
        self.done = 0
        self.errors = 0
        self.tokens = 0
        self.was_reused = False
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def __call__(self, attempt: AttemptResult) -> None:
        with self.lock:
            self.tokens += attempt.spend.input_tokens + attempt.spend.output_tokens
            failed = attempt.outcome is None or attempt.outcome.terminal == "model-error"
            self.errors += int(failed)
            self.done += int(attempt.outcome is not None)
        self._changed()

    def reused(self, *, tasks: int, errors: int, tokens: int) -> None:
        """The replicate's evidence came from the cache: ``tasks`` attested tasks,
        ``errors`` of them model errors, ``tokens`` spent when it ran."""
        with self.lock:
            self.done, self.errors, self.tokens = tasks, errors, tokens
            self.was_reused = True
        self._changed()

    def _changed(self) -> None:
        """Hook: a bar redraws itself."""

    def line(self, word: str) -> str:
        """The replicate's counts in one line, ``word`` (running, finished) first; a
        reused replicate says "reused" and where its evidence came from."""
        with self.lock:
            elapsed = max(time.monotonic() - self.started, 1e-9)
            if self.was_reused:
                return (
                    f"replicate {self.title}: reused {self.done}/{self.total} tasks from the "
                    f"evidence cache, {self.errors} errors, {self.tokens:,} tokens when run, "
                    f"{elapsed:.1f} s"
                )
            return (
                f"replicate {self.title}: {word} {self.done}/{self.total} tasks, "
                f"{self.errors} errors, {self.tokens:,} tokens, {elapsed:.1f} s "
                f"({self.done / elapsed:.1f} tasks/s)"
            )


class _Bar(ReplicateProgress):
    """A replicate's counts drawn as a rich progress bar."""

    def __init__(self, title: str, total: int, progress) -> None:
        super().__init__(title, total)
        self.progress = progress
        self.task = progress.add_task(title, total=total, errors=0, tokens=0)

    def _changed(self) -> None:
        with self.lock:
            fields = {"errors": self.errors, "tokens": self.tokens}
            description = f"{self.title} (reused)" if self.was_reused else self.title
            done = self.done
        self.progress.update(self.task, completed=done, description=description, **fields)


@contextmanager
def replicate_progress(
    title: str, *, total: int, enabled: bool, console=None
) -> Iterator[ReplicateProgress | None]:
    """Yield the replicate's progress (a callback for ``run_many`` with a ``reused``
    method), or None when disabled. ``console``: the rich console the bar draws on
    (tests pass one that is a terminal); without one, a bar is drawn only when stderr
    is a terminal."""
    if not enabled:
        yield None
        return
    if console is None and not sys.stderr.isatty():
        with _logged(title, total) as counts:
            yield counts
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors {task.fields[errors]}  tokens {task.fields[tokens]:,}"),
        transient=False,
        console=console,
    ) as progress:
        bar = _Bar(title, total, progress)
        with _logs_above(progress.console):
            yield bar


def _terminal_handlers() -> list[logging.StreamHandler]:
    """The handlers that write log records to a terminal (Hydra's console handler):
    on the root logger and every logger created so far."""
    loggers = [logging.getLogger()] + [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    found = []
    for logger in loggers:
        for handler in logger.handlers:
            if not isinstance(handler, logging.StreamHandler) or isinstance(
                handler, logging.FileHandler
            ):
                continue
            isatty = getattr(handler.stream, "isatty", None)
            if isatty is not None and isatty() and handler not in found:
                found.append(handler)
    return found


@contextmanager
def _logs_above(console) -> Iterator[None]:
    """While a bar is drawn, log records bound for the terminal go through the bar's
    console (rich prints them above the bar) instead of into the bar's line."""
    from rich.file_proxy import FileProxy

    swapped = []
    for handler in _terminal_handlers():
        swapped.append((handler, handler.setStream(FileProxy(console, handler.stream))))
    try:
        yield
    finally:
        for handler, stream in swapped:
            proxy = handler.setStream(stream)
            if proxy is not None:
                proxy.flush()  # a record without its newline yet


@contextmanager
def _logged(title: str, total: int) -> Iterator[ReplicateProgress]:
    counts, stop = ReplicateProgress(title, total), threading.Event()
    LOG.info("replicate %s: started, %d tasks", title, total)

    def heartbeat() -> None:
        while not stop.wait(HEARTBEAT_S):
            LOG.info(counts.line("running"))

    beat = threading.Thread(target=heartbeat, name="xaytune-heartbeat", daemon=True)
    beat.start()
    try:
        yield counts
    finally:
        stop.set()
        beat.join()
    LOG.info(counts.line("finished"))


class TerminalObserver:
    """The CLI's run observer: a bar (or log lines) per replicate, warnings on stderr,
    and each comparison printed as it is written (the calibration and power prose
    with the first only: once per run)."""

    def __init__(self) -> None:
        self.printed = 0  # comparisons printed so far

    def warning(self, message: str) -> None:
        print(f"warning: {message}", file=sys.stderr)

    def replicate(
        self, title: str, *, total: int
    ) -> AbstractContextManager[ReplicateProgress | None]:
        return replicate_progress(title, total=total, enabled=True)

    def model_started(self, label: str) -> None:
        print(f"model {label}:")

    def compared(self, comparison: RunComparison) -> None:
        from xaytune.experiment.summary import print_summary
        from xaytune.report import cause_lines, terminal_table

        prose = not self.printed
        self.printed += 1
        errors = dict(comparison.errors)
        challengers = comparison.challengers
        for i, challenger in enumerate(challengers):
            released = challenger.report.released()
            terminal_table(released, prose=prose and i == 0, errors=errors)
            directory = challenger.directory
            print(f"report: {directory / 'report.md'} (html: {directory / 'report.html'})")
        if comparison.look_warning:
            looks = comparison.out / "looks.md"
            print(f"warning: {comparison.look_warning} (looks: {looks})", file=sys.stderr)
        if comparison.summary is not None:
            summary = comparison.out / "comparison"
            print_summary(dict(comparison.summary), prose=prose)
            print(f"summary: {summary / 'summary.md'} (html: {summary / 'report.html'})")
        for name in (candidate["name"] for candidate in errors["candidates"].values()):
            for line in cause_lines(errors, (name,)):  # one line per cause group, once
                print(line)
        by_label = {c.label: c.report for c in challengers}
        for label in comparison.gated:
            report = by_label[label]
            where = "" if len(challengers) == 1 else f" for challenger {label} ({report.b.name})"
            print(
                f"gate: relation {report.relation}{where} is in comparison.fail_on",
                file=sys.stderr,
            )
        print_gate(comparison.model_errors)

    def models_compared(self, summary: Mapping[str, Any]) -> None:
        from xaytune.experiment.models_run import print_models

        print_models(dict(summary))

    def tree_extended(self, out: Path, config: Mapping[str, Any]) -> None:
        """A tree extended with seeds now runs under the longer list: its
        .hydra/config.yaml (which a resume otherwise keeps as first written) says so, as
        the manifest does."""
        from omegaconf import OmegaConf

        from xaytune.harness.evidence.store import atomic_write

        hydra_config = out / ".hydra" / "config.yaml"
        if hydra_config.is_file():
            atomic_write(hydra_config, OmegaConf.to_yaml(OmegaConf.create(dict(config))).encode())


def print_gate(gate: ModelErrorGate) -> None:
    """Every replicate's model-error count on stdout; each replicate over the bound on
    stderr."""
    print(gate.counts)
    for line in gate.over:
        print(line, file=sys.stderr)
