"""Which tasks each of the viewer's filters keeps, and what the filters are called.

Outcome filters, per seed where every candidate ran the task (the first candidate is
the baseline, every other a challenger), one pair per challenger so that a task is
never listed against a challenger that got it right:

- ``regressions`` / ``improvements`` (one challenger), or ``regressions-<label>`` /
  ``improvements-<label>`` (several): the baseline succeeded and *that* challenger
  failed, or the reverse;
- ``both-wrong``: every candidate failed (called "all wrong" with several
  challengers);
- ``errors`` (an attempt sealed partial, or ended in a model error, a context
  overflow or a cancellation), ``budget-stops``, ``does-not-verify``.

Objective filters, from the published comparison's per-task differences (one pair per
challenger and objective): ``<label>-<metric>-baseline`` keeps the tasks whose
contribution favours the baseline, ``<label>-<metric>-challenger`` the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence

from xaytune.viewer._comparison import ComparisonView

__all__ = ["BASE_FILTERS", "filter_titles", "objective_filters", "outcome_filters"]

# Filters every site has, in the order the pages list them (per-challenger and
# per-objective filters follow).
BASE_FILTERS = ("all", "both-wrong", "errors", "budget-stops", "does-not-verify")


def _pair(kind: str, label: str, several: bool) -> str:
    return f"{kind}-{label}" if several else kind


def outcome_filters(
    labels: Sequence[str], states_by_seed: Sequence[Sequence[str]], flags: set[str]
) -> set[str]:
    """The outcome filters a task is in: ``labels`` the candidates' labels (baseline
    first), ``states_by_seed`` each seed's cell states in that order, ``flags`` the
    attempt-level filters already found (errors, budget-stops, does-not-verify)."""
    found = set(flags)
    several = len(labels) > 2
    for states in states_by_seed:
        if "does-not-verify" in states:
            found.add("does-not-verify")
        baseline, challengers = states[0], states[1:]
        if not challengers or "not-assigned" in states:
            continue
        for label, state in zip(labels[1:], challengers, strict=True):
            if baseline == "success" and state == "failure":
                found.add(_pair("regressions", label, several))
            if baseline == "failure" and state == "success":
                found.add(_pair("improvements", label, several))
        if all(state == "failure" for state in states):
            found.add("both-wrong")
    return found


def filter_titles(
    names: Sequence[tuple[str, str]], comparisons: Sequence[ComparisonView]
) -> dict[str, str]:
    """Every filter of a site, in display order, with its title: ``names`` are the
    candidates' (label, name), baseline first."""
    baseline = names[0][1]
    several = len(names) > 2
    titles = {"all": "all tasks"}
    for label, name in names[1:]:
        titles[_pair("regressions", label, several)] = (
            f"regressions ({baseline} right, {name} wrong)"
        )
        titles[_pair("improvements", label, several)] = (
            f"improvements ({baseline} wrong, {name} right)"
        )
    titles["both-wrong"] = "all wrong" if several else "both wrong"
    titles["errors"] = "errors"
    titles["budget-stops"] = "budget stops"
    titles["does-not-verify"] = "does not verify"
    for comparison in comparisons:
        for objective in comparison.objectives:
            titles[f"{objective.slug}-baseline"] = (
                f"{objective.metric} favours {baseline} over {comparison.name}"
            )
            titles[f"{objective.slug}-challenger"] = (
                f"{objective.metric} favours {comparison.name} over {baseline}"
            )
    return titles


def objective_filters(comparisons: Sequence[ComparisonView]) -> dict[str, frozenset[str]]:
    """Objective filter name -> the task ids it keeps."""
    kept = {}
    for comparison in comparisons:
        for objective in comparison.objectives:
            for side in ("baseline", "challenger"):
                kept[f"{objective.slug}-{side}"] = objective.favouring(side)
    return kept
