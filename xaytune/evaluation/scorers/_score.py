"""What a scorer gives back, and the shape of the call the evaluation makes."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

__all__ = ["Score", "Scorer", "ScorerObject"]


class Score(BaseModel):
    """A scorer's verdict on one answer: ``success`` (task_success 1 or 0) and, when
    the scorer says why, a short ``reason`` (``not-a-number``, ``f1=0.5``, ...)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    success: bool
    reason: str | None = None


@runtime_checkable
class Scorer(Protocol):
    """What the evaluation calls, once per attested task with an extracted answer:
    ``scorer(answer, reference) -> bool | Score``.

    A scorer function ``fn(answer, reference, *, <params>)`` is one (its params are
    bound from config first); so is the ``score`` method of a :class:`ScorerObject`.
    """

    def __call__(self, answer: str, reference: str, /) -> bool | Score: ...


@runtime_checkable
class ScorerObject(Protocol):
    """An instance of a class scorer (``cls(*, <params>)``): its ``score`` is the
    :class:`Scorer` the evaluation calls."""

    def score(self, answer: str, reference: str, /) -> bool | Score: ...
