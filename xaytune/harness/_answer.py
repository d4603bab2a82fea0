"""Answer extraction: how a harness turns the model's final text into an answer."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["AnswerExtraction", "extract_answer"]

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
# An opening fence: three or more backticks or tildes at the start of a line, then an
# optional info string (``python``); the closing fence is the same characters.
_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})[^\n`]*$")


class AnswerExtraction(BaseModel):
    """The harness's declared rule for reading an answer out of the final text.

    ``full-text``: the whole text, stripped. ``marker``: the rest of the last line
    containing ``marker`` (e.g. ``"ANSWER:"``). ``last-number``: the last number in
    the text. ``regex``: group 1 of the last match of ``pattern``.

    For code: ``verbatim``: the whole text exactly as the model wrote it (None when it
    is blank). ``code``: the body of the last fenced block (a line starting with three
    or more backticks or tildes, any language tag, up to the same fence; an unclosed
    fence runs to the end of the text), each line as written; without a fence, the
    whole text verbatim (a model that answers with bare code). ``full-text`` is left as
    it was (stripping the first line's indentation breaks code): the extraction word
    is in the harness fingerprint, so changing what a word does would give two runs
    with one fingerprint different answers.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["full-text", "verbatim", "code", "marker", "last-number", "regex"] = "marker"
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
    if rule.kind == "verbatim":
        return text if text.strip() else None
    if rule.kind == "code":
        code = _last_fenced_block(text)
        return code if code is not None and code.strip() else None
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


def _last_fenced_block(text: str) -> str | None:
    """The body of the last fenced block of ``text``, or the whole text without one."""
    lines = text.splitlines(keepends=True)
    blocks: list[str] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index].rstrip("\r\n"))
        if opening is None:
            index += 1
            continue
        fence, body = opening["fence"], []
        index += 1
        while index < len(lines):
            line = lines[index].rstrip("\r\n")
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                break
            body.append(lines[index])
            index += 1
        blocks.append("".join(body))
        index += 1  # past the closing fence (or the end)
    return blocks[-1] if blocks else text
