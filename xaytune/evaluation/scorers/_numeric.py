"""``numeric``: the answer and the reference as numbers, equal within a tolerance.

Both are read the same way: surrounding whitespace stripped, then an optional sign,
digits (thousands commas allowed only as whole groups of three: ``1,000`` but not
``1,5``), an optional fraction and an optional exponent; commas dropped, parsed as a
``Decimal``. Anything else (``$5``, ``50%``, ``five``, ``NaN``, ``inf``, a magnitude
beyond 1e±1000) is not a number. Success when ``|a - r| <= max(abs_tol, rel_tol *
|r|)``, computed exactly in decimal: the tolerances are read as the decimals they are
written as (``0.1`` is one tenth, not the nearest double). With both tolerances 0
this is numeric equality: ``1e3``, ``1,000`` and ``1000.0`` all equal ``1000``.

An answer that is not a number fails with reason ``not-a-number``; a reference that
is not a number is an error (the evaluation refuses, ``scorer-failed``).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext
from typing import Annotated

from pydantic import Field

from xaytune.evaluation.scorers._score import Score
from xaytune.plugins import scorer

__all__ = ["numeric", "parse_number"]

_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][+-]?\d+)?")
_DIGIT = re.compile(r"\d")
_MAX_MAGNITUDE = 1000  # |adjusted exponent|: beyond it a number is not read


def parse_number(text: str) -> Decimal | None:
    """``text`` as a number (see the module docstring), or None."""
    text = text.strip()
    if not _DIGIT.search(text) or _NUMBER.fullmatch(text) is None:
        return None
    try:
        number = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    if not number.is_finite() or abs(number.adjusted()) > _MAX_MAGNITUDE:
        return None
    return number


def _digits(number: Decimal) -> int:
    return len(number.as_tuple().digits)


@scorer(name="numeric")
def numeric(
    answer: str,
    reference: str,
    *,
    abs_tol: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0,
    rel_tol: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0,
) -> Score:
    """Success when the answer is within ``max(abs_tol, rel_tol * |reference|)``."""
    wanted = parse_number(reference)
    if wanted is None:
        raise ValueError("the reference is not a number")
    given = parse_number(answer)
    if given is None:
        return Score(success=False, reason="not-a-number")
    absolute, relative = Decimal(repr(abs_tol)), Decimal(repr(rel_tol))
    numbers = (given, wanted, absolute, relative)
    with localcontext() as context:
        # Enough digits that the difference and the product are exact (no rounding
        # can move a value across the tolerance).
        span = max(n.adjusted() for n in numbers) - min(n.as_tuple().exponent for n in numbers)
        context.prec = span + sum(_digits(n) for n in numbers) + 4  # type: ignore[operator]
        return Score(success=abs(given - wanted) <= max(absolute, relative * abs(wanted)))
