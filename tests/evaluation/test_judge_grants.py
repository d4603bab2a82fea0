"""Reference egress grants: every refusal at prepare (bind) and at execution, with
nothing sent to the judge and no reference read."""

from __future__ import annotations

import pytest

from xaytune.core.errors import EvaluationError
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessJudgeEvaluator,
    HarnessOutcomeEvaluator,
    ReferenceEgressGrant,
    bind_evaluation,
    judge_config,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.models import SimulatedModel


@pytest.fixture
def setup(tmp_path, kit):
    suite = kit.make_suite(tmp_path / "s", [("a", "say:5:1:1", "5"), ("b", "say:6:1:1", "7")])
    source = kit.SpySource(suite.path)
    run = kit.run_suite(source, tmp_path / "r", kit.ScriptedModel())
    judge = kit.CountingModel(SimulatedModel(seed=7))
    grant = ReferenceEgressGrant.issue(
        suite_digest=source.digest, judge_model=judge.identity, issued_by="test-host"
    )
    source.reads = 0
    return source, run, judge, grant


def _spec(judge, grant=None, access="reference", name="harness-judge"):
    config = judge_config(judge_model=judge.identity, rubric="r", reference_access=access)
    return EvaluationSpec(evaluator=EvaluatorSpec(name=name, config=config), grant=grant)


def _refused_at_bind(evaluator, spec) -> str:
    with pytest.raises(EvaluationError) as caught:
        bind_evaluation(evaluator, spec)
    return caught.value.reason


def _refused_at_run(evaluator, bound, run, tmp_path) -> str:
    subject = publish_evidence(run.evidence, run.store)
    with pytest.raises(EvaluationError) as caught:
        run_harness_evaluation(
            evaluator, bound, subject, source=run.source, output_uri=str(tmp_path / "o"), seed=101
        )
    assert not (tmp_path / "o").exists()  # no report is written on a refusal
    return caught.value.reason


def _nothing_sent(source, judge):
    assert judge.requests == []
    assert source.reads == 0


def test_grant_allows_reference_egress(setup, tmp_path):
    source, run, judge, grant = setup
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    bound = bind_evaluation(evaluator, _spec(judge, grant))
    subject = publish_evidence(run.evidence, run.store)
    run_harness_evaluation(
        evaluator, bound, subject, source=source, output_uri=str(tmp_path / "o"), seed=101
    )
    assert len(judge.requests) == 2 and source.reads == 2


def test_prepare_refuses_missing_grant(setup):
    source, _, judge, grant = setup
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    assert _refused_at_bind(evaluator, _spec(judge, None)) == "grant-missing"
    _nothing_sent(source, judge)


def test_prepare_refuses_grant_for_another_suite_or_judge(setup):
    source, _, judge, _ = setup
    other_suite = ReferenceEgressGrant.issue(
        suite_digest="sha256:" + "0" * 64, judge_model=judge.identity, issued_by="test-host"
    )
    other_judge = ReferenceEgressGrant.issue(
        suite_digest=source.digest, judge_model=SimulatedModel(seed=9).identity, issued_by="h"
    )
    for grant in (other_suite, other_judge):
        evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
        assert _refused_at_bind(evaluator, _spec(judge, grant)) == "grant-missing"
    _nothing_sent(source, judge)


def test_prepare_refuses_altered_grant(setup):
    source, _, judge, grant = setup
    altered = grant.model_copy(update={"issued_by": "mallory"})
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    assert _refused_at_bind(evaluator, _spec(judge, altered)) == "grant-altered"
    _nothing_sent(source, judge)


def test_prepare_refuses_unissued_grant(setup):
    source, _, judge, grant = setup
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=())
    assert _refused_at_bind(evaluator, _spec(judge, grant)) == "grant-unissued"
    _nothing_sent(source, judge)


def test_prepare_refuses_grant_on_judge_without_reference_access(setup):
    source, _, judge, grant = setup
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    assert _refused_at_bind(evaluator, _spec(judge, grant, access="none")) == "grant-unneeded"
    _nothing_sent(source, judge)


def test_prepare_refuses_grant_on_outcome_evaluation(setup):
    source, _, _, grant = setup
    spec = EvaluationSpec(
        evaluator=EvaluatorSpec(name="harness-outcome", config=outcome_config()), grant=grant
    )
    assert _refused_at_bind(HarnessOutcomeEvaluator(source), spec) == "grant-unneeded"
    assert source.reads == 0


def test_host_refuses_altered_grant_among_its_own(setup):
    source, _, judge, grant = setup
    with pytest.raises(EvaluationError) as caught:
        HarnessJudgeEvaluator(
            source, judge_model=judge, grants=[grant.model_copy(update={"issued_by": "x"})]
        )
    assert caught.value.reason == "grant-altered"


def test_execution_refuses_grant_the_executing_host_did_not_issue(setup, tmp_path):
    source, run, judge, grant = setup
    preparing = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    bound = bind_evaluation(preparing, _spec(judge, grant))
    executing = HarnessJudgeEvaluator(source, judge_model=judge, grants=())
    assert _refused_at_run(executing, bound, run, tmp_path) == "grant-unissued"
    _nothing_sent(source, judge)


def test_execution_refuses_grant_altered_after_prepare(setup, tmp_path):
    source, run, judge, grant = setup
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    bound = bind_evaluation(evaluator, _spec(judge, grant))
    altered = bound.model_copy(
        update={"grant": grant.model_copy(update={"suite_digest": "sha256:" + "1" * 64})}
    )
    assert _refused_at_run(evaluator, altered, run, tmp_path) == "grant-altered"
    _nothing_sent(source, judge)


def test_execution_refuses_host_grant_differing_under_the_same_digest(setup, tmp_path):
    source, run, judge, grant = setup
    forged = ReferenceEgressGrant.issue(
        suite_digest=source.digest, judge_model=judge.identity, issued_by="forger"
    )
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    bound = bind_evaluation(evaluator, _spec(judge, grant))
    # A grant whose digest claims to be the issued one but whose fields are another's.
    swapped = bound.model_copy(update={"grant": forged.model_copy(update={"digest": grant.digest})})
    assert _refused_at_run(evaluator, swapped, run, tmp_path) == "grant-altered"
    _nothing_sent(source, judge)


def test_execution_refuses_grant_removed_after_prepare(setup, tmp_path):
    source, run, judge, grant = setup
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    bound = bind_evaluation(evaluator, _spec(judge, grant))
    stripped = bound.model_copy(update={"grant": None})
    assert _refused_at_run(evaluator, stripped, run, tmp_path) == "grant-missing"
    _nothing_sent(source, judge)


def test_execution_refuses_grant_added_to_evaluation_without_reference(setup, tmp_path):
    source, run, judge, grant = setup
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    bound = bind_evaluation(evaluator, _spec(judge, None, access="none"))
    assert _refused_at_run(evaluator, bound.model_copy(update={"grant": grant}), run, tmp_path) == (
        "grant-unneeded"
    )
    _nothing_sent(source, judge)


def test_execution_refuses_judge_swapped_after_prepare(setup, tmp_path, kit):
    source, run, judge, grant = setup
    bound = bind_evaluation(
        HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant]), _spec(judge, grant)
    )
    other = kit.CountingModel(SimulatedModel(seed=99))
    executing = HarnessJudgeEvaluator(source, judge_model=other, grants=[grant])
    assert _refused_at_run(executing, bound, run, tmp_path) == "judge-model-mismatch"
    _nothing_sent(source, judge)
    assert other.requests == []


def test_execution_refuses_config_edited_after_bind(setup, tmp_path):
    source, run, judge, grant = setup
    evaluator = HarnessJudgeEvaluator(source, judge_model=judge, grants=[grant])
    bound = bind_evaluation(evaluator, _spec(judge, grant))
    config = {**bound.config, "metadata": {"name": "renamed", "disclosure": "aggregate"}}
    edited = bound.model_copy(update={"config": config})
    assert _refused_at_run(evaluator, edited, run, tmp_path) == "fingerprint-mismatch"
    _nothing_sent(source, judge)
