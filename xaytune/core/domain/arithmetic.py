"""The arith-tools question grammar: parsing a question into steps, and evaluating them.

Shared by the suite's generator (:mod:`xaytune.suites.arith_generator`), which writes
questions in this grammar, and the simulated model (:mod:`xaytune.models.simulated`),
which answers them; neither reaches into the other.

Two kinds of question:

* arithmetic: ``Start with 17. Add 25. Subtract 38. Multiply by 4. Divide by 2.
  What is the result?``;
* conversion: ``Convert 2 days, 5 hours and 10 minutes to minutes.`` (quantities in
  descending units of one ladder: time, length, mass or volume) or ``Convert 7200
  seconds to hours.`` (one quantity to a larger unit).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from xaytune.core.errors import SuiteError

__all__ = [
    "ARITH_OPERATIONS",
    "LADDERS",
    "OP_WORDS",
    "Ladder",
    "Step",
    "apply_step",
    "evaluate_steps",
    "parse_question",
]

ARITH_OPERATIONS = ("+", "-", "*", "/")


class Step(NamedTuple):
    """One step: ``op`` is ``"start"`` (first step only) or one of ``+ - * /``."""

    op: str
    operand: int


# ---------------------------------------------------------------- unit ladders
# Each ladder lists units from largest to smallest; factors[i] converts unit i to i+1.
class Ladder(NamedTuple):
    units: tuple[tuple[str, str], ...]  # (singular, plural)
    factors: tuple[int, ...]


LADDERS: tuple[Ladder, ...] = (
    Ladder(
        (
            ("week", "weeks"),
            ("day", "days"),
            ("hour", "hours"),
            ("minute", "minutes"),
            ("second", "seconds"),
        ),
        (7, 24, 60, 60),
    ),
    Ladder(
        (
            ("kilometre", "kilometres"),
            ("metre", "metres"),
            ("centimetre", "centimetres"),
            ("millimetre", "millimetres"),
        ),
        (1000, 100, 10),
    ),
    Ladder((("tonne", "tonnes"), ("kilogram", "kilograms"), ("gram", "grams")), (1000, 1000)),
    Ladder((("litre", "litres"), ("millilitre", "millilitres")), (1000,)),
)


def _unit_index() -> dict[str, tuple[int, int]]:
    """Every accepted unit word -> (ladder, position); US spellings are accepted too."""
    index: dict[str, tuple[int, int]] = {}
    for ladder_no, ladder in enumerate(LADDERS):
        for position, names in enumerate(ladder.units):
            for name in names:
                index[name] = (ladder_no, position)
                if name.endswith(("tre", "tres")):
                    index[name.replace("tre", "ter")] = (ladder_no, position)
    return index


_UNITS = _unit_index()


# ---------------------------------------------------------------- grammar
_ARITH_RE = re.compile(
    r"Start with (\d+)\.((?:\s+(?:Add|Subtract|Multiply by|Divide by)\s+\d+\.)+)"
    r"\s+What is the result\?"
)
_ARITH_STEP_RE = re.compile(r"(Add|Subtract|Multiply by|Divide by)\s+(\d+)\.")
_ARITH_WORDS = {"Add": "+", "Subtract": "-", "Multiply by": "*", "Divide by": "/"}
OP_WORDS = {op: word for word, op in _ARITH_WORDS.items()}
_CONVERT_RE = re.compile(r"Convert (\d+ [a-z]+(?:(?:, | and )\d+ [a-z]+)*) to ([a-z]+)\.")
_QUANTITY_RE = re.compile(r"(\d+) ([a-z]+)")


def parse_question(question: str) -> list[Step]:
    """The steps of the first arith-tools question found in ``question``.

    The question may be embedded in a longer prompt. Refuses text without a question
    of the grammar, units from different ladders, or units out of order
    (``SuiteError`` reason ``question-unparsable``).
    """
    return list(_parse_cached(question))


@lru_cache(maxsize=4096)
def _parse_cached(question: str) -> tuple[Step, ...]:
    match = _ARITH_RE.search(question)
    if match is not None:
        steps = [Step("start", int(match.group(1)))]
        steps += [Step(_ARITH_WORDS[w], int(n)) for w, n in _ARITH_STEP_RE.findall(match[2])]
        return tuple(steps)
    match = _CONVERT_RE.search(question)
    if match is not None:
        return tuple(_conversion_steps(_QUANTITY_RE.findall(match[1]), match[2]))
    raise SuiteError("question-unparsable", f"no arith-tools question in {question[:80]!r}")


def _conversion_steps(quantities: list[tuple[str, str]], target: str) -> list[Step]:
    def locate(word: str) -> tuple[int, int]:
        if word not in _UNITS:
            raise SuiteError("question-unparsable", f"unknown unit {word!r}")
        return _UNITS[word]

    placed = [(locate(unit), int(number)) for number, unit in quantities]
    ladder_no, goal = locate(target)
    positions = [position for (ladder, position), _ in placed]
    if any(ladder != ladder_no for (ladder, _), _ in placed):
        raise SuiteError(
            "question-unparsable", f"units of different kinds in conversion to {target}"
        )
    if positions != sorted(set(positions)):
        raise SuiteError("question-unparsable", "conversion quantities are not in descending units")
    factors = LADDERS[ladder_no].factors
    start = positions[0]
    steps = [Step("start", placed[0][1])]
    if goal < start:  # to a larger unit: one quantity, divided rung by rung
        if len(placed) != 1:
            raise SuiteError("question-unparsable", f"several quantities converted up to {target}")
        steps += [Step("/", factors[rung]) for rung in range(start - 1, goal - 1, -1)]
        return steps
    if positions[-1] > goal:
        raise SuiteError("question-unparsable", f"a quantity is smaller than the target {target}")
    addends = {position: number for (_, position), number in placed[1:]}
    for position in range(start + 1, goal + 1):
        steps.append(Step("*", factors[position - 1]))
        if position in addends:
            steps.append(Step("+", addends[position]))
    return steps


def apply_step(value: int, step: Step) -> int:
    """``value`` after one non-start step; refuses an inexact division or a negative."""
    op, operand = step
    if op == "+":
        result = value + operand
    elif op == "-":
        result = value - operand
    elif op == "*":
        result = value * operand
    elif op == "/":
        if operand == 0 or value % operand:
            raise SuiteError("arith-inexact", f"{value} / {operand} is not an exact division")
        result = value // operand
    else:
        raise SuiteError("arith-step", f"unknown step operation {op!r}")
    if result < 0:
        raise SuiteError("arith-negative", f"{value} {op} {operand} is negative")
    return result


def evaluate_steps(steps: Sequence[Step]) -> int:
    """The exact result of a step chain (first step ``start``)."""
    if not steps or steps[0].op != "start":
        raise SuiteError("arith-step", "a step chain begins with a start step")
    value = steps[0].operand
    for step in steps[1:]:
        value = apply_step(value, step)
    return value
