"""The refusal stop: a replicate whose tasks could not reach the model is not compared.

When tasks end without an outcome because the model could not be reached, comparing
now would compare holes. :func:`refuse_unfinished` stops the run with the endpoint's
reason word (a definitive refusal: every call is refused alike, a resume after it is
fixed) or ``model-unavailable`` (the endpoint stayed unreachable). The tasks' attempts
are sealed partial, so a resume of the tree runs exactly those tasks again.
"""

from __future__ import annotations

from collections.abc import Sequence

from xaytune.core.errors import ExecutionError
from xaytune.harness import Harness
from xaytune.harness.runner import TaskRun
from xaytune.models import DEFINITIVE_REASONS

__all__ = ["refuse_unfinished"]


def refuse_unfinished(runs: Sequence[TaskRun], harness: Harness, seed: int) -> None:
    """Raise ``ExecutionError`` (the endpoint's definitive reason word, else
    ``model-unavailable``) when any of ``runs`` ended without an outcome because the
    model could not be reached; return quietly otherwise."""
    refused = [
        text
        for text in (
            (run.last.error or "").removeprefix("ModelUnavailable: ")
            for run in runs
            if run.last is not None and run.last.outcome is None
        )
        if text.split(":", 1)[0] in DEFINITIVE_REASONS
    ]
    if refused:  # the endpoint refuses every call alike: a resume after it is fixed
        reason, cause = refused[0].split(": ", 1)
        waiting = sum(run.not_started for run in runs)
        stopped = f", {waiting} not started (the run stopped at the refusal)" if waiting else ""
        raise ExecutionError(
            reason,
            f"{cause}; {len(refused)} of {len(runs)} tasks of {harness.name} seed {seed} "
            f"were refused{stopped}, their attempts are sealed partial, nothing attested "
            "is lost",
        )
    unreachable = [
        run.last.error
        for run in runs
        if run.last is not None
        and run.last.outcome is None
        and (run.last.error or "").startswith("ModelUnavailable")
    ]
    if unreachable:
        first = str(unreachable[0]).removeprefix("ModelUnavailable: ")
        raise ExecutionError(
            "model-unavailable",
            f"{len(unreachable)} of {len(runs)} tasks of {harness.name} seed {seed} could not "
            f"reach the model ({first}); their attempts are sealed partial, nothing attested "
            "is lost",
        )
