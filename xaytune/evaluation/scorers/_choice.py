"""``choice``: a multiple-choice answer, read as one option letter.

``letters`` (default ``ABCDEFGHIJ``) are the option letters; case never matters.
The answer's letter is read from the answer, surrounding whitespace stripped, when
it has one of these shapes (``B`` stands for any option letter):

* the letter alone, optionally wrapped or closed: ``B``, ``b``, ``(B)``, ``B.``,
  ``B)``, ``B:``, ``(B).``;
* the letter wrapped or closed and followed by whitespace and the option's text:
  ``(B) Paris``, ``B. Paris``, ``B) Paris``, ``B: Paris`` (a bare letter followed by
  text is not read: ``A dog`` is prose);
* either of the above after an answer label: ``Answer: B``, ``answer - (B)``,
  ``The answer is B.``, ``Final answer: B) Paris`` (``the``/``final`` optional,
  ``is`` optional, then an optional ``:``, ``-`` or ``=``).

Anything else (``I think B``, ``B or C``, a letter outside ``letters``) has no
choice: the answer fails with reason ``no-choice``. The reference is the correct
letter itself (surrounding whitespace stripped); a reference that is not one of
``letters`` is an error (the evaluation refuses, ``scorer-failed``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated

from pydantic import Field

from xaytune.evaluation.scorers._score import Score
from xaytune.plugins import scorer

__all__ = ["choice"]

# An answer label: "answer", optionally "the"/"final" before and "is" after, then a
# separator (":", "-" or "=", or whitespace).
_LABEL = r"(?:(?:the\s+)?(?:final\s+)?answer(?:\s+is)?(?:\s*[:=-]\s*|\s+))?"


@lru_cache(maxsize=32)
def _shape(letters: str) -> re.Pattern[str]:
    option = "[" + re.escape(letters) + "]"
    # A wrapped or closed letter may be followed by the option's text; a bare letter
    # must end the answer.
    letter = (
        rf"(?:\((?P<wrapped>{option})\)[.:]?|(?P<closed>{option})[.):])(?:\s+.*)?"
        rf"|(?P<bare>{option})"
    )
    return re.compile(rf"{_LABEL}(?:{letter})", re.IGNORECASE | re.DOTALL | re.ASCII)


@scorer(name="choice")
def choice(
    answer: str,
    reference: str,
    *,
    letters: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z]+$")] = "ABCDEFGHIJ",
) -> Score:
    """Success when the answer's option letter is the reference letter."""
    if not letters or not letters.isascii() or not letters.isalpha():
        raise ValueError(f"letters {letters!r}: one or more ASCII letters")
    wanted = reference.strip().upper()
    if len(wanted) != 1 or wanted not in letters.upper():
        raise ValueError("the reference is not one of the option letters")
    found = _shape(letters).fullmatch(answer.strip())
    if found is None:
        return Score(success=False, reason="no-choice")
    given = found["wrapped"] or found["closed"] or found["bare"]
    return Score(success=given.upper() == wanted)
