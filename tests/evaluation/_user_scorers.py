"""User scorers for tests: registered by decorator, or named by dotted path
(``_user_scorers.<name>``: pytest puts this directory on sys.path)."""

from __future__ import annotations

from xaytune.evaluation.scorers import Score
from xaytune.plugins import scorer


@scorer(name="last-word", version="2")
def last_word(answer: str, reference: str, *, case_sensitive: bool = False) -> bool:
    """The answer's last word is the reference."""
    words = answer.split()
    if not words:
        return False
    if case_sensitive:
        return words[-1] == reference
    return words[-1].casefold() == reference.casefold()


def digits_equal(answer: str, reference: str) -> Score:
    """The digits of the answer, in order, are the reference's digits (by dotted path)."""
    given = "".join(ch for ch in answer if ch.isdigit())
    wanted = "".join(ch for ch in reference if ch.isdigit())
    if not given:
        return Score(success=False, reason="no-digits")
    return Score(success=given == wanted)


class WithinPercent:
    """A class scorer: the answer is within ``percent`` % of the reference."""

    def __init__(self, percent: float = 1.0) -> None:
        if percent < 0:
            raise ValueError("percent must not be negative")
        self.percent = percent

    def score(self, answer: str, reference: str) -> bool:
        wanted = float(reference)
        return abs(float(answer) - wanted) <= abs(wanted) * self.percent / 100


class NoScoreMethod:
    """A class that is not a scorer: it has no ``score``."""


def returns_int(answer: str, reference: str) -> int:
    """Returns 1 or 0: not a bool, not a Score."""
    return int(answer == reference)


def raises(answer: str, reference: str) -> bool:
    """Raises on every task."""
    raise RuntimeError("the scorer's own bug")


def takes_one(answer: str) -> bool:
    """Does not take the reference."""
    return bool(answer)


NOT_A_SCORER = 3
