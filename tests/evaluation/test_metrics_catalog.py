"""Catalog xaytune.harness-metrics/v1 and run-level aggregation with absences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xaytune.core.domain.measurement import ABSENCE_REASONS
from xaytune.core.errors import EvaluationError
from xaytune.evaluation.metrics import (
    CATALOG,
    CATALOG_ID,
    NOT_RECORDED_V1,
    Column,
    absence_code,
    metric_definition,
    run_result,
    slice_result,
)

EXPECTED = {
    "task_success": ("outcome", "proportion", True),
    "quality": ("outcome", "score", True),
    "input_tokens": ("tokens", "tokens", False),
    "output_tokens": ("tokens", "tokens", False),
    "total_tokens": ("tokens", "tokens", False),
    "cached_tokens": ("tokens", "tokens", False),
    "reasoning_tokens": ("tokens", "tokens", False),
    "cost": ("cost", "usd", False),
    "model_time": ("time", "s", False),
    "tool_time": ("time", "s", False),
    "end_to_end_time": ("time", "s", False),
    "turns": ("interaction", "count", False),
    "tool_calls": ("interaction", "count", False),
    "retries": ("interaction", "count", False),
    "peak_context_tokens": ("context", "tokens", False),
    "spend_tokens": ("spend", "tokens", False),
    "spend_attempts": ("spend", "attempts", False),
}


def test_catalog_id_is_the_specs():
    assert CATALOG_ID == "xaytune.harness-metrics/v1"


def test_catalog_declares_every_metric_with_kind_unit_and_reference_flag():
    found = {d.key: (d.kind, d.unit, d.reference_derived) for d in CATALOG}
    assert found == EXPECTED


def test_only_task_success_and_quality_are_reference_derived():
    assert {d.key for d in CATALOG if d.reference_derived} == {"task_success", "quality"}


def test_declared_absences_are_spec_reasons():
    for definition in CATALOG:
        assert set(definition.absences) <= set(ABSENCE_REASONS)
    assert metric_definition("quality").absences == (
        "no-attested-result",
        "unscored-cancelled",
        "judge-failed",
        "not-applicable",
    )
    assert metric_definition("spend_tokens").absences == ("spend-unaccounted",)


def test_cost_cached_reasoning_and_end_to_end_are_not_recorded_in_v1():
    assert set(NOT_RECORDED_V1) == {"cost", "cached_tokens", "reasoning_tokens", "end_to_end_time"}
    for key in NOT_RECORDED_V1:
        assert metric_definition(key).absences == ("not-recorded",)


def test_unknown_metric_is_refused():
    with pytest.raises(EvaluationError) as caught:
        metric_definition("vibes")
    assert caught.value.reason == "unknown-metric"


def _column(metric, values, reasons):
    codes = [0 if r is None else absence_code(r) for r in reasons]
    return Column.build(metric, [math.nan if v is None else v for v in values], codes)


def test_run_value_is_the_mean_over_tasks_when_none_is_absent():
    result = run_result(_column("input_tokens", [100, 200, 400], [None] * 3))
    assert result.value == 700 / 3  # hand computation
    assert result.n_tasks == 3 and result.absent_reasons == {}


def test_run_value_is_absent_with_reasons_counted_when_any_task_is_absent():
    column = _column(
        "task_success",
        [1, None, 0, None, None],
        [None, "no-attested-result", None, "unscored-cancelled", "no-attested-result"],
    )
    result = run_result(column)
    assert result.value is None  # never a mean over the present ones, never zero
    assert result.absent_reasons == {"no-attested-result": 2, "unscored-cancelled": 1}


def test_column_refuses_undeclared_absence():
    with pytest.raises(ValueError):
        _column("task_success", [None], ["judge-failed"])


def test_column_refuses_value_at_absent_position_and_nan_value():
    with pytest.raises(ValueError):
        Column("turns", np.array([1.0]), np.array([absence_code("no-attested-result")], np.int8))
    with pytest.raises(ValueError):
        Column("turns", np.array([np.nan]), np.array([0], np.int8))


def test_absent_column_observations_carry_the_reason_never_zero():
    column = Column.absent("cost", 2, "not-recorded")
    observations = column.observations(("a", "b"))
    assert [(o.value, o.absence) for o in observations] == [(None, "not-recorded")] * 2


def test_successful_tasks_slice_is_mean_over_tasks_with_success_one():
    success = _column("task_success", [1, 0, 1], [None] * 3)
    turns = _column("turns", [2, 5, 4], [None] * 3)
    result = slice_result(turns, success)
    assert result.slice == "successful-tasks" and result.key == "turns@successful-tasks"
    assert result.value == 3.0 and result.n_tasks == 2


def test_slice_is_absent_when_which_tasks_succeeded_is_unknown():
    success = _column("task_success", [1, None], [None, "unscored-cancelled"])
    turns = _column("turns", [2, 5], [None, None])
    result = slice_result(turns, success)
    assert result.value is None and result.absent_reasons == {"unscored-cancelled": 1}


def test_empty_slice_is_absent_not_zero():
    success = _column("task_success", [0, 0], [None, None])
    result = slice_result(_column("turns", [2, 5], [None, None]), success)
    assert result.value is None and result.n_tasks == 0
    assert result.absent_reasons == {"not-applicable": 2}


def test_judge_spread_is_mean_of_task_spreads_only_when_all_known():
    column = _column("quality", [3, 4], [None, None])
    with_spread = Column(column.metric, column.values, column.absences, np.array([0.5, 1.5]))
    assert run_result(with_spread).judge_spread == 1.0
    unknown = Column(column.metric, column.values, column.absences, np.array([np.nan, np.nan]))
    assert run_result(unknown).judge_spread is None
