"""Catalogs ``xaytune.harness-metrics/v1`` and ``/v2``: every metric, its unit, kind
and absences.

spec: Metrics and absences. Each per-task observation is a value or an absence with
a reason; zero never stands in for an absence. A metric absent on any task has no
run value (its absences are counted instead). Cost, cached and reasoning tokens and
end-to-end time are always ``not-recorded`` in v1.

v2 is a superset of v1, selected in the outcome evaluator's config (so its id is in
the evaluator fingerprint, and C3 keeps v1 and v2 runs apart). It records what v1
leaves ``not-recorded``, from the attested spend: ``cached_tokens`` and
``reasoning_tokens`` when the provider reported them (``not-recorded`` otherwise),
``end_to_end_time`` (the attempt's wall time), and ``cost`` in dollars at the price
table the config declares (``not-recorded`` without one, or when unreported cached
tokens leave it unknown); and adds ``model_call_time`` (the mean wall time of one
model call) and ``spend_cost`` (dollars across ALL attempts, like ``spend_tokens``).
Every other metric is v1's, measured the same way.

Per-task observations are kept as columns (:class:`Column`: a float array and an
absence-code array, in assignment order) so a run of 100,000 tasks is aggregated
with numpy, without a record per task per metric. :meth:`Column.observations`
builds :class:`TaskObservation` records only when a caller asks for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from xaytune.core.domain.measurement import (
    ABSENCE_REASONS,
    AbsenceReason,
    MetricResult,
    TaskObservation,
)
from xaytune.core.errors import EvaluationError

__all__ = [
    "CATALOG",
    "CATALOG_ID",
    "CATALOG_IDS",
    "CATALOG_V2",
    "CATALOG_V2_ID",
    "EXECUTION_METRICS",
    "EXECUTION_METRICS_V2",
    "NOT_RECORDED_V1",
    "Column",
    "MetricDefinition",
    "MetricKind",
    "absence_code",
    "catalog_definitions",
    "metric_definition",
    "run_result",
    "slice_result",
]

CATALOG_ID = "xaytune.harness-metrics/v1"
CATALOG_V2_ID = "xaytune.harness-metrics/v2"
CATALOG_IDS = (CATALOG_ID, CATALOG_V2_ID)

MetricKind = Literal["outcome", "tokens", "cost", "time", "interaction", "context", "spend"]


class MetricDefinition(BaseModel):
    """One catalog entry. ``absences`` are the reasons a per-task observation may
    carry; ``reference_derived`` marks metrics computed from held-out references."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    kind: MetricKind
    unit: str
    reference_derived: bool
    absences: tuple[AbsenceReason, ...]
    description: str


_EXEC: tuple[AbsenceReason, ...] = ("no-attested-result",)
_NOT_RECORDED: tuple[AbsenceReason, ...] = ("not-recorded",)


def _m(
    key: str,
    kind: MetricKind,
    unit: str,
    absences: tuple[AbsenceReason, ...],
    description: str,
    *,
    reference_derived: bool = False,
) -> MetricDefinition:
    return MetricDefinition(
        key=key,
        kind=kind,
        unit=unit,
        reference_derived=reference_derived,
        absences=absences,
        description=description,
    )


CATALOG: tuple[MetricDefinition, ...] = (
    _m(
        "task_success",
        "outcome",
        "proportion",
        ("no-attested-result", "unscored-cancelled"),
        "1 when the attested answer matches the reference under the declared rule, else 0",
        reference_derived=True,
    ),
    _m(
        "quality",
        "outcome",
        "score",
        ("no-attested-result", "unscored-cancelled", "judge-failed", "not-applicable"),
        "the pinned judge's integer score on the declared scale (mean over judge repeats)",
        reference_derived=True,
    ),
    _m("input_tokens", "tokens", "tokens", _EXEC, "input tokens of the attested attempt"),
    _m("output_tokens", "tokens", "tokens", _EXEC, "output tokens of the attested attempt"),
    _m("total_tokens", "tokens", "tokens", _EXEC, "input + output tokens, attested attempt"),
    _m("cached_tokens", "tokens", "tokens", _NOT_RECORDED, "not recorded in v1"),
    _m("reasoning_tokens", "tokens", "tokens", _NOT_RECORDED, "not recorded in v1"),
    _m("cost", "cost", "usd", _NOT_RECORDED, "not recorded in v1"),
    _m("model_time", "time", "s", _EXEC, "time in model calls, attested attempt"),
    _m("tool_time", "time", "s", _EXEC, "time in tool calls, attested attempt"),
    _m("end_to_end_time", "time", "s", _NOT_RECORDED, "not recorded in v1"),
    _m("turns", "interaction", "count", _EXEC, "model turns of the attested attempt"),
    _m("tool_calls", "interaction", "count", _EXEC, "tool calls of the attested attempt"),
    _m("retries", "interaction", "count", _EXEC, "model retries of the attested attempt"),
    _m("peak_context_tokens", "context", "tokens", _EXEC, "largest context, attested attempt"),
    _m(
        "spend_tokens",
        "spend",
        "tokens",
        ("spend-unaccounted",),
        "input + output tokens across ALL attempts, partial ones included; absent "
        "(spend-unaccounted) when an attempt was recovered after a crash",
    ),
    _m("spend_attempts", "spend", "attempts", (), "attempts made, partial ones included"),
)

_RECORDED_IF_REPORTED: tuple[AbsenceReason, ...] = ("no-attested-result", "not-recorded")
_V2_CHANGES = {
    "cached_tokens": _m(
        "cached_tokens",
        "tokens",
        "tokens",
        _RECORDED_IF_REPORTED,
        "input tokens the provider served from its prompt cache (a part of input_tokens), "
        "attested attempt; not-recorded when a call did not report them",
    ),
    "reasoning_tokens": _m(
        "reasoning_tokens",
        "tokens",
        "tokens",
        _RECORDED_IF_REPORTED,
        "output tokens the provider reported as reasoning (a part of output_tokens), "
        "attested attempt; not-recorded when a call did not report them",
    ),
    "cost": _m(
        "cost",
        "cost",
        "usd",
        _RECORDED_IF_REPORTED,
        "dollars of the attested attempt at the declared price table (per call, by its "
        "prompt tokens' tier); not-recorded without a price table, or when unreported "
        "cached tokens leave it unknown",
    ),
    "end_to_end_time": _m(
        "end_to_end_time",
        "time",
        "s",
        _EXEC,
        "wall time of the attested attempt, start to end (monotonic clock)",
    ),
}
_V2_ADDED = {
    "model_time": _m(
        "model_call_time",
        "time",
        "s",
        ("no-attested-result", "not-applicable"),
        "mean wall time of one model call of the attested attempt (failed calls included); "
        "not-applicable when it made none",
    ),
    "spend_tokens": _m(
        "spend_cost",
        "spend",
        "usd",
        ("spend-unaccounted", "not-recorded"),
        "dollars across ALL attempts, partial ones included; absent (spend-unaccounted) "
        "when an attempt was recovered after a crash, not-recorded when a cost is",
    ),
}


def _v2() -> tuple[MetricDefinition, ...]:
    definitions: list[MetricDefinition] = []
    for definition in CATALOG:
        definitions.append(_V2_CHANGES.get(definition.key, definition))
        if definition.key in _V2_ADDED:  # placed after the metric it refines
            definitions.append(_V2_ADDED[definition.key])
    return tuple(definitions)


CATALOG_V2: tuple[MetricDefinition, ...] = _v2()

_BY_KEY = {definition.key: definition for definition in CATALOG}
_BY_CATALOG = {
    CATALOG_ID: _BY_KEY,
    CATALOG_V2_ID: {definition.key: definition for definition in CATALOG_V2},
}
# Every metric an outcome evaluator reports besides task_success (not reference-derived).
EXECUTION_METRICS: tuple[str, ...] = tuple(d.key for d in CATALOG if d.kind != "outcome")
EXECUTION_METRICS_V2: tuple[str, ...] = tuple(d.key for d in CATALOG_V2 if d.kind != "outcome")
NOT_RECORDED_V1: tuple[str, ...] = (
    "cached_tokens",
    "reasoning_tokens",
    "cost",
    "end_to_end_time",
)

# Absence codes in columns: 0 is "present", i + 1 is ABSENCE_REASONS[i].
_CODES = {reason: i + 1 for i, reason in enumerate(ABSENCE_REASONS)}


def absence_code(reason: AbsenceReason) -> int:
    """The column code of ``reason`` (0 means present)."""
    return _CODES[reason]


def _catalog(catalog: str) -> dict[str, MetricDefinition]:
    try:
        return _BY_CATALOG[catalog]
    except KeyError:
        raise EvaluationError(
            "unknown-catalog",
            f"catalog {str(catalog)[:80]!r} is not one of {', '.join(CATALOG_IDS)}",
        ) from None


def catalog_definitions(catalog: str = CATALOG_ID) -> tuple[MetricDefinition, ...]:
    """Every entry of ``catalog``, in catalog order; ``unknown-catalog`` otherwise."""
    return tuple(_catalog(catalog).values())


def metric_definition(key: str, catalog: str = CATALOG_ID) -> MetricDefinition:
    """The entry for ``key`` in ``catalog`` (v1 by default); refused with
    ``unknown-metric`` (or ``unknown-catalog``) otherwise."""
    try:
        return _catalog(catalog)[key]
    except KeyError:
        raise EvaluationError(
            "unknown-metric", f"metric {key!r} is not in catalog {catalog}"
        ) from None


@dataclass(frozen=True, slots=True)
class Column:
    """Per-task observations of one metric in assignment order (position = index).

    ``values`` is float64 with NaN where absent; ``absences`` is int8 with 0 where a
    value is present, else the reason's code. ``spreads`` (judge metrics) is the
    per-task sample sd across judge repeats, NaN when unknown. ``catalog`` is the
    catalog whose entry (and declared absences) the column follows.
    """

    metric: str
    values: np.ndarray
    absences: np.ndarray
    spreads: np.ndarray | None = None
    catalog: str = CATALOG_ID

    def __post_init__(self) -> None:
        present = self.absences == 0
        if self.values.shape != self.absences.shape:
            raise ValueError(f"column {self.metric}: values and absences differ in length")
        if not np.all(np.isfinite(self.values[present])) or np.any(
            ~np.isnan(self.values[~present])
        ):
            raise ValueError(f"column {self.metric}: a task is neither a value nor an absence")
        definition = metric_definition(self.metric, self.catalog)
        allowed = {0, *(absence_code(r) for r in definition.absences)}
        found = set(np.unique(self.absences).tolist())
        if not found <= allowed:
            raise ValueError(f"column {self.metric}: absence codes {found - allowed} not declared")

    @classmethod
    def build(
        cls, metric: str, values: list[float], codes: list[int], catalog: str = CATALOG_ID
    ) -> Column:
        """A column from per-task Python lists (NaN or anything at absent positions)."""
        absences = np.asarray(codes, dtype=np.int8)
        array = np.asarray(values, dtype=np.float64)
        array[absences != 0] = np.nan
        return cls(metric, array, absences, catalog=catalog)

    @classmethod
    def absent(
        cls, metric: str, n: int, reason: AbsenceReason, catalog: str = CATALOG_ID
    ) -> Column:
        """Every task absent for one reason (e.g. ``not-recorded``)."""
        codes = np.full(n, absence_code(reason), dtype=np.int8)
        return cls(metric, np.full(n, np.nan), codes, catalog=catalog)

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def absence_counts(self, mask: np.ndarray | None = None) -> dict[str, int]:
        """Absent tasks per reason (only reasons that occur), optionally within ``mask``."""
        codes = self.absences if mask is None else self.absences[mask]
        counts = np.bincount(codes, minlength=len(ABSENCE_REASONS) + 1)
        return {
            reason: int(counts[i + 1]) for i, reason in enumerate(ABSENCE_REASONS) if counts[i + 1]
        }

    def value_list(self) -> list[int | float | None]:
        """Values for a report: ints where integral (same canonical JSON, faster)."""
        out: list[int | float | None] = []
        for value, code in zip(self.values.tolist(), self.absences.tolist(), strict=True):
            if code:
                out.append(None)
            elif value.is_integer() and abs(value) < 2**53:
                out.append(int(value))
            else:
                out.append(value)
        return out

    def absence_list(self) -> list[str | None]:
        """Absence reasons for a report, None where a value is present."""
        return [ABSENCE_REASONS[code - 1] if code else None for code in self.absences.tolist()]

    def spread_list(self) -> list[float | None] | None:
        if self.spreads is None:
            return None
        return [None if np.isnan(s) else float(s) for s in self.spreads.tolist()]

    def observations(self, task_ids: tuple[str, ...]) -> tuple[TaskObservation, ...]:
        """One :class:`TaskObservation` per task (built without re-validation: the
        column invariants already hold)."""
        spreads = self.spread_list() or [None] * len(task_ids)
        return tuple(
            TaskObservation.model_construct(
                _OBSERVATION_FIELDS,
                task_id=task_id,
                position=position,
                value=value,
                absence=absence,
                judge_spread=spread,
            )
            for position, (task_id, value, absence, spread) in enumerate(
                zip(task_ids, self.value_list(), self.absence_list(), spreads, strict=True)
            )
        )


# Every observation sets every field: one shared fields-set for all (a frozen model
# never changes it in place; see xaytune.core.frozen).
_OBSERVATION_FIELDS = {"task_id", "position", "value", "absence", "judge_spread"}


def _mean(values: np.ndarray) -> float:
    # Sum then divide: exact for integer-valued metrics below 2^53.
    return float(np.sum(values) / values.shape[0])


def run_result(column: Column) -> MetricResult:
    """The run value (mean over tasks) of ``column``, or its absence with reasons.

    ``judge_spread`` is the mean per-task spread when the run value exists and every
    task's spread is known (two or more judge repeats); otherwise None (unknown).
    """
    definition = metric_definition(column.metric, column.catalog)
    n = len(column)
    if n == 0:
        raise EvaluationError("empty-run", f"metric {column.metric}: a run has at least one task")
    absent = column.absence_counts()
    if absent:
        return MetricResult(
            metric=definition.key,
            unit=definition.unit,
            reference_derived=definition.reference_derived,
            n_tasks=n,
            value=None,
            absent_reasons=absent,
        )
    spread = None
    if column.spreads is not None and not np.any(np.isnan(column.spreads)):
        spread = _mean(column.spreads)
    return MetricResult(
        metric=definition.key,
        unit=definition.unit,
        reference_derived=definition.reference_derived,
        n_tasks=n,
        value=_mean(column.values),
        judge_spread=spread,
    )


def slice_result(column: Column, success: Column) -> MetricResult:
    """``column``'s mean over the tasks whose task_success is 1 (successful-tasks).

    Membership is decided by ``success``: when task_success is absent on any task,
    which tasks succeeded is unknown, so the slice is absent with those absences.
    An empty slice (no task succeeded) is absent as not-applicable, one per task.
    A slice member whose observation is absent makes the slice absent.
    """
    definition = metric_definition(column.metric, column.catalog)
    common = {
        "metric": definition.key,
        "unit": definition.unit,
        "reference_derived": definition.reference_derived,
        "slice": "successful-tasks",
    }
    unknown = success.absence_counts()
    members = (success.absences == 0) & (success.values == 1.0)
    n = int(np.count_nonzero(members))
    if unknown:
        return MetricResult(**common, n_tasks=n, value=None, absent_reasons=unknown)
    if n == 0:
        return MetricResult(
            **common, n_tasks=0, value=None, absent_reasons={"not-applicable": len(success)}
        )
    absent = column.absence_counts(members)
    if absent:
        return MetricResult(**common, n_tasks=n, value=None, absent_reasons=absent)
    return MetricResult(**common, n_tasks=n, value=_mean(column.values[members]))
