"""Answer extraction: how a harness turns the model's final text into an answer."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["AnswerExtraction", "extract_answer"]

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")


class AnswerExtraction(BaseModel):
    """The harness's declared rule for reading an answer out of the final text.

    ``full-text``: the whole text, stripped. ``marker``: the rest of the last line
    containing ``marker`` (e.g. ``"ANSWER:"``). ``last-number``: the last number in
    the text. ``regex``: group 1 of the last match of ``pattern``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["full-text", "marker", "last-number", "regex"] = "marker"
    marker: str | None = "ANSWER:"
    pattern: str | None = None

    @model_validator(mode="after")
    def _options_match_kind(self) -> AnswerExtraction:
        if self.kind == "marker" and not self.marker:
            raise ValueError("answer.kind 'marker' needs answer.marker")
        if self.kind == "regex":
            if not self.pattern:
                raise ValueError("answer.kind 'regex' needs answer.pattern")
            try:
                groups = re.compile(self.pattern).groups
            except re.error as error:  # a config mistake: one line, not a traceback
                raise ValueError(f"answer.pattern is not a regular expression ({error})") from None
            if groups < 1:
                raise ValueError("answer.pattern needs one capture group")
        return self


def extract_answer(rule: AnswerExtraction, text: str | None) -> str | None:
    """The answer under ``rule``, or None when the text has none."""
    if not text:
        return None
    if rule.kind == "full-text":
        return text.strip() or None
    if rule.kind == "marker":
        assert rule.marker is not None
        for line in reversed(text.splitlines()):
            index = line.find(rule.marker)
            if index >= 0:
                return line[index + len(rule.marker) :].strip() or None
        return None
    if rule.kind == "last-number":
        numbers = _NUMBER.findall(text)
        return numbers[-1] if numbers else None
    assert rule.pattern is not None
    matches = list(re.finditer(rule.pattern, text))
    return matches[-1].group(1).strip() if matches else None
