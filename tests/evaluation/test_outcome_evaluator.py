"""harness-outcome: task_success by the declared exact-match rule, execution metrics,
every absence reason, spend across all attempts, successful-tasks slices."""

from __future__ import annotations

import pytest

from xaytune.evaluation._outcome import SLICED_METRICS, normalise
from xaytune.evaluation.config import MatchRule
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.harness import Harness

RULE = MatchRule(strip=True, case_sensitive=False, numeric=True)


def evaluate(run, out, config=None, seed=101):
    evaluator = HarnessOutcomeEvaluator(run.source)
    spec = bind_evaluation(
        evaluator,
        EvaluationSpec(
            evaluator=EvaluatorSpec(name="harness-outcome", config=config or outcome_config())
        ),
    )
    subject = publish_evidence(run.evidence, run.store)
    return run_harness_evaluation(
        evaluator, spec, subject, source=run.source, output_uri=str(out), seed=seed
    )


def by_task(evaluation, key):
    return {o.task_id: (o.value, o.absence) for o in evaluation.task_observations[key]}


@pytest.mark.parametrize(
    ("answer", "reference"),
    [("1,000", "1000"), ("1000.0", "1000"), ("1e3", "1000"), (" 42 ", "42"), ("-0", "0"),
     ("Paris", "paris"), ("3.50", "3.5")],
)  # fmt: skip
def test_normalise_equates_declared_variants(answer, reference):
    assert normalise(answer, RULE) == normalise(reference, RULE)


def test_normalise_keeps_what_the_rule_does_not_declare():
    strict = MatchRule(strip=False, case_sensitive=True, numeric=False)
    assert normalise("1,000", strict) != normalise("1000", strict)
    assert normalise("Paris", strict) != normalise("paris", strict)
    assert normalise(" 42", strict) != normalise("42", strict)
    assert normalise("1,5", RULE) == "1,5"  # not a thousands grouping: left as text


def test_three_tasks_hand_computed(tmp_path, kit):
    items = [("a", "say:5:100:10", "5"), ("b", "say:6:200:20", "9"), ("c", "say:7:400:40", "7")]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    evaluation = evaluate(run, tmp_path / "out")
    result = evaluation.result
    # a and c match, b does not: 2/3. Tokens: inputs 100, 200, 400; outputs 10, 20, 40.
    assert result.metric("task_success").value == 2 / 3
    assert result.metric("input_tokens").value == 700 / 3
    assert result.metric("output_tokens").value == 70 / 3
    assert result.metric("total_tokens").value == 770 / 3
    assert result.metric("turns").value == 1.0
    assert result.metric("tool_calls").value == 0.0  # measured zero, not an absence
    assert result.metric("peak_context_tokens").value == 770 / 3
    assert result.metric("spend_tokens").value == 770 / 3
    assert result.metric("spend_attempts").value == 1.0
    # successful-tasks slice: a and c -> inputs (100 + 400) / 2
    assert result.metric("input_tokens@successful-tasks").value == 250.0
    assert result.metric("input_tokens@successful-tasks").n_tasks == 2
    assert by_task(evaluation, "task_success") == {"a": (1.0, None), "b": (0.0, None),
                                                   "c": (1.0, None)}  # fmt: skip
    assert result.determinism == "DETERMINISTIC" and result.evaluator == "harness-outcome"
    assert result.catalog == "xaytune.harness-metrics/v1"
    assert result.metric("quality") is None  # the outcome evaluator does not measure quality


MIXED = [
    ("ok1", "say:5:100:10", "5"),
    ("ok2", "say:1,000:200:20", "1000"),
    ("wrong", "say:8:400:40", "9"),
    ("noanswer", "prose:10:1", "3"),
    ("budget", "say:5:5000:10", "5"),
    ("error", "error", "1"),
    ("transient", "transient", "1"),
    ("overflow", "overflow", "1"),
    ("crash", "crash", "1"),
    ("cancel", "say:2:1:1", "2"),
]
BUDGETED = Harness(
    name="budgeted", system_prompt="End with ANSWER: <n>.", token_budget=1000, model_retries=1
)


@pytest.fixture
def mixed(tmp_path, kit):
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", MIXED),
        tmp_path / "r",
        kit.ScriptedModel(),
        harness=BUDGETED,
        cancelled=["cancel"],
    )
    terminals = {
        e.task_id: (e.status, e.attested.outcome.terminal if e.attested else None)
        for e in run.evidence.entries
    }
    assert terminals == {
        "ok1": ("attested", "answer"),
        "ok2": ("attested", "answer"),
        "wrong": ("attested", "answer"),
        "noanswer": ("attested", "answer"),
        "budget": ("attested", "budget-stop"),
        "error": ("attested", "model-error"),
        # unreachable through every retry: no outcome (partial), a resume retries it
        "transient": ("no-attested-result", None),
        "overflow": ("attested", "context-overflow"),
        "crash": ("no-attested-result", None),
        "cancel": ("attested", "cancelled"),
    }
    return evaluate(run, tmp_path / "out")


def test_task_success_per_outcome(mixed):
    assert by_task(mixed, "task_success") == {
        "ok1": (1.0, None),
        "ok2": (1.0, None),  # "1,000" matches "1000" under numeric canonicalisation
        "wrong": (0.0, None),
        "noanswer": (0.0, None),
        "budget": (0.0, None),
        "error": (0.0, None),
        "transient": (None, "no-attested-result"),
        "overflow": (0.0, None),
        "crash": (None, "no-attested-result"),
        "cancel": (None, "unscored-cancelled"),
    }
    result = mixed.result.metric("task_success")
    assert result.value is None
    assert result.absent_reasons == {"no-attested-result": 2, "unscored-cancelled": 1}


def test_execution_metrics_absent_only_without_attested_result(mixed):
    tokens = by_task(mixed, "input_tokens")
    assert tokens["crash"] == (None, "no-attested-result")
    assert tokens["cancel"] == (0.0, None)  # cancelled before any call: recorded zero
    assert tokens["budget"] == (5000.0, None)
    assert tokens["error"] == (0.0, None)
    assert by_task(mixed, "retries")["transient"] == (None, "no-attested-result")
    assert mixed.result.metric("input_tokens").absent_reasons == {"no-attested-result": 2}


def test_spend_metrics_present_even_without_attested_result(mixed):
    assert by_task(mixed, "spend_tokens")["crash"] == (0.0, None)
    assert by_task(mixed, "spend_attempts")["crash"] == (1.0, None)
    # hand sum over every attempt: 110 + 220 + 440 + 11 + 5010 (+ zeros)
    assert mixed.result.metric("spend_tokens").value == 5791 / 10
    assert mixed.result.metric("spend_attempts").value == 1.0


@pytest.mark.parametrize("key", ["cost", "cached_tokens", "reasoning_tokens", "end_to_end_time"])
def test_not_recorded_metrics_are_absent_on_every_task(mixed, key):
    assert set(by_task(mixed, key).values()) == {(None, "not-recorded")}
    assert mixed.result.metric(key).absent_reasons == {"not-recorded": 10}


def test_slices_absent_when_task_success_is_absent_somewhere(mixed):
    for key in SLICED_METRICS:
        result = mixed.result.metric(f"{key}@successful-tasks")
        assert result.value is None
        assert result.absent_reasons == {"no-attested-result": 2, "unscored-cancelled": 1}


def test_spend_counts_partial_attempts(tmp_path, kit):
    harness = Harness(
        name="retrying",
        system_prompt="Use the calculator.",
        tools=("calculator",),
        attempts_per_task=2,
    )
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", [("f", "flaky", "2")]),
        tmp_path / "r",
        kit.ScriptedModel(),
        harness=harness,
        tools=frozenset({"calculator"}),
    )
    assert [a.status for a in run.evidence.entries[0].attempts] == ["partial", "complete"]
    result = evaluate(run, tmp_path / "out").result
    # attempt 1 (partial): 50 + 5; attempt 2: 50 + 5 and 60 + 6
    assert result.metric("spend_tokens").value == 176.0
    assert result.metric("spend_attempts").value == 2.0
    assert result.metric("input_tokens").value == 110.0  # the attested attempt only
    assert result.metric("tool_calls").value == 1.0
    assert result.metric("turns").value == 2.0


def test_spend_unaccounted_when_an_attempt_was_recovered(tmp_path, kit):
    model = kit.ScriptedModel()
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", [("c", "crash", "7")]),
        tmp_path / "r",
        model,
        before_assembly=kit.reopen_and_resume(model),
    )
    assert [a.recovered for a in run.evidence.entries[0].attempts] == [True, False]
    evaluation = evaluate(run, tmp_path / "out")
    assert by_task(evaluation, "spend_tokens") == {"c": (None, "spend-unaccounted")}
    assert by_task(evaluation, "spend_attempts") == {"c": (2.0, None)}
    assert by_task(evaluation, "task_success") == {"c": (1.0, None)}
    assert evaluation.result.metric("spend_tokens").absent_reasons == {"spend-unaccounted": 1}


def test_result_is_none_when_no_task_is_attested(tmp_path, kit):
    items = [("c1", "crash", "1"), ("c2", "crash", "2")]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    evaluation = evaluate(run, tmp_path / "out")
    assert evaluation.result is None
    assert evaluation.report.metric("spend_attempts").value == 1.0  # spend still reported
    assert evaluation.restricted.metric("task_success").absent_reasons == {"no-attested-result": 2}


def test_outcome_evaluation_is_deterministic(tmp_path, kit):
    items = [("a", "say:5:100:10", "5"), ("b", "say:6:200:20", "9")]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    first = evaluate(run, tmp_path / "one")
    second = evaluate(run, tmp_path / "two")
    assert first.report_path.read_bytes() == second.report_path.read_bytes()
    assert first.restricted_path.read_bytes() == second.restricted_path.read_bytes()
