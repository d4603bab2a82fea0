"""Progress bars while tasks run: tasks done, errors, tokens."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from xaytune.harness.runner import AttemptResult

__all__ = ["replicate_progress"]


@contextmanager
def replicate_progress(title: str, *, total: int, enabled: bool) -> Iterator[object]:
    """Yield a progress callback for ``run_many`` (a no-op when disabled or not a tty)."""
    if not enabled or not sys.stderr.isatty():
        yield None
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
