"""``includes``: the reference occurs in the answer.

A plain substring test, case-folded unless ``case_sensitive``; no other
normalisation (no stripping, no number reading). An empty reference would occur in
every answer: it is an error (the evaluation refuses, ``scorer-failed``).
"""

from __future__ import annotations

from xaytune.plugins import scorer

__all__ = ["includes"]


@scorer(name="includes")
def includes(answer: str, reference: str, *, case_sensitive: bool = False) -> bool:
    """True when ``reference`` occurs in ``answer``."""
    if not reference:
        raise ValueError("the reference is empty (it would occur in every answer)")
    if not case_sensitive:
        answer, reference = answer.casefold(), reference.casefold()
    return reference in answer
