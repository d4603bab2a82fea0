"""What running did: one attempt's result, one task's attempts, and the refusal rule.

An :class:`AttemptResult` is what the runner hands back for one attempt (its seal's
status and outcome, the spend, where it was written); a :class:`TaskRun` is every
attempt of one spec, in order. :func:`refusal_of` names a definitive refusal of the
endpoint (``model-auth``, ...) that ended an attempt without an outcome: every further
call would meet it, so no further attempt or task is started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xaytune.harness._loop_context import ModelUnavailable
from xaytune.harness.evidence.store import Outcome, Spend
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.models.protocol import DEFINITIVE_REASONS

__all__ = ["AttemptResult", "Progress", "TaskRun", "refusal_of"]


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """One attempt's result. ``outcome`` is None for a partial attempt."""

    spec_fingerprint: str
    task_id: str | None
    attempt: int
    status: str
    outcome: Outcome | None
    final_text: str | None
    spend: Spend
    path: Path | None
    seal_digest: str | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TaskRun:
    """What running one spec did: its attempts in order (empty when skipped)."""

    spec: AgentExecutionSpec
    attempts: tuple[AttemptResult, ...]
    skipped: bool = False
    # Never started: an earlier task's endpoint refused definitively (model-auth, ...),
    # which every further call would repeat. No attempt exists, so a resume runs it.
    not_started: bool = False

    @property
    def last(self) -> AttemptResult | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def refused(self) -> bool:
        """Whether its last attempt ended on a definitive refusal of the endpoint."""
        return self.last is not None and refusal_of(self.last) is not None


def refusal_of(result: AttemptResult) -> str | None:
    """The reason word of a definitive endpoint refusal (``model-auth``, ...) that ended
    ``result`` without an outcome, else None: the same refusal awaits every further call."""
    if result.outcome is not None or result.error is None:
        return None
    reason = result.error.removeprefix(f"{ModelUnavailable.__name__}: ").split(":", 1)[0]
    return reason if reason in DEFINITIVE_REASONS else None


# Called with each attempt of a task once its seals are in place (run_many).
Progress = Callable[[AttemptResult], None]
