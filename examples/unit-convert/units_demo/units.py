"""The units the example knows, and the question grammar its tasks use.

Lengths are in metres, masses in grams (exact definitions: 1 in = 2.54 cm,
1 lb = 453.59237 g). A question is ``Convert <number> <unit> to <unit>.`` or
``How many <unit> are in <number> <unit>?``.
"""

from __future__ import annotations

import re

__all__ = ["FACTORS", "parse_question"]

# unit -> (dimension, size in the dimension's base unit)
FACTORS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "mg": ("mass", 0.001),
    "g": ("mass", 1.0),
    "kg": ("mass", 1000.0),
    "oz": ("mass", 28.349523125),
    "lb": ("mass", 453.59237),
}

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_UNIT = r"([A-Za-z]+)"
_CONVERT = re.compile(rf"Convert {_NUMBER} {_UNIT} to {_UNIT}\.?")
_HOW_MANY = re.compile(rf"How many {_UNIT} are in {_NUMBER} {_UNIT}\??")


def parse_question(text: str) -> tuple[float, str, str] | None:
    """``(value, from_unit, to_unit)`` of a question in the task grammar, else None."""
    text = text.strip()
    found = _CONVERT.fullmatch(text)
    if found is not None:
        return float(found[1]), found[2], found[3]
    found = _HOW_MANY.fullmatch(text)
    if found is not None:
        return float(found[2]), found[3], found[1]
    return None
