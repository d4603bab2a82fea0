"""A user scorer: the answer's number is within ``percent`` % of the reference.

The answer is read as its first number, so ``3000 m`` and ``3000`` both read 3000
(the built-in ``exact`` would refuse the unit). Edge cases: an answer without a
number fails with reason ``not-a-number``; a reference that is not a number raises
(the evaluation refuses it, ``scorer-failed``); a reference of 0 needs an exact 0.
"""

from __future__ import annotations

import re

from xaytune.scorer import Score, scorer

__all__ = ["within_percent"]

_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


@scorer(name="within-percent", version="1")
def within_percent(answer: str, reference: str, *, percent: float = 1.0) -> Score:
    """Success when ``|answer - reference| <= percent / 100 * |reference|``."""
    wanted = float(reference)
    found = _NUMBER.search(answer.replace(",", ""))
    if found is None:
        return Score(success=False, reason="not-a-number")
    given = float(found[0])
    return Score(success=abs(given - wanted) <= percent / 100 * abs(wanted))
