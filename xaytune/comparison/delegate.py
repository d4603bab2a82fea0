"""Where a comparison is computed: in this process, or by a delegate another process
offers (xaytune.report.plot_worker: it imported scipy while this process did other work).

:func:`set_compare_delegate` sets ``delegate(a, b, spec, SuiteName)``, which
:func:`xaytune.comparison.compare.compare` asks first; it must return exactly
:func:`~xaytune.comparison.compare.compare_here`'s report, or None when it cannot answer
(its process is gone, or the comparison is refused): the comparison then runs here, and
raises any refusal itself. ``ahead(a, b, spec, SuiteName)``, given with it, starts such a
comparison early (:func:`compare_ahead`: the audit sends a big tree's comparison before
it verifies the attempts); a later ``delegate`` call with the same runs collects it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["SuiteName", "asked_delegate", "compare_ahead", "set_compare_delegate"]


@dataclass(frozen=True)
class SuiteName:
    """What compare() reads of a suite (its name and digest), sent to another process
    without the suite's tasks."""

    name: str
    digest: str


# The comparer another process offers, and how it starts one early; empty: compare here.
_delegate: list[Callable[..., Any]] = []
_ahead: list[Callable[..., None]] = []


def set_compare_delegate(
    delegate: Callable[..., Any] | None, *, ahead: Callable[..., None] | None = None
) -> None:
    """Have compare() ask ``delegate`` first (None: compare in this process again);
    ``ahead``: how :func:`compare_ahead` starts a comparison early (see the module
    docstring)."""
    _delegate.clear()
    _ahead.clear()
    if delegate is not None:
        _delegate.append(delegate)
        if ahead is not None:
            _ahead.append(ahead)


def compare_ahead(a: Any, b: Any, spec: Any, suite: Any) -> None:
    """Start ``compare(a, b, spec, suite)`` now where the delegate computes it, for a
    later compare() of the same runs (the same objects) and spec to collect; nothing
    when no delegate starts comparisons early."""
    if _ahead:
        _ahead[0](a, b, spec, SuiteName(name=suite.name, digest=suite.digest))


def asked_delegate(a: Any, b: Any, spec: Any, suite: Any) -> Any:
    """The delegate's report of the comparison, or None (no delegate, or it cannot
    answer): compare() then computes it here."""
    if not _delegate:
        return None
    return _delegate[0](a, b, spec, SuiteName(name=suite.name, digest=suite.digest))
