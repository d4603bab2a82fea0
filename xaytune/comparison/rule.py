"""The per-metric decision of paired-difference/v1 (spec: Comparing two candidates).

Per seed the paired difference d_s of the run values, oriented so a positive value
favours A (:func:`orient`); its mean, standard error and sd, computed exactly and
rounded once for the report (:class:`Rule`); and the verdict with its reason
(:func:`apply_rule`): ``favors-a`` / ``favors-b`` (``exceeds-threshold``) when
``mean(d) > max(min_effect, k·se)`` / ``mean(d) < −max(min_effect, k·se)``, otherwise
``inconclusive`` (``too-few-replicates`` below three seeds, ``no-variance`` with no
spread and ``min_effect`` 0, or ``within-threshold``). A metric that is not an
objective is ``not-compared`` (``not-an-objective``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from xaytune.comparison import stats as stats
from xaytune.comparison.records import MetricSummary, ObjectiveMetric
from xaytune.comparison.report import SeedDifference, Verdict, VerdictReason

__all__ = ["Rule", "apply_rule", "orient"]


@dataclass(frozen=True)
class Rule:
    """One metric's paired differences and their statistics; ``threshold`` is set
    only when an objective was decided on three or more seeds."""

    differences: tuple[SeedDifference, ...] = ()
    mean: float | None = None
    se: float | None = None
    sd: float | None = None
    threshold: float | None = None


def orient(objective: ObjectiveMetric | None) -> Callable[[float, float], float]:
    """Orientation of a paired difference: positive always favours A (works on
    floats and on exact fractions alike)."""
    if objective is not None and objective.direction == "minimize":
        return lambda a, b: b - a
    return lambda a, b: a - b


def apply_rule(
    summary_a: MetricSummary,
    summary_b: MetricSummary,
    objective: ObjectiveMetric | None,
    k: float,
) -> tuple[Rule, Verdict, VerdictReason]:
    """paired-difference/v1 on two present summaries of the same seeds.

    Differences, mean and se are computed exactly from the run values as the records
    hold them (:func:`stats.exact`) and rounded once for the report; the verdict is
    decided on the exact values (:func:`stats.paired_rule`).
    """
    oriented = orient(objective)
    values_b = {run.seed: run.value for run in summary_b.runs}
    rows = [
        (run.seed, a, b, oriented(stats.exact(a), stats.exact(b)))
        for run in sorted(summary_a.runs, key=lambda run: run.seed)
        if (a := run.value) is not None and (b := values_b[run.seed]) is not None
    ]
    exact: list[Fraction] = [difference for *_, difference in rows]
    pairs = tuple(
        SeedDifference(seed=seed, a=a, b=b, difference=float(difference))
        for seed, a, b, difference in rows
    )
    variance = stats.exact_variance_of_mean(exact)
    mean = float(stats.exact_mean(exact))
    se = math.sqrt(float(variance)) if variance is not None else None
    sd = math.sqrt(float(variance * len(exact))) if variance is not None else None
    if objective is None:
        return Rule(pairs, mean, se, sd), "not-compared", "not-an-objective"
    if se is None or len(exact) < 3:
        return Rule(pairs, mean, se, sd), "inconclusive", "too-few-replicates"
    rule = Rule(pairs, mean, se, sd, threshold=max(objective.min_effect, k * se))
    outcome = stats.paired_rule(exact, stats.exact(objective.min_effect), stats.exact(k))
    if outcome == "no-variance":
        return rule, "inconclusive", "no-variance"
    if outcome == "within-threshold":
        return rule, "inconclusive", "within-threshold"
    return rule, outcome, "exceeds-threshold"
