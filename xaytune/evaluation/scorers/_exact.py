"""``exact``: equality after the config's ``match`` normalisation (the v1 rule).

This is the rule ``harness-outcome`` applied before scorers were pluggable, byte for
byte: strip, then case-fold unless case-sensitive, then (``numeric``) a number in
canonical form. Its normalisation is ``spec.match`` of the config, given to the
scorer as its ``match`` parameter.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from xaytune.evaluation.config import MatchRule
from xaytune.plugins import scorer

__all__ = ["exact", "normalise"]

_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][+-]?\d+)?")
_DIGIT = re.compile(r"\d")
# What ``outcome_config()`` writes by default; the evaluator always passes spec.match.
_DEFAULT_MATCH = MatchRule(strip=True, case_sensitive=False, numeric=True)


def _canonical_number(text: str) -> str | None:
    """``"1,000"``, ``"1000.0"``, ``"1e3"`` -> ``"1000"``; None when not a number."""
    if not _DIGIT.search(text) or _NUMBER.fullmatch(text) is None:
        return None
    try:
        number = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    if not number.is_finite() or abs(number.adjusted()) > 1000:
        return None  # not a number we write out digit by digit
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def normalise(text: str, rule: MatchRule) -> str:
    """``text`` under the declared rule: strip, then case-fold unless case-sensitive,
    then (``numeric``) a number in canonical form (thousands commas dropped, trailing
    zeros and exponent removed, -0 is 0). Text that is not a number is left as is."""
    if rule.strip:
        text = text.strip()
    if not rule.case_sensitive:
        text = text.casefold()
    if rule.numeric:
        number = _canonical_number(text.strip())
        if number is not None:
            return number
    return text


@scorer(name="exact")
def exact(answer: str, reference: str, *, match: MatchRule = _DEFAULT_MATCH) -> bool:
    """True when ``answer`` and ``reference`` are equal under ``match``."""
    return normalise(answer, match) == normalise(reference, match)
