"""Generator of the built-in ``arith-tools`` benchmark, and its question grammar.

Every draw comes from sha256 over (seed, task index, purpose), never from a library
RNG stream, so the suite is the same on every machine and Python version.

Questions use one fixed, parsable grammar of two kinds:

* arithmetic: ``Start with 17. Add 25. Subtract 38. Multiply by 4. Divide by 2.
  What is the result?`` (steps ``Add N``, ``Subtract N``, ``Multiply by N``,
  ``Divide by N``);
* conversion: ``Convert 2 days, 5 hours and 10 minutes to minutes.`` (quantities in
  descending units of one ladder: time, length, mass or volume) or ``Convert 7200
  seconds to hours.`` (one quantity to a larger unit).

A question is a chain of steps on an accumulator. Every intermediate result is a
non-negative integer (a division always divides exactly), and the number of
operations (steps after the start) is 1..6.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from itertools import combinations
from typing import Any, NamedTuple

from xaytune.core.domain.arithmetic import (
    LADDERS,
    OP_WORDS,
    Ladder,
    Step,
    apply_step,
    evaluate_steps,
    parse_question,
)
from xaytune.core.errors import SuiteError

__all__ = ["generate_arith_tools"]

_MAX_VALUE = 50_000  # arithmetic accumulators stay moderate
_GENERATOR_TAG = "xaytune.arith-tools/v1"


# ---------------------------------------------------------------- generation
def _draw(seed: int, index: int, purpose: str, n: int) -> int:
    """A uniform integer in ``[0, n)`` from sha256(tag, seed, index, purpose)."""
    digest = hashlib.sha256(f"{_GENERATOR_TAG}|{seed}|{index}|{purpose}".encode()).digest()
    return int.from_bytes(digest, "big") % n


def _arithmetic(seed: int, index: int, operations: int) -> tuple[str, int]:
    value = 2 + _draw(seed, index, "start", 98)
    sentences = [f"Start with {value}."]
    for k in range(1, operations + 1):
        divisors = [d for d in range(2, 13) if value % d == 0 and value >= d]
        choices = [("+", list(range(2, 100)))]
        if value >= 2:
            choices.append(("-", list(range(1, min(value - 1, 99) + 1))))
        if value >= 1 and value * 2 <= _MAX_VALUE:
            choices.append(("*", list(range(2, min(12, _MAX_VALUE // value) + 1))))
        if divisors:
            choices.append(("/", divisors))
        op, operands = choices[_draw(seed, index, f"op-{k}", len(choices))]
        operand = operands[_draw(seed, index, f"operand-{k}", len(operands))]
        value = apply_step(value, Step(op, operand))
        sentences.append(f"{OP_WORDS[op]} {operand}.")
    sentences.append("What is the result?")
    return " ".join(sentences), value


class _Shape(NamedTuple):
    ladder: int
    start: int  # unit position of the first quantity (up) or of the target (down)
    goal: int  # unit position of the target (up) or of the quantity (down)
    addends: tuple[int, ...]  # unit positions of further quantities (up only)
    upward: bool  # to a smaller unit (multiply) or to a larger one (divide)


@lru_cache(maxsize=8)
def _shapes(operations: int) -> tuple[_Shape, ...]:
    """Every conversion shape with exactly ``operations`` steps, in a fixed order."""
    shapes: list[_Shape] = []
    for ladder_no, ladder in enumerate(LADDERS):
        size = len(ladder.units)
        for start in range(size):
            for goal in range(start + 1, size):
                rungs = goal - start
                if rungs == operations:
                    shapes.append(_Shape(ladder_no, start, goal, (), False))
                extra = operations - rungs
                if 0 <= extra <= rungs:
                    for addends in combinations(range(start + 1, goal + 1), extra):
                        shapes.append(_Shape(ladder_no, start, goal, addends, True))
    return tuple(shapes)


def _quantity(number: int, ladder: Ladder, position: int) -> str:
    singular, plural = ladder.units[position]
    return f"{number} {singular if number == 1 else plural}"


def _conversion(seed: int, index: int, operations: int) -> tuple[str, int]:
    shapes = _shapes(operations)
    shape = shapes[_draw(seed, index, "shape", len(shapes))]
    ladder = LADDERS[shape.ladder]
    target = ladder.units[shape.start if not shape.upward else shape.goal][1]
    if not shape.upward:
        factor = 1
        for rung in range(shape.start, shape.goal):
            factor *= ladder.factors[rung]
        count = 1 + _draw(seed, index, "count", 9)
        amount = f"{count * factor} {ladder.units[shape.goal][1]}"
        return f"Convert {amount} to {target}.", count
    quantities = [_quantity(1 + _draw(seed, index, "lead", 9), ladder, shape.start)]
    for position in shape.addends:
        limit = ladder.factors[position - 1] - 1
        number = 1 + _draw(seed, index, f"part-{position}", limit)
        quantities.append(_quantity(number, ladder, position))
    listed = (
        quantities[0]
        if len(quantities) == 1
        else (", ".join(quantities[:-1]) + " and " + quantities[-1])
    )
    question = f"Convert {listed} to {target}."
    return question, evaluate_steps(parse_question(question))


def generate_arith_tools(
    *, count: int = 240, seed: int = 20261202
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``arith-tools`` tasks and their held-out references, deterministically.

    Task ``i`` (0-based) has ``i % 6 + 1`` operations, so difficulty is spread evenly;
    within each operation count, three in ten tasks are unit conversions and the rest
    multi-step arithmetic. Answers are non-negative integers as decimal strings.
    """
    if not 1 <= count <= 9999:
        raise SuiteError("bad-count", f"arith-tools count {count} is outside 1..9999")
    tasks: list[dict[str, Any]] = []
    references: list[dict[str, Any]] = []
    for index in range(count):
        operations = index % 6 + 1
        kind = "conversion" if (index // 6) % 10 < 3 else "arithmetic"
        make = _conversion if kind == "conversion" else _arithmetic
        question, answer = make(seed, index, operations)
        task_id = f"arith-{index + 1:04d}"
        tasks.append(
            {
                "id": task_id,
                "input": {"question": question},
                "attachments": [],
                "metadata": {"kind": kind, "operations": operations},
            }
        )
        references.append({"id": task_id, "answer": str(answer)})
    return tasks, references
