"""Disclosure: what a released report and provider feedback may carry.

spec: Disclosure and references. Under ``aggregate`` (the default) a released report
carries no per-task reference-derived score, no reference-derived run value over a
single task, and no successful-tasks slice at any sample count: next to the
released per-task execution measurements, a mean over the tasks that succeeded can
tell which ones did. Per-task execution measurements are released in both modes.
Under ``per-task`` everything is released. Judge exchanges are never released.

:func:`provider_feedback` applies the aggregate rules whatever the disclosure.
"""

from __future__ import annotations

from collections.abc import Iterable

from xaytune.core.domain.measurement import MetricResult
from xaytune.core.errors import EvaluationError
from xaytune.evaluation._reports import (
    HarnessEvaluationReport,
    ProviderFeedback,
    TaskColumn,
    Withheld,
    WithholdRule,
)
from xaytune.evaluation.metrics import CATALOG_V2_ID, metric_definition

__all__ = ["apply_aggregate_rules", "provider_feedback"]


def _run_value_rule(result: MetricResult, n_tasks: int) -> WithholdRule | None:
    if result.slice == "successful-tasks":
        return "successful-tasks-slice"
    if result.reference_derived and (n_tasks == 1 or result.n_tasks == 1):
        return "single-task-reference-derived"
    return None


def _column_rule(column: TaskColumn) -> WithholdRule | None:
    # v2 holds every v1 metric, equally reference-derived or not, and its own.
    if metric_definition(column.metric, CATALOG_V2_ID).reference_derived:
        return "per-task-reference-derived"
    return None


def apply_aggregate_rules(
    metrics: Iterable[MetricResult],
    columns: Iterable[TaskColumn],
    *,
    n_tasks: int,
    already: Iterable[Withheld] = (),
) -> tuple[tuple[MetricResult, ...], tuple[TaskColumn, ...], tuple[Withheld, ...]]:
    """Split run values and columns into what the aggregate rules release and what
    they withhold; return (released metrics, released columns, withheld list)."""
    withheld = list(already)
    kept_metrics = []
    for result in metrics:
        rule = _run_value_rule(result, n_tasks)
        if rule is None:
            kept_metrics.append(result)
        else:
            withheld.append(Withheld(metric=result.key, scope="run-value", rule=rule))
    kept_columns = []
    for column in columns:
        rule = _column_rule(column)
        if rule is None:
            kept_columns.append(column)
        else:
            withheld.append(Withheld(metric=column.metric, scope="per-task", rule=rule))
    unique = tuple(dict.fromkeys(withheld))
    return tuple(kept_metrics), tuple(kept_columns), unique


def provider_feedback(report: HarnessEvaluationReport) -> ProviderFeedback:
    """What a search or mutation provider may see of a released report.

    Never a per-task reference-derived score, never a reference-derived run value
    over a single task, never a successful-tasks slice, whatever the disclosure.
    Only a released :class:`HarnessEvaluationReport` is accepted (a restricted
    report is refused with ``restricted-report``).
    """
    if not isinstance(report, HarnessEvaluationReport):
        raise EvaluationError(
            "restricted-report",
            f"provider_feedback takes a released HarnessEvaluationReport, not "
            f"{type(report).__name__}",
        )
    metrics, columns, withheld = apply_aggregate_rules(
        report.metrics,
        report.task_columns,
        n_tasks=report.evaluation.n_tasks,
        already=report.withheld,
    )
    return ProviderFeedback(
        evaluation=report.evaluation,
        metrics=metrics,
        task_ids=report.task_ids,
        task_columns=columns,
        withheld=withheld,
    )
