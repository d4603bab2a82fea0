"""SQuAD v1.1 text scorers: ``normalized-text`` and ``f1``.

SQuAD normalisation (the official evaluation script's ``normalize_answer``, in its
order): lower case; remove ASCII punctuation (``string.punctuation``); remove the
words ``a``, ``an``, ``the``; collapse whitespace to single spaces and strip.

* ``normalized-text``: success when the normalised answer equals the normalised
  reference.
* ``f1``: the SQuAD token F1 between the normalised answer's and reference's
  whitespace tokens (as multisets): with ``s`` shared tokens, ``p`` answer tokens
  and ``r`` reference tokens, F1 = 2s / (p + r) (= 2PR / (P + R)), 0 when nothing is
  shared; when either side has no token, F1 is 1 if both have none, else 0 (SQuAD
  v2's rule). Success when F1 >= ``threshold`` (read as the decimal it is written
  as, compared exactly); the reason is ``f1=<value to 6 places>``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from decimal import Decimal
from fractions import Fraction
from typing import Annotated

from pydantic import Field

from xaytune.core.canonical import decimal_string
from xaytune.evaluation.scorers._score import Score
from xaytune.plugins import scorer

__all__ = ["f1", "normalized_text", "squad_normalize", "token_f1"]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def squad_normalize(text: str) -> str:
    """SQuAD's ``normalize_answer``: lower, no punctuation, no articles, one space."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@scorer(name="normalized-text")
def normalized_text(answer: str, reference: str) -> bool:
    """True when both are equal after SQuAD normalisation."""
    return squad_normalize(answer) == squad_normalize(reference)


def token_f1(answer: str, reference: str) -> Fraction:
    """The SQuAD token F1 of ``answer`` against ``reference``, exactly."""
    given, wanted = squad_normalize(answer).split(), squad_normalize(reference).split()
    if not given or not wanted:
        return Fraction(int(given == wanted))
    shared = sum((Counter(given) & Counter(wanted)).values())
    return Fraction(2 * shared, len(given) + len(wanted))


@scorer(name="f1")
def f1(
    answer: str,
    reference: str,
    *,
    threshold: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.5,
) -> Score:
    """Success when the token F1 is at least ``threshold``."""
    value = token_f1(answer, reference)
    success = value >= Fraction(Decimal(repr(threshold)))
    written = decimal_string(Decimal(value.numerator) / value.denominator, places=6)
    return Score(success=success, reason=f"f1={written}")
