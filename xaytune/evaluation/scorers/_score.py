"""The record a scorer may return instead of a bare bool."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Score"]


class Score(BaseModel):
    """A scorer's verdict on one answer: ``success`` (task_success 1 or 0) and, when
    the scorer says why, a short ``reason`` (``not-a-number``, ``f1=0.5``, ...)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    success: bool
    reason: str | None = None
