"""The specification's "Running one replicate" and "Measuring it" blocks, as written.

Only the two absolute paths are moved under tmp_path; ``outcome_config`` comes from
the helper. Also: the subject is loaded and re-verified on every evaluation.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.core.domain.measurement import EvaluationResult
from xaytune.core.errors import EvaluationError, EvidenceError
from xaytune.core.harness_evaluation import bind_task
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessEvaluationReport,
    HarnessOutcomeEvaluator,
    RestrictedEvaluationReport,
    bind_evaluation,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.evaluation.harness import outcome_config as make_outcome_config
from xaytune.harness import (
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
    HarnessRunner,
    Toolbox,
    TrajectoryRecordingSpec,
)
from xaytune.harness.evidence import HarnessEvidenceStore, assemble_evidence
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.trajectory import WRITER
from xaytune.models import SimulatedModel
from xaytune.suites import builtin_suite_path


def _replicate(tmp_path: Path):
    source = SuiteSource(builtin_suite_path("arith-tools"))
    suite = source.suite
    compiler, runner = HarnessCompiler(), HarnessRunner()
    toolbox = Toolbox.default()
    model = SimulatedModel(seed=101)
    harness = Harness(
        name="calc",
        system_prompt="Use the calculator tool for every step. End with ANSWER: <number>.",
        tools=("calculator",),
    )
    content = HarnessContent()
    tools = frozenset({"calculator"})

    # --- spec: Running one replicate (store path moved under tmp_path) ---
    store = HarnessEvidenceStore(Path(tmp_path / "runs/candidate-a/seed-101"))
    sampling = SeededSample(count=20)
    assignment = record_assignment(suite, sampling, seed=101)
    specs = []
    for task_id in assignment.task_ids:
        task, binding = bind_task(suite, assignment, task_id)
        spec = compiler.compile(harness, HarnessCompilationContext(
            task=task, seed=101, replicate=0, authorized_tools=tools, content=content,
            output_uri=str(store.task_output(binding.position)),
            trajectory=TrajectoryRecordingSpec(writer=WRITER),
            task_binding=binding, suite=suite,
        ))  # fmt: skip
        runner.run(spec, model=model, toolbox=toolbox, authorized_tools=tools)
        specs.append(spec)

    evidence = assemble_evidence(specs, suite, sampling, assignment, source, store)
    return source, store, evidence


def test_measuring_it_block_runs_as_written(tmp_path):
    source, store, evidence = _replicate(tmp_path)
    outcome_config = make_outcome_config(name="harness-outcome")
    evals = tmp_path / "evals"

    # --- spec: Measuring it (output path moved under tmp_path) ---
    # fmt: off
    subject = publish_evidence(evidence, store)          # kind "agent_run_evidence"
    evaluator = HarnessOutcomeEvaluator(source)
    spec = bind_evaluation(evaluator, EvaluationSpec(evaluator=EvaluatorSpec(
        name="harness-outcome", config=outcome_config)))  # supports → resolve → supports
    evaluation = run_harness_evaluation(
        evaluator, spec, subject, source=source, output_uri=str(evals / "a-101"), seed=101,
    )
    evaluation.result      # EvaluationResult: run-level MetricResults, or None  # noqa: B018
    evaluation.report      # HarnessEvaluationReport: released per disclosure  # noqa: B018
    evaluation.restricted  # RestrictedEvaluationReport: per-task scores, judge exchanges  # noqa: B018
    # fmt: on

    assert subject.kind == "agent_run_evidence"
    assert isinstance(evaluation.result, EvaluationResult)
    assert isinstance(evaluation.report, HarnessEvaluationReport)
    assert isinstance(evaluation.restricted, RestrictedEvaluationReport)
    assert evaluation.result.subject_digest == evidence.digest
    assert evaluation.result.seed == 101 and evaluation.report.evaluation.n_tasks == 20
    # An independent count of matches (the smoke script's rule: plain string equality).
    matches = sum(
        source.reference(e.task_id).answer == e.attested.outcome.answer for e in evidence.entries
    )
    assert evaluation.result.metric("task_success").value == matches / 20
    assert (evals / "a-101" / "evaluation.json").is_file()
    assert (evals / "a-101" / "restricted" / "evaluation.restricted.json").is_file()
    assert len(evaluation.task_observations["task_success"]) == 20


def _bound(source):
    evaluator = HarnessOutcomeEvaluator(source)
    spec = bind_evaluation(
        evaluator,
        EvaluationSpec(
            evaluator=EvaluatorSpec(name="harness-outcome", config=make_outcome_config())
        ),
    )
    return evaluator, spec


def test_edited_subject_is_refused(tmp_path, kit):
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", [("a", "say:5:1:1", "5")]),
        tmp_path / "r",
        kit.ScriptedModel(),
    )
    subject = publish_evidence(run.evidence, run.store)
    path = Path(subject.path)
    path.write_bytes(path.read_bytes().replace(b'"answer":"5"', b'"answer":"6"'))
    evaluator, spec = _bound(run.source)
    with pytest.raises(EvidenceError) as caught:
        run_harness_evaluation(
            evaluator, spec, subject, source=run.source, output_uri=str(tmp_path / "o"), seed=101
        )
    assert caught.value.reason == "subject-tampered"


def test_subject_is_reverified_against_its_store(tmp_path, kit):
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", [("a", "say:5:1:1", "5")]),
        tmp_path / "r",
        kit.ScriptedModel(),
    )
    subject = publish_evidence(run.evidence, run.store)
    attempt = run.store.attempts(0)[0].path
    parts = AttemptParts.of(attempt.read_bytes(), str(attempt))
    assert parts.seal is not None
    # remove the seal line: the store no longer backs the published record
    attempt.write_bytes(dataclasses.replace(parts, seal=None).join())
    evaluator, spec = _bound(run.source)
    with pytest.raises(EvidenceError):
        run_harness_evaluation(
            evaluator, spec, subject, source=run.source, output_uri=str(tmp_path / "o"), seed=101
        )
    assert not (tmp_path / "o").exists()


def test_seed_other_than_the_runs_is_refused(tmp_path, kit):
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", [("a", "say:5:1:1", "5")]),
        tmp_path / "r",
        kit.ScriptedModel(),
    )
    evaluator, spec = _bound(run.source)
    with pytest.raises(EvaluationError) as caught:
        run_harness_evaluation(
            evaluator,
            spec,
            publish_evidence(run.evidence, run.store),
            source=run.source,
            output_uri=str(tmp_path / "o"),
            seed=102,
        )
    assert caught.value.reason == "seed-mismatch"


def test_source_of_another_suite_is_refused(tmp_path, kit):
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", [("a", "say:5:1:1", "5")]),
        tmp_path / "r",
        kit.ScriptedModel(),
    )
    other = kit.make_suite(tmp_path / "s2", [("a", "say:5:1:1", "6")], name="other")
    evaluator, spec = _bound(run.source)
    with pytest.raises(EvaluationError) as caught:
        run_harness_evaluation(
            evaluator,
            spec,
            publish_evidence(run.evidence, run.store),
            source=other,
            output_uri=str(tmp_path / "o"),
            seed=101,
        )
    assert caught.value.reason == "suite-mismatch"
