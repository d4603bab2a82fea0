"""``regex``: the reference is a regular expression the answer must match.

Python ``re`` syntax. ``mode`` ``fullmatch`` (the default) requires the whole answer
to match; ``search`` any part of it. ``ignore_case`` adds ``re.IGNORECASE``. The
answer is not normalised: write ``\\s*`` into the pattern where whitespace may be.
A reference that is not a valid pattern is an error (the evaluation refuses,
``scorer-failed``), never a 0; the error names where the pattern breaks, not the
pattern (a reference is held out).
"""

from __future__ import annotations

import re
from typing import Literal

from xaytune.plugins import scorer

__all__ = ["regex"]


@scorer(name="regex")
def regex(
    answer: str,
    reference: str,
    *,
    mode: Literal["fullmatch", "search"] = "fullmatch",
    ignore_case: bool = False,
) -> bool:
    """True when ``answer`` matches the pattern ``reference`` (whole, or anywhere)."""
    if mode not in ("fullmatch", "search"):
        raise ValueError(f"mode {mode!r} is not fullmatch or search")
    try:
        pattern = re.compile(reference, re.IGNORECASE if ignore_case else 0)
    except re.error as error:
        raise ValueError(
            f"the reference is not a valid regular expression ({error.msg} at position {error.pos})"
        ) from None
    found = pattern.fullmatch(answer) if mode == "fullmatch" else pattern.search(answer)
    return found is not None
