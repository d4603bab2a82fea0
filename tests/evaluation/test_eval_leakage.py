"""Leakage: held-out references (canary strings no model can produce) appear only in
restricted files, never in a released file or in provider feedback."""

from __future__ import annotations

from pathlib import Path

import pytest

from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessJudgeEvaluator,
    HarnessOutcomeEvaluator,
    ReferenceEgressGrant,
    bind_evaluation,
    judge_config,
    outcome_config,
    provider_feedback,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.harness import Harness
from xaytune.models import SimulatedModel

QUESTIONS = [
    "Start with 17. Add 25. What is the result?",
    "Start with 40. Subtract 12. Multiply by 3. What is the result?",
    "Convert 2 hours to minutes.",
    "Start with 9. Multiply by 7. Add 1. What is the result?",
]
CANARIES = [f"CANARY-7f3a9c-{i:02d}-Q8ZK" for i in range(len(QUESTIONS))]
HARNESS = Harness(name="marker", system_prompt="Think. End with ANSWER: <number>.")


def _files(root: Path) -> tuple[list[Path], list[Path]]:
    files = [p for p in root.rglob("*") if p.is_file()]
    restricted = [p for p in files if "restricted" in p.relative_to(root).parts]
    return [p for p in files if p not in restricted], restricted


@pytest.mark.parametrize("disclosure", ["aggregate", "per-task"])
def test_references_appear_only_in_restricted_files(tmp_path, kit, disclosure):
    items = [(f"q{i}", q, c) for i, (q, c) in enumerate(zip(QUESTIONS, CANARIES, strict=True))]
    source = kit.make_suite(tmp_path / "suite", items)
    assert set(source.reference_strings()) == set(CANARIES)
    run = kit.run_suite(source, tmp_path / "run", SimulatedModel(seed=101), harness=HARNESS)
    subject = publish_evidence(run.evidence, run.store)
    out = tmp_path / "evals"

    outcome = HarnessOutcomeEvaluator(source)
    outcome_spec = bind_evaluation(
        outcome,
        EvaluationSpec(
            evaluator=EvaluatorSpec(
                name="harness-outcome", config=outcome_config(disclosure=disclosure)
            )
        ),
    )
    outcome_eval = run_harness_evaluation(
        outcome, outcome_spec, subject, source=source, output_uri=str(out / "outcome"), seed=101
    )
    assert outcome_eval.result.metric("task_success").value == 0.0  # canaries never match

    judge_model = SimulatedModel(seed=7)
    grant = ReferenceEgressGrant.issue(
        suite_digest=source.digest, judge_model=judge_model.identity, issued_by="test-host"
    )
    judge = HarnessJudgeEvaluator(source, judge_model=judge_model, grants=[grant])
    config = judge_config(
        judge_model=judge_model.identity,
        rubric="Score agreement with the reference.",
        reference_access="reference",
        disclosure=disclosure,
    )
    judge_spec = bind_evaluation(
        judge,
        EvaluationSpec(evaluator=EvaluatorSpec(name="harness-judge", config=config), grant=grant),
    )
    judge_eval = run_harness_evaluation(
        judge, judge_spec, subject, source=source, output_uri=str(out / "judge"), seed=101
    )

    released, restricted = _files(out)
    assert {p.name for p in released} == {"evaluation.json"}
    assert {p.name for p in restricted} == {"evaluation.restricted.json"}
    for path in released:
        text = path.read_text()
        for canary in CANARIES:
            assert canary not in text, f"{canary} leaked into {path}"
    for evaluation in (outcome_eval, judge_eval):
        feedback = provider_feedback(evaluation.report).model_dump_json()
        report = evaluation.report.model_dump_json()
        for canary in CANARIES:
            assert canary not in feedback and canary not in report
    # The references went where they are allowed: the judge's restricted exchanges.
    judge_restricted = (out / "judge" / "restricted" / "evaluation.restricted.json").read_text()
    assert all(canary in judge_restricted for canary in CANARIES)
    # And never into the run's evidence: the harness never saw them.
    for path in run.store.root.rglob("*"):
        if path.is_file():
            assert not any(c.encode() in path.read_bytes() for c in CANARIES)
