"""The converter tool: a plain typed function is a tool.

xaytune builds its JSON schema from the signature (pydantic) and offers the
docstring as its description. A ``ValueError`` (an unknown unit, a length converted
to a mass) becomes a tool error the model sees (``error: ValueError: ...``), not a
crash of the attempt.
"""

from __future__ import annotations

from units_demo.units import FACTORS
from xaytune.tool import tool

__all__ = ["convert"]


@tool(version="1")
def convert(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a length (mm, cm, m, km, in, ft, yd, mi) or a mass (mg, g, kg, oz, lb)
    from one unit to another. Returns the converted value and its unit, e.g. "3000 m"."""
    for unit in (from_unit, to_unit):
        if unit not in FACTORS:
            raise ValueError(f"unknown unit {unit!r} (known: {', '.join(FACTORS)})")
    (have, size), (want, target) = FACTORS[from_unit], FACTORS[to_unit]
    if have != want:
        raise ValueError(f"cannot convert a {have} ({from_unit}) to a {want} ({to_unit})")
    return f"{value * size / target:.6g} {to_unit}"
