"""Disclosure: released vs restricted reports in both modes, 1-task and n-task runs,
the report files, and provider_feedback whatever the disclosure."""

from __future__ import annotations

import json

import pytest

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import EvaluationError
from xaytune.evaluation._outcome import SLICED_METRICS
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessEvaluationReport,
    HarnessJudgeEvaluator,
    HarnessOutcomeEvaluator,
    RestrictedEvaluationReport,
    bind_evaluation,
    judge_config,
    outcome_config,
    provider_feedback,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.models import SimulatedModel

N_ITEMS = [("a", "say:5:100:10", "5"), ("b", "say:6:200:20", "9"), ("c", "say:7:400:40", "7")]
ONE_ITEM = [("a", "say:5:100:10", "5")]
SLICES = {f"{key}@successful-tasks" for key in SLICED_METRICS}
EXECUTION_COLUMNS = {
    "input_tokens", "output_tokens", "total_tokens", "cached_tokens", "reasoning_tokens", "cost",
    "model_time", "tool_time", "end_to_end_time", "turns", "tool_calls", "retries",
    "peak_context_tokens", "spend_tokens", "spend_attempts",
}  # fmt: skip


def _run(tmp_path, kit, items):
    return kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())


def _outcome(run, out, disclosure):
    evaluator = HarnessOutcomeEvaluator(run.source)
    config = outcome_config(disclosure=disclosure)
    spec = bind_evaluation(
        evaluator, EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=config))
    )
    return run_harness_evaluation(
        evaluator,
        spec,
        publish_evidence(run.evidence, run.store),
        source=run.source,
        output_uri=str(out),
        seed=101,
    )


def _judge(run, out, disclosure):
    judge = SimulatedModel(seed=7)
    evaluator = HarnessJudgeEvaluator(run.source, judge_model=judge)
    config = judge_config(judge_model=judge.identity, rubric="r", disclosure=disclosure)
    spec = bind_evaluation(
        evaluator, EvaluationSpec(evaluator=EvaluatorSpec(name="harness-judge", config=config))
    )
    return run_harness_evaluation(
        evaluator,
        spec,
        publish_evidence(run.evidence, run.store),
        source=run.source,
        output_uri=str(out),
        seed=101,
    )


def _metric_keys(report):
    return {result.key for result in report.metrics}


def _column_keys(report):
    return {column.metric for column in report.task_columns}


def _withheld(report):
    return {(item.metric, item.scope, item.rule) for item in report.withheld}


def test_aggregate_n_tasks_withholds_slices_and_per_task_success(tmp_path, kit):
    evaluation = _outcome(_run(tmp_path, kit, N_ITEMS), tmp_path / "o", "aggregate")
    report = evaluation.report
    assert report.metric("task_success").value == 2 / 3  # n > 1: the run value is released
    assert not _metric_keys(report) & SLICES
    assert _column_keys(report) == EXECUTION_COLUMNS  # execution measurements released
    expected = {(key, "run-value", "successful-tasks-slice") for key in SLICES}
    expected.add(("task_success", "per-task", "per-task-reference-derived"))
    assert _withheld(report) == expected
    # The restricted report holds everything, including the withheld values.
    restricted = evaluation.restricted
    assert _metric_keys(restricted) >= SLICES
    assert "task_success" in _column_keys(restricted)
    assert {r.key for r in restricted.withheld_values} == SLICES


def test_aggregate_single_task_withholds_the_reference_derived_run_value(tmp_path, kit):
    evaluation = _outcome(_run(tmp_path, kit, ONE_ITEM), tmp_path / "o", "aggregate")
    report = evaluation.report
    assert report.metric("task_success") is None
    assert ("task_success", "run-value", "single-task-reference-derived") in _withheld(report)
    assert report.metric("input_tokens").value == 100.0  # execution run value released
    assert evaluation.restricted.metric("task_success").value == 1.0
    assert evaluation.result.metric("task_success").value == 1.0  # result is not released


@pytest.mark.parametrize("items", [N_ITEMS, ONE_ITEM], ids=["n-tasks", "one-task"])
def test_per_task_releases_everything(tmp_path, kit, items):
    evaluation = _outcome(_run(tmp_path, kit, items), tmp_path / "o", "per-task")
    report = evaluation.report
    assert report.withheld == ()
    assert _metric_keys(report) == _metric_keys(evaluation.restricted)
    assert _metric_keys(report) >= SLICES
    assert "task_success" in _column_keys(report)
    assert report.metric("task_success") is not None


def test_judge_aggregate_withholds_per_task_quality_and_single_task_value(tmp_path, kit):
    evaluation = _judge(_run(tmp_path, kit, ONE_ITEM), tmp_path / "o", "aggregate")
    report = evaluation.report
    assert report.task_columns == () and report.metrics == ()
    assert _withheld(report) == {
        ("quality", "run-value", "single-task-reference-derived"),
        ("quality", "per-task", "per-task-reference-derived"),
    }
    n_eval = _judge(_run(tmp_path / "n", kit, N_ITEMS), tmp_path / "on", "aggregate")
    assert n_eval.report.metric("quality") is not None
    assert n_eval.report.column("quality") is None


def test_judge_exchanges_are_never_released(tmp_path, kit):
    evaluation = _judge(_run(tmp_path, kit, N_ITEMS), tmp_path / "o", "per-task")
    assert evaluation.report.column("quality") is not None  # per-task: scores released
    released = evaluation.report_path.read_text()
    assert "judge_exchanges" not in released and "Candidate answer" not in released
    restricted = json.loads(evaluation.restricted_path.read_text())
    assert len(restricted["judge_exchanges"]) == 3


def test_report_files_are_canonical_and_named_for_what_they_are(tmp_path, kit):
    evaluation = _outcome(_run(tmp_path, kit, N_ITEMS), tmp_path / "o", "aggregate")
    assert evaluation.report_path == tmp_path / "o" / "evaluation.json"
    assert evaluation.restricted_path == (
        tmp_path / "o" / "restricted" / "evaluation.restricted.json"
    )
    for path, model in (
        (evaluation.report_path, HarnessEvaluationReport),
        (evaluation.restricted_path, RestrictedEvaluationReport),
    ):
        raw = path.read_bytes()
        loaded = model.model_validate_json(raw)
        assert canonical_bytes(loaded.model_dump(mode="json", by_alias=True)) + b"\n" == raw
    assert json.loads(evaluation.report_path.read_bytes())["label"] == "released"
    assert json.loads(evaluation.restricted_path.read_bytes())["label"] == "restricted"
    assert sorted(p.name for p in (tmp_path / "o").rglob("*")) == [
        "evaluation.json",
        "evaluation.restricted.json",
        "restricted",
    ]


def test_existing_different_report_is_not_overwritten(tmp_path, kit):
    run = _run(tmp_path, kit, N_ITEMS)
    _outcome(run, tmp_path / "o", "aggregate")
    _outcome(run, tmp_path / "o", "aggregate")  # same bytes: fine
    with pytest.raises(EvaluationError) as caught:
        _outcome(run, tmp_path / "o", "per-task")
    assert caught.value.reason == "output-exists"


@pytest.mark.parametrize("disclosure", ["aggregate", "per-task"])
@pytest.mark.parametrize("items", [N_ITEMS, ONE_ITEM], ids=["n-tasks", "one-task"])
def test_provider_feedback_never_carries_restricted_facts(tmp_path, kit, disclosure, items):
    run = _run(tmp_path, kit, items)
    for evaluation in (
        _outcome(run, tmp_path / "o", disclosure),
        _judge(run, tmp_path / "j", disclosure),
    ):
        feedback = provider_feedback(evaluation.report)
        assert not _metric_keys(feedback) & SLICES
        assert _column_keys(feedback) <= EXECUTION_COLUMNS  # no per-task reference score
        for result in feedback.metrics:
            assert not (result.reference_derived and result.n_tasks == 1)
        if len(items) > 1 and evaluation.report.evaluation.evaluator == "harness-outcome":
            assert feedback.metric("task_success").value == 2 / 3
        assert "judge_exchanges" not in feedback.model_dump_json()


def test_provider_feedback_refuses_a_restricted_report(tmp_path, kit):
    evaluation = _outcome(_run(tmp_path, kit, N_ITEMS), tmp_path / "o", "per-task")
    with pytest.raises(EvaluationError) as caught:
        provider_feedback(evaluation.restricted)  # type: ignore[arg-type]
    assert caught.value.reason == "restricted-report"
