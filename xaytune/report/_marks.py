"""The small marks a report page shows: a verdict badge and an honesty note.

Their own module because both the page (:mod:`xaytune.report._page`) and the Errors
section (:mod:`xaytune.report._errors`, which clears a withheld comparison's verdicts
into a "not compared" badge and note) build them, and the page imports the Errors
section.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Badge", "Note"]


@dataclass(frozen=True, slots=True)
class Badge:
    """A verdict or relation: the specification's ``word`` (also the badge's style)
    and ``label``, the word with the favoured side named."""

    word: str
    label: str


@dataclass(frozen=True, slots=True)
class Note:
    """An honesty note: ``kind`` is warning, inconclusive, interval, calibration,
    power or reading (how to read the figures)."""

    kind: str
    title: str
    text: str
