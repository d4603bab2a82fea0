"""The words a report says, shared by report.md, report.html and the terminal table.

Numbers are formatted once (:func:`fmt`, :func:`pct`) and every honesty note (the A/A
calibration, power, the re-run asymmetry warning, why a comparison is inconclusive)
is worded once. :class:`Sides` names the two candidates: report.md and the terminal
say "A"/"B" (their bytes are pinned), report.html says the candidates' names.
"""

from __future__ import annotations

from dataclasses import dataclass

from xaytune.core.harness_comparison import ComparisonReport, MetricComparison

__all__ = [
    "INCONCLUSIVE_BECAUSE",
    "VERDICT_WORDS",
    "Sides",
    "aa_cell",
    "calibration_lines",
    "fmt",
    "interval_text",
    "pct",
    "power_cell",
    "power_text",
    "reruns_warning",
    "seed_only_warning",
    "verdict_text",
    "verdict_words",
    "why_inconclusive",
]


@dataclass(frozen=True, slots=True)
class Sides:
    """How a text names the two sides: ``a``/``b`` where a side is meant, ``a_full``/
    ``b_full`` where the text names a side and its candidate (report.md: "A (calculator)")."""

    a: str
    b: str
    a_full: str
    b_full: str

    @classmethod
    def letters(cls, report: ComparisonReport) -> Sides:
        """A and B, as report.md and the terminal table say."""
        return cls("A", "B", f"A ({report.a.name})", f"B ({report.b.name})")

    @classmethod
    def names(cls, report: ComparisonReport) -> Sides:
        """The candidates' names, as report.html says."""
        return cls(report.a.name, report.b.name, report.a.name, report.b.name)


def verdict_words(sides: Sides) -> dict[str, str]:
    """What each relation and verdict word means (spec: paired-difference/v1)."""
    return {
        "favors-a": f"{sides.a} is better on this objective by more than max(min_effect, k·se).",
        "favors-b": f"{sides.b} is better on this objective by more than max(min_effect, k·se).",
        "trade-off": f"Some objectives favour {sides.a} and others favour {sides.b}.",
        "inconclusive": "The evidence does not support a direction (too few seeds, noise, no "
        "spread across seeds with min_effect 0, or a difference not above min_effect).",
        "not-comparable": "A comparability condition (C1–C4) failed; no verdict is given.",
    }


VERDICT_WORDS = verdict_words(Sides("A", "B", "A", "B"))


def fmt(value: float | None, digits: int = 4) -> str:
    """A number as reports print it: 4 significant digits, thousands grouped; — for none."""
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.{digits}g}"


def pct(value: float | None) -> str:
    """A rate as a percentage with one decimal; — for none."""
    return "—" if value is None else f"{value:.1%}"


def interval_text(metric: MetricComparison) -> str:
    """The 95% t-interval of the mean paired difference, or —."""
    interval = metric.descriptive.mean_interval
    return "—" if interval is None else f"[{fmt(interval.low)}, {fmt(interval.high)}]"


def verdict_text(metric: MetricComparison) -> str:
    """The verdict word, with a visible note when the 95% interval contains 0."""
    if metric.verdict in ("favors-a", "favors-b") and metric.descriptive.interval_spans_zero:
        return f"{metric.verdict} (95% interval spans 0)"
    if metric.reason == "no-variance":
        return f"{metric.verdict} (no variance)"
    return metric.verdict


def aa_cell(report: ComparisonReport, metric: MetricComparison) -> str:
    """How often this objective names a side when both sides are the same harness."""
    calibration = report.calibration.objective(metric.metric) if report.calibration else None
    if calibration is None or metric.objective is None:
        return "—"
    bound = calibration.model == "student-t" and metric.objective.min_effect > 0
    cell = ("≤ " if bound and calibration.rate > 0 else "") + pct(calibration.rate)
    if calibration.measured is not None:
        cell += f" (measured {pct(calibration.measured)})"
    return cell


def power_cell(metric: MetricComparison) -> str:
    """The true difference the rule calls 80% of the time at this R, or —."""
    power = metric.descriptive.power
    return "—" if power is None else f"≥ {fmt(power.difference_for_power)}"


def calibration_lines(report: ComparisonReport, sides: Sides) -> list[str]:
    """What the rule says when A and B are the same harness, in words."""
    calibration = report.calibration
    if calibration is None:
        return ["No calibration: the candidates are not comparable."]
    per_objective = []
    for objective in calibration.objectives:
        if objective.model == "binomial-lattice":
            per_objective.append(
                f"{objective.metric} {pct(objective.rate)} (exact for {objective.n_tasks} "
                f"equally hard tasks at the pooled success rate "
                f"{fmt(objective.success_rate, 3)}, min_effect included; tasks of different "
                "difficulty make it lower)"
            )
        else:
            floored = report.spec.objective(objective.metric).min_effect > 0
            bound = "at most " if floored and objective.rate > 0 else ""
            per_objective.append(f"{objective.metric} {bound}{pct(objective.rate)}")
    lines = [
        f"If {sides.a} and {sides.b} were the same harness (A/A), at R = "
        f"{calibration.replicates} and k = {calibration.k:g} an objective would name a side "
        f"{pct(calibration.t_rate)} of the time under normal theory with min_effect 0 "
        "(less with a positive min_effect); per objective: "
        + ("; ".join(per_objective) or "none decided")
        + f". The relation would not be inconclusive "
        f"{pct(calibration.relation_rate_independent)} of the time if these "
        f"{len(calibration.objectives)} objectives are independent, between "
        f"{pct(calibration.relation_rate_low)} and {pct(calibration.relation_rate_high)} "
        f"whatever their dependence. Assumes {calibration.assumption}."
    ]
    measured = calibration.measured
    if measured is None and report.spec.calibrate:
        lines.append(
            "Measured: not simulated (the simulation needs 3 to 100 replicates and an "
            "objective the rule decided that the released report shows)."
        )
    if measured is not None:
        rates = ", ".join(
            f"{o.metric} "
            + (
                pct(o.measured)
                if o.measured is not None
                else "— (withheld)"
                if o.metric in report.withheld
                else "— (no spread)"
            )
            for o in calibration.objectives
        )
        se = (0.25 / measured.draws) ** 0.5
        lines.append(
            f"Measured ({measured.method}: {measured.draws:,} simulated A/A comparisons with "
            f"this run's observed spread and min_effect; Monte Carlo SE at most "
            f"{pct(se)}): {rates}; relation {pct(measured.relation)}. Seeded from "
            f"`{measured.seed_digest}`."
        )
    return lines


def power_text(metric: MetricComparison) -> str | None:
    """The power figures of one objective, in words (None without them)."""
    power = metric.descriptive.power
    if power is None or metric.objective is None:
        return None
    r = len(metric.differences)
    text = (
        f"k·se = {fmt(power.k_se)} (a true difference this large is called "
        f"{pct(power.power_at_k_se)} of the time at R = {r})"
    )
    if power.power_at_min_effect is not None:
        text += (
            f"; a true difference of min_effect {fmt(metric.objective.min_effect)} is called "
            f"{pct(power.power_at_min_effect)} of the time (never above 50%, at any R: the "
            "mean must exceed min_effect)"
        )
    text += (
        f"; {power.power_target:.0%} power at R = {r} for a true difference ≥ "
        f"{fmt(power.difference_for_power)}"
    )
    if power.planning_effect is not None:
        needed = power.replicates_for_power
        text += (
            f"; replicates for {power.power_target:.0%} power at 2·min_effect "
            f"({fmt(power.planning_effect)}): "
            + (f"{needed:,}" if needed is not None else "more than 100,000")
        )
    return text + f" (taking the observed sd {fmt(power.sd)} of the per-seed differences)"


def seed_only_warning(report: ComparisonReport) -> str | None:
    """A warning when the two harnesses differ in their names only (an A/A comparison)."""
    if not report.seed_only_difference:
        return None
    return (
        "the two harnesses are the same but for their names: only the seeds' "
        "execution differs, so any difference is noise (an A/A comparison; see Calibration)."
    )


def reruns_warning(report: ComparisonReport, sides: Sides) -> str | None:
    """A warning when one side's tasks were run again more often than the other's: an
    attempt recovered after a crash (or stripped of its seal) and re-run on one side
    only is what a selective re-roll looks like."""
    attempts = report.metrics.get("spend_attempts")
    if attempts is None:
        return None

    def extra(summary) -> int:
        return sum(
            round((run.value - 1) * run.n_tasks)
            for run in summary.runs
            if run.value is not None and run.n_tasks
        )

    a, b = extra(attempts.a), extra(attempts.b)
    if a == b or min(a, b) * 2 >= max(a, b) > 0:
        return None
    return (
        f"tasks were attempted again {a} time(s) on {sides.a_full} and "
        f"{b} on {sides.b_full}: attempts recovered after a crash or interruption and "
        "re-run on one side more than the other can bias the comparison (a selective "
        "re-roll looks like this); the attempt files say which (`recovered: true`)."
    )


# Why an objective named no side, in the words a user acts on.
INCONCLUSIVE_BECAUSE = {
    "too-few-replicates": "{r} seed(s): the rule needs at least 3 (add seeds)",
    "within-threshold": "the mean difference does not exceed max(min_effect, k·se)",
    "no-variance": "every seed shows the same difference and min_effect is 0",
    "absent": "a replicate has no run value on one side (nothing is imputed)",
    "timing-environment-differs": "the sides ran in different timing environments",
    "timing-environment-undeclared": "a replicate declares no timing environment",
}


def why_inconclusive(report: ComparisonReport) -> str | None:
    """One line saying why no objective named a side (None unless inconclusive)."""
    if report.relation != "inconclusive":
        return None
    reasons = []
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        if metric is None or metric.verdict != "inconclusive":
            continue
        text = INCONCLUSIVE_BECAUSE.get(metric.reason, metric.reason)
        reasons.append(f"{objective.metric}: {text.format(r=len(report.seeds))}")
    return "; ".join(reasons) or None
