"""The words a report says, shared by report.md, report.html and the terminal table.

Numbers are formatted once (:func:`fmt`, :func:`pct`) and every honesty note (the A/A
calibration, power, the re-run asymmetry warning, why a comparison is inconclusive)
is worded once. :class:`Sides` names the two candidates: report.md and the terminal
say "A"/"B" (their bytes are pinned), report.html says the candidates' names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xaytune.comparison.compare import ComparisonReport, MetricComparison

__all__ = [
    "INCONCLUSIVE_BECAUSE",
    "SE_ZERO_MARK",
    "VERDICT_WORDS",
    "Sides",
    "aa_cell",
    "calibrate_caveat",
    "calibration_lines",
    "collapsed_line",
    "fmt",
    "interval_text",
    "looks_lines",
    "method_lines",
    "optional_stopping_warning",
    "pct",
    "power_cell",
    "power_text",
    "ratio_text",
    "relation_bound",
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


def ratio_text(a: float | None, b: float | None) -> str:
    """The ratio of the two sides' means, a / b, as "15.8×", where both are positive
    (a ratio of a zero or negative mean says nothing); — otherwise. Computed from the
    same published means the difference is."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return "—"
    if a <= 0 or b <= 0:
        return "—"
    return f"{fmt(a / b, 3)}×"


def collapsed_line(metrics: list[MetricComparison]) -> str:
    """The one line that stands for the metrics shown folded (not objectives): how
    many, grouped by why they were not compared, absent ones named."""
    groups: dict[str, list[str]] = {}
    for metric in metrics:
        groups.setdefault(metric.reason or metric.verdict, []).append(metric.metric)
    parts = []
    for reason, names in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        named = "" if reason == "not-an-objective" else f" ({', '.join(sorted(names))})"
        parts.append(f"{len(names)} {reason}{named}")
    noun = "metric" if len(metrics) == 1 else "metrics"
    return f"{len(metrics)} more {noun}, not compared: " + "; ".join(parts)


def interval_text(metric: MetricComparison) -> str:
    """The 95% t-interval of the mean paired difference, or —."""
    interval = metric.descriptive.mean_interval
    return "—" if interval is None else f"[{fmt(interval.low)}, {fmt(interval.high)}]"


# The marker of a verdict named with se = 0, on every surface (issue 30).
SE_ZERO_MARK = "(se = 0: constant difference)"


def verdict_text(metric: MetricComparison) -> str:
    """The verdict word, with a visible note when the 95% interval contains 0, or
    when a side was named with no spread at all (se = 0: a constant difference above a
    positive min_effect, whose noise the seeds cannot show)."""
    if metric.method_detail is not None:
        return metric.verdict  # another method decided it: its own figures say how
    if metric.verdict in ("favors-a", "favors-b") and metric.se == 0:
        return f"{metric.verdict} {SE_ZERO_MARK}"
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


def relation_bound(report: ComparisonReport) -> str:
    """The prefix "≤ " when the relation's A/A figures are built from an upper bound
    (a student-t rate with a positive min_effect), else ""."""
    calibration = report.calibration
    if calibration is None:
        return ""
    bounded = any(
        o.model == "student-t" and report.spec.objective(o.metric).min_effect > 0 and o.rate > 0
        for o in calibration.objectives
    )
    return "≤ " if bounded else ""


# How far apart two calibrate=true runs of the same harnesses read, at small R: the
# simulation uses the observed spread of R seeds (measured in issue 30: 11-27% between
# runs for a true 26.7% at R = 3).
_CALIBRATE_CAVEAT_BELOW = 10


def calibrate_caveat(replicates: int) -> str:
    """The caveat a measured A/A rate carries at small R ("" from R = 10)."""
    if replicates >= _CALIBRATE_CAVEAT_BELOW:
        return ""
    return (
        f" Caveat: at R = {replicates} the measured rates rest on the spread of "
        f"{replicates} seeds and vary from run to run (at R = 3, two runs of the same "
        "harnesses read anywhere from 11% to 27% for a true 27%); the formula figures "
        "above are the steadier guide."
    )


def power_cell(metric: MetricComparison) -> str:
    """The true difference the rule calls 80% of the time at this R, or —."""
    power = metric.descriptive.power
    if power is None:
        return "—"
    return f"≥ {fmt(power.difference_for_power)}" + (" (rough)" if power.rough else "")


def calibration_lines(report: ComparisonReport, sides: Sides) -> list[str]:
    """What the rule says when A and B are the same harness, in words."""
    calibration = report.calibration
    alpha = pct(report.spec.alpha)
    if calibration is None and report.method == "task-paired/v1":
        return [
            f"task-paired/v1 names a side about {alpha} of the time per objective when A "
            "and B are the same harness (alpha; benchmarks/sequential.py measures it)."
        ]
    if calibration is None and report.method == "sequential-paired/v1":
        return [
            f"sequential-paired/v1 names a side at most {alpha} of the time (alpha, for the "
            "relation: split over the objectives) when A and B are the same harness, however "
            "many times the tree is looked at or extended."
        ]
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
        f"{relation_bound(report)}{pct(calibration.relation_rate_independent)} of the time "
        "if these "
        f"{len(calibration.objectives)} objectives are independent, between "
        f"{relation_bound(report)}{pct(calibration.relation_rate_low)} and "
        f"{relation_bound(report)}{pct(calibration.relation_rate_high)} "
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
            f"`{measured.seed_digest}`." + calibrate_caveat(calibration.replicates)
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
    if power.sd_upper is None:  # a report written before the upper bound
        return text + f" (taking the observed sd {fmt(power.sd)} of the per-seed differences)"
    text += (
        f" (at the {power.sd_level:.0%} upper confidence bound {fmt(power.sd_upper)} of the "
        f"sd of the per-seed differences, observed {fmt(power.sd)}: these figures hold in "
        f"about {power.sd_level:.0%} of runs"
    )
    if power.rough:
        text += f"; rough: R = {r} is below 5 and says little about the spread"
    return text + ")"


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


def optional_stopping_warning(report: ComparisonReport) -> str | None:
    """The warning of a tree whose seeds grew between looks under the fixed rule."""
    looks = report.looks
    if looks is None or not looks.optional_stopping:
        return None
    return (
        f"optional stopping: this tree was looked at {looks.count} times as its seeds grew "
        f"from {looks.looks[0].seeds} to {looks.looks[-1].seeds}; under {report.method} "
        "adding seeds until a verdict appears raises the false-favor rate above the A/A "
        "rate stated for one look (use comparison=sequential to extend a tree safely)."
    )


def method_lines(report: ComparisonReport) -> list[str]:
    """How a declared method other than the spec's rule decided each objective."""
    lines = []
    for objective in report.spec.objectives:
        metric = report.metrics.get(objective.metric)
        detail = metric.method_detail if metric is not None else None
        if detail is None:
            continue
        if detail.method == "task-paired/v1":
            se = fmt(detail.clustered_se) if detail.clustered_se is not None else "unknown"
            critical = fmt(detail.critical) if detail.critical is not None else "n/a"
            threshold = fmt(detail.threshold) if detail.threshold is not None else "n/a"
            lines.append(
                f"{objective.metric}: mean of {detail.n_observations} (seed, task) differences "
                f"{fmt(detail.mean)}, se clustered by {detail.n_clusters} tasks {se}, "
                f"t critical {critical} (alpha {detail.alpha}), threshold {threshold}: "
                f"{metric.verdict}."
            )
        else:
            seeds = (
                f"; about {detail.expected_seeds:.1f} seeds to a verdict at a true "
                "2·min_effect (Wald)"
                if detail.expected_seeds is not None
                else ""
            )
            lines.append(
                f"{objective.metric}: mean difference {fmt(detail.mean)} over "
                f"{detail.n_observations} (seed, task) pairs, bound {fmt(detail.bound)}; "
                f"wealth for A {fmt(detail.wealth_a)}, for B {fmt(detail.wealth_b)} against "
                f"{fmt(detail.threshold)} = 2/alpha (alpha {detail.alpha} for this objective, "
                f"valid over any number of looks){seeds}: {metric.verdict}."
            )
    return lines


def looks_lines(report: ComparisonReport) -> list[str]:
    """The looks at the tree as a Markdown table (none for a first look)."""
    if report.looks is None:
        return []
    lines = ["| look | seeds | method | relation |", "|---|---|---|---|"]
    for look in report.looks.looks:
        lines.append(f"| {look.look} | {look.seeds} | {look.method} | {look.relation} |")
    return lines
