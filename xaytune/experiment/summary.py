"""Several challengers against one baseline: the summary of their comparisons.

Each challenger gets the spec's paired comparison with the baseline (its own
``comparison/<label>/``, verdicts by the spec's rule). The summary puts them side
by side: challenger x objective -> verdict, mean difference, threshold, 95% interval,
and, descriptively, a Holm adjustment of the two-sided paired t p-values across all
challengers x objectives (it never changes a verdict word: with many challengers,
some verdict is likelier to be luck, and the adjusted p says how much). A row
without spread (se = 0) gets p = 1 and, when it names a side anyway (a constant
difference above min_effect), a marker; rows with fewer than 3 replicates are no test
and stay out of the Holm family.

It also states the family-wise A/A rate (:func:`family_rate`): the chance that at
least one of these challengers names a side when all of them and the baseline are the
same harness, with the baseline's runs shared by every challenger (so not
``1 − (1 − p)^m``): exact on a small task lattice, else simulated, seeded from a digest
of its inputs and recorded with its trial count, so ``python -m xaytune.verify``
recomputes it with the rest of the summary (xaytune.comparison.family).

Written to ``comparison/``: ``summary.json`` (canonical), ``summary.md`` and
``report.html`` (every comparison on one page under a summary grid).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from xaytune.comparison.compare import (
    ComparisonReport,
    FamilyObjective,
    FamilyRate,
    family_aa_rate,
    lattice_counts,
)
from xaytune.core.canonical import canonical_bytes

__all__ = [
    "HOLM_MIN_REPLICATES",
    "SUMMARY_FILES",
    "family_lines",
    "family_rate",
    "holm",
    "print_summary",
    "summary_data",
    "summary_files",
]

SUMMARY_FILES = ("summary.json", "summary.md", "report.html")
SUMMARY_SCHEMA = "xaytune.comparison-summary/v1"
HOLM_MIN_REPLICATES = 3


def _family_objective(metric_name: str, min_effect: float, sides: list[list]) -> FamilyObjective:
    """The A/A model of one objective from the baseline's runs and each challenger's
    (``sides``): a task lattice at the pooled success rate, else normal at the pooled
    sd of the sides' runs made unbiased (min_effect 0, an upper bound, when a side's
    runs are withheld and no spread is known)."""
    runs = [run for side in sides for run in side]
    lattice = lattice_counts(runs) if metric_name == "task_success" else None
    if lattice is not None:
        n, successes = lattice
        return FamilyObjective(
            metric=metric_name,
            min_effect=min_effect,
            model="binomial-lattice",
            n_tasks=n,
            success_rate=successes / (n * len(runs)),
        )
    variances, df = [], 0
    for side in sides:
        values = [run.value for run in side]
        if len(values) < 2 or any(v is None or not math.isfinite(v) for v in values):
            return FamilyObjective(metric=metric_name, min_effect=0.0, model="normal")
        centre = math.fsum(values) / len(values)
        variances.append(math.fsum((v - centre) ** 2 for v in values) / (len(values) - 1))
        df += len(values) - 1
    # The pooled sd is biased low (by c4(df), 2% at df 12) and the rate is concave in
    # σ: divided by c4 it is unbiased for σ under normality (benchmarks/iteration.py).
    c4 = math.sqrt(2.0 / df) * math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2))
    return FamilyObjective(
        metric=metric_name,
        min_effect=min_effect,
        model="normal",
        sd=math.sqrt(math.fsum(variances) / len(variances)) / c4,
    )


def family_rate(results: list[tuple[str, ComparisonReport]]) -> FamilyRate:
    """The chance that at least one of these challengers names a side when all of them
    and the baseline are the same harness, at this R, k and min_effects, with the
    baseline's runs shared (xaytune.comparison.family)."""
    first = results[0][1]
    objectives = []
    for objective in first.spec.objectives:
        decided = [r.metrics.get(objective.metric) for _, r in results]
        if any(m is None or not m.differences for m in decided):
            continue
        sides = [list(decided[0].a.runs)] + [list(m.b.runs) for m in decided]
        objectives.append(_family_objective(objective.metric, objective.min_effect, sides))
    return family_aa_rate(
        challengers=len(results),
        replicates=min(len(report.seeds) for _, report in results),
        k=first.spec.k,
        objectives=objectives,
    )


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def family_lines(family: dict[str, Any]) -> list[str]:
    """The family-wise A/A rate in words (summary.md, the terminal, report.html)."""
    m, trials = family["challengers"], family["trials"]
    if family["replicates"] < 3 or not family["objectives"]:
        return [f"Family-wise A/A: at R = {family['replicates']} no challenger can name a side."]

    exact = set(family["exact_objectives"])
    simulated = [metric for metric in family["per_objective"] if metric not in exact]

    def se(rate: float, metrics: list[str]) -> str:
        # Exact figures have no Monte Carlo error; a figure from simulated ones does.
        if not any(metric in simulated for metric in metrics):
            return " (exact)"
        return f" ± {_pct(math.sqrt(rate * (1 - rate) / trials))}"

    per = "; ".join(
        f"{metric} {_pct(rate)}{se(rate, [metric])}"
        for metric, rate in family["per_objective"].items()
    )
    everything = list(family["per_objective"])
    bounded = [o["metric"] for o in family["objectives"] if o["model"] == "normal" and not o["sd"]]
    how = []
    if exact:
        how.append(
            f"{', '.join(sorted(exact))} exact, enumerated on its task lattice at the pooled "
            "success rate"
        )
    if simulated:
        how.append(
            f"{', '.join(simulated)} simulated ({trials:,} trials, ± one Monte Carlo "
            "standard error; task_success on its task lattice at the pooled success rate, "
            "other objectives normal at the pooled run spread) from a generator seeded "
            f"with `{family['seed_digest']}`"
        )
    return [
        f"Family-wise A/A: if all {m} challengers were the same harness as the baseline, at "
        f"least one would name a side {_pct(family['any_objective'])}"
        f"{se(family['any_objective'], everything)} of the time at R = "
        f"{family['replicates']}, k = {family['k']:g} (one challenger alone: "
        f"{_pct(family['one_challenger'])}); per objective: {per}. The challengers share the "
        f"baseline's runs, so this is not 1 − (1 − p)^{m}. Objectives taken as independent; "
        f"whatever their dependence, between {_pct(family['any_objective_low'])} and "
        f"{_pct(family['any_objective_high'])}.",
        f"How ({family['method']}, each objective with its min_effect): "
        + "; ".join(how)
        + (f"; {', '.join(bounded)} at min_effect 0, an upper bound" if bounded else "")
        + ".",
    ]


def _p_value(mean: float | None, se: float | None, replicates: int) -> float | None:
    """Two-sided paired t p-value of the mean difference (df = R - 1)."""
    if mean is None or se is None or replicates < 2:
        return None
    if se == 0:
        # No spread: the t statistic is undefined, and a constant difference is no
        # evidence against noise the seeds cannot show. p = 1, never 0.
        return 1.0
    # 2·t.sf(|t|, R − 1) through the ufunc t.sf evaluates: scipy.stats costs ~0.5 s to
    # import (tests/app/test_app_lazy_imports.py checks it is the same number).
    from scipy import special

    return float(2 * special.stdtr(replicates - 1, -abs(mean / se)))


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of ``p_values`` (None stays None, not counted)."""
    ranked = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(ranked)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(ranked):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def summary_data(
    baseline: str,
    results: list[tuple[str, ComparisonReport]],
    *,
    errors: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary of released reports, one per challenger label. ``errors`` (the run's
    errors.json data): a challenger it says is not compared has relation and verdicts
    ``not-compared``, no number, no p, and stays out of the Holm family and the
    family-wise rate (``not_compared`` names why)."""
    withheld = dict((errors or {}).get("not_compared", {}))
    rows: list[dict[str, Any]] = []
    for label, report in results:
        for metric in report.metrics.values():
            if metric.objective is None:
                continue
            if label in withheld:  # its numbers measure the endpoint: none is shown
                rows.append(_withheld_row(label, report.b.name, metric))
                continue
            interval = metric.descriptive.mean_interval
            rows.append(
                {
                    "challenger": label,
                    "name": report.b.name,
                    "metric": metric.metric,
                    "direction": metric.objective.direction,
                    "verdict": metric.verdict,
                    "mean_difference": metric.mean,
                    "threshold": metric.threshold,
                    "interval": None if interval is None else [interval.low, interval.high],
                    "replicates": len(metric.differences),
                    "p_value": _p_value(metric.mean, metric.se, len(metric.differences)),
                    "se_zero": metric.se == 0 and metric.verdict in ("favors-a", "favors-b"),
                }
            )
    # Below three replicates the rule never names a side: such rows are no test, and
    # stay out of the Holm family (they would only inflate m).
    family = [r["p_value"] if r["replicates"] >= HOLM_MIN_REPLICATES else None for r in rows]
    for row, adjusted in zip(rows, holm(family), strict=True):
        row["holm_p_value"] = adjusted
    compared = [(label, report) for label, report in results if label not in withheld]
    data = {
        "schema": SUMMARY_SCHEMA,
        "baseline": {"label": baseline, "name": results[0][1].a.name},
        "relations": {
            label: "not-compared" if label in withheld else report.relation
            for label, report in results
        },
        "rows": rows,
        "family": (family_rate(compared) if compared else _no_family(results)).model_dump(
            mode="json"
        ),
        "note": "Holm-adjusted p-values are descriptive: verdicts are the spec's rule, "
        "per challenger, unadjusted. Rows with fewer than 3 replicates are not in the "
        "Holm family; se = 0 rows get p = 1.",
    }
    if withheld:  # a run without one has the bytes it had before errors were recorded
        data["not_compared"] = {label: withheld[label] for label, _ in results if label in withheld}
    return data


def _withheld_row(label: str, name: str, metric) -> dict[str, Any]:
    """A not-compared challenger's row: which objective, no verdict, no number."""
    return {
        "challenger": label,
        "name": name,
        "metric": metric.metric,
        "direction": metric.objective.direction,
        "verdict": "not-compared",
        "mean_difference": None,
        "threshold": None,
        "interval": None,
        "replicates": len(metric.differences),
        "p_value": None,
        "se_zero": False,
    }


def _no_family(results: list[tuple[str, ComparisonReport]]) -> FamilyRate:
    """The family-wise rate when no challenger is compared: none can name a side."""
    first = results[0][1]
    return family_aa_rate(
        challengers=len(results),
        replicates=min(len(report.seeds) for _, report in results),
        k=first.spec.k,
        objectives=[],
    )


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.4g}"


def _markdown(data: dict[str, Any]) -> str:
    baseline = data["baseline"]["name"]
    lines = [
        f"# Summary: {len(data['relations'])} challengers against {baseline}",
        "",
        "| challenger | relation |",
        "|---|---|",
        *(
            f"| {label} | **{relation}**{_why(data, label)} |"
            for label, relation in data["relations"].items()
        ),
        "",
        "| challenger | objective | verdict | mean difference (+ favours the baseline) "
        "| threshold | 95% interval "
        "| p | Holm p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in summary_cells(data)]
    lines += ["", *family_lines(data["family"]), "", data["note"], ""]
    return "\n".join(lines)


def _why(data: dict[str, Any], label: str) -> str:
    why = data.get("not_compared", {}).get(label)
    return "" if why is None else f" ({why})"


SUMMARY_HEADER = (
    "challenger",
    "objective",
    "verdict",
    "mean difference (+ favours the baseline)",
    "threshold",
    "95% interval",
    "p",
    "Holm p",
)


def summary_cells(data: dict[str, Any]) -> list[tuple[str, ...]]:
    """The summary grid's cells, one tuple per row (summary.md and report.html)."""
    from xaytune.report import SE_ZERO_MARK

    cells = []
    for row in data["rows"]:
        interval = row["interval"]
        shown = "—" if interval is None else f"[{_num(interval[0])}, {_num(interval[1])}]"
        verdict = row["verdict"] + (f" {SE_ZERO_MARK}" if row["se_zero"] else "")
        if row["verdict"] == "not-compared" and row["challenger"] in data.get("not_compared", {}):
            verdict = f"not compared ({data['not_compared'][row['challenger']]})"
        cells.append(
            (
                f"{row['name']} ({row['challenger']})",
                f"{row['metric']} ({row['direction']})",
                verdict,
                _num(row["mean_difference"]),
                _num(row["threshold"]),
                shown,
                _num(row["p_value"]),
                _num(row["holm_p_value"]),
            )
        )
    return cells


def print_summary(data: dict[str, Any], *, prose: bool = True, console=None) -> None:
    """The summary on the terminal as tables (the relations, then the per-objective
    grid), then the family-wise A/A rate: in full when ``prose`` (once per run), else
    in one line that points to summary.md."""
    from rich.console import Console

    from xaytune.report import terminal_grid

    console = console or Console()
    names = {row["challenger"]: row["name"] for row in data["rows"]}
    # The title on its own line: a narrow table would wrap it.
    console.print(
        f"Summary: {len(data['relations'])} challengers against {data['baseline']['name']}",
        markup=False,
    )
    terminal_grid(
        "",
        ("challenger", "relation"),
        [(f"{names.get(label, label)} ({label})", r) for label, r in data["relations"].items()],
        whole=("relation",),
        console=console,
    )
    terminal_grid(
        "Per challenger and objective (verdicts by the spec's rule; p and Holm p descriptive)",
        SUMMARY_HEADER,
        summary_cells(data),
        whole=("verdict",),
        console=console,
    )
    family = data["family"]
    if prose:
        for line in (*family_lines(family), data["note"]):
            console.print(line, markup=False)
    elif family["replicates"] < 3 or not family["objectives"]:
        console.print(family_lines(family)[0], markup=False)
    else:
        console.print(
            f"Family-wise A/A: at least one of the {family['challengers']} challengers would "
            f"name a side {_pct(family['any_objective'])} of the time if all were the same "
            "harness as the baseline (how: summary.md)",
            markup=False,
        )


def summary_files(
    baseline: str,
    results: list[tuple[str, ComparisonReport]],
    images: dict[str, dict[str, bytes]],
    *,
    model: str | None = None,
    errors: dict[str, Any] | None = None,
) -> dict[str, bytes]:
    """The summary's files: ``results`` are the released reports by challenger label,
    ``images`` each one's plots (as written in its own directory); ``model`` names the
    model on the page; ``errors`` is the run's errors.json data."""
    from xaytune.report import comparison_view, render_html, report_page

    data = summary_data(baseline, results, errors=errors)
    views = tuple(
        comparison_view(report, images[label], model=model, errors=errors)
        for label, report in results
    )
    page = dataclasses.replace(
        report_page(views),
        summary_header=SUMMARY_HEADER,
        summary_rows=tuple(summary_cells(data)),
        summary_notes=(*family_lines(data["family"]), data["note"]),
    )
    return {
        "summary.json": canonical_bytes(data) + b"\n",
        "summary.md": _markdown(data).encode(),
        "report.html": render_html(page).encode(),
    }
