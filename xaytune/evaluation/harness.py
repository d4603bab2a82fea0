"""Measuring harness runs: bind an evaluation, run it on a published subject.

spec: Measuring it. Usage::

    subject = publish_evidence(evidence, store)          # kind "agent_run_evidence"
    evaluator = HarnessOutcomeEvaluator(source)
    spec = bind_evaluation(evaluator, EvaluationSpec(evaluator=EvaluatorSpec(
        name="harness-outcome", config=outcome_config)))  # supports -> resolve -> supports
    evaluation = run_harness_evaluation(
        evaluator, spec, subject, source=source, output_uri="/evals/a-101", seed=101,
    )
    evaluation.result      # EvaluationResult: run-level MetricResults, or None
    evaluation.report      # HarnessEvaluationReport: released per disclosure
    evaluation.restricted  # RestrictedEvaluationReport: per-task scores, judge exchanges

``result`` is None when no task of the run is attested: there is no outcome to
measure, only spend (which the reports still carry).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.domain.measurement import EvaluationResult, TaskObservation
from xaytune.core.errors import EvaluationError
from xaytune.evaluation._common import HarnessEvaluator
from xaytune.evaluation._disclosure import apply_aggregate_rules, provider_feedback
from xaytune.evaluation._grants import ReferenceEgressGrant
from xaytune.evaluation._judge import HarnessJudgeEvaluator
from xaytune.evaluation._outcome import HarnessOutcomeEvaluator
from xaytune.evaluation._reports import (
    EvaluationHeader,
    HarnessEvaluationReport,
    ProviderFeedback,
    RestrictedEvaluationReport,
    TaskColumn,
    evaluation_files,
    output_dir,
    write_reports,
)
from xaytune.evaluation.config import (
    BoundEvaluation,
    EvaluationSpec,
    EvaluatorSpec,
    config_fingerprint,
    judge_config,
    outcome_config,
)
from xaytune.harness.evidence import HarnessRunEvidence, verify_run_evidence
from xaytune.harness.evidence.publish import PublishedSubject, load_published, publish_evidence
from xaytune.harness.evidence.store import HarnessEvidenceStore

__all__ = [
    "BoundEvaluation",
    "EvaluationSpec",
    "EvaluatorSpec",
    "HarnessEvaluation",
    "HarnessEvaluationReport",
    "HarnessEvaluator",
    "HarnessJudgeEvaluator",
    "HarnessOutcomeEvaluator",
    "ProviderFeedback",
    "PublishedSubject",
    "ReferenceEgressGrant",
    "RestrictedEvaluationReport",
    "bind_evaluation",
    "judge_config",
    "outcome_config",
    "provider_feedback",
    "publish_evidence",
    "recompute_harness_evaluation",
    "run_harness_evaluation",
]


def _refuse_unsupported(evaluator: HarnessEvaluator, what: str) -> EvaluationError:
    return EvaluationError(
        "unsupported-evaluator", f"evaluator {evaluator.name} does not support {what}"
    )


def bind_evaluation(evaluator: HarnessEvaluator, spec: EvaluationSpec) -> BoundEvaluation:
    """supports -> resolve -> supports, then ``evaluator.prepare``.

    Refusals: ``unsupported-evaluator`` (the spec names another evaluator, or its
    config is another evaluator's kind), the config refusals of resolve
    (``non-canonical-config``, ``invalid-config``, ``rubric-digest-mismatch``), and
    the evaluator's own (judge: ``judge-model-mismatch``, the ``grant-*`` reasons).
    Nothing is sent to any model while binding.
    """
    if not isinstance(spec, EvaluationSpec):
        raise EvaluationError("invalid-config", "bind_evaluation takes an EvaluationSpec")
    if not evaluator.supports(spec):
        raise _refuse_unsupported(evaluator, f"evaluator spec {spec.evaluator.name!r}")
    config = evaluator.resolve(spec.evaluator.config)
    bound = BoundEvaluation(
        evaluator=spec.evaluator.name,
        kind=config.kind,
        determinism=evaluator.determinism,
        config=config.model_dump(mode="json"),
        fingerprint=config_fingerprint(config),
        disclosure=config.metadata.disclosure,
        grant=spec.grant,
    )
    if not evaluator.supports(bound):
        raise _refuse_unsupported(evaluator, f"a {config.kind} config")
    return evaluator.prepare(bound)


@dataclass(frozen=True)
class HarnessEvaluation:
    """One evaluation of one published subject: result, reports and their files."""

    result: EvaluationResult | None
    report: HarnessEvaluationReport
    restricted: RestrictedEvaluationReport
    report_path: Path
    restricted_path: Path

    @cached_property
    def task_observations(self) -> Mapping[str, tuple[TaskObservation, ...]]:
        """RESTRICTED: per metric key (every all-tasks metric), one observation per
        task, built on first access of a key. For ``ReplicateRuns`` pass the keys the
        comparison needs: ``{k: evaluation.task_observations[k] for k in keys}``."""
        return self.restricted.task_observations()


def _load_subject(
    subject: PublishedSubject, source: SuiteSource, seed: int
) -> tuple[HarnessRunEvidence, HarnessEvidenceStore]:
    """The subject's evidence, verified against ``source`` and its store (returned too:
    an evaluator may read an attested attempt's calls from it)."""
    _check_kind(subject)
    evidence = load_published(subject)
    store = HarnessEvidenceStore(subject.store_root)
    verify_run_evidence(evidence, source.suite, source, store)
    return _of_seed(subject, evidence, seed), store


def _check_kind(subject: PublishedSubject) -> None:
    if not isinstance(subject, PublishedSubject) or subject.kind != "agent_run_evidence":
        raise EvaluationError(
            "unsupported-subject", f"subject {subject!r} is not published agent_run_evidence"
        )


def _of_seed(
    subject: PublishedSubject, evidence: HarnessRunEvidence, seed: int
) -> HarnessRunEvidence:
    """``evidence``, refused (``seed-mismatch``) unless it is the run of ``seed``."""
    if evidence.seed != seed:
        raise EvaluationError(
            "seed-mismatch",
            f"subject {subject.digest} is the run of seed {evidence.seed}, not {seed}",
        )
    return evidence


def run_harness_evaluation(
    evaluator: HarnessEvaluator,
    spec: BoundEvaluation | EvaluationSpec,
    subject: PublishedSubject,
    *,
    source: SuiteSource,
    output_uri: str,
    seed: int,
) -> HarnessEvaluation:
    """Evaluate a published run and write its reports under ``output_uri``.

    Order: re-check the bound evaluation (config fingerprint, judge identity and
    grant, against this evaluator's host grants); load the subject (refused if
    edited) and re-verify it against ``source`` and its store; only then read
    references and measure. ``seed`` must be the run's seed. An unbound
    :class:`EvaluationSpec` is bound first.
    """
    bound = _checked_bound(evaluator, spec, source)
    directory = output_dir(output_uri)
    result, report, restricted = _measure(evaluator, bound, subject, source=source, seed=seed)
    report_path, restricted_path = write_reports(directory, report, restricted)
    return HarnessEvaluation(result, report, restricted, report_path, restricted_path)


def recompute_harness_evaluation(
    evaluator: HarnessEvaluator,
    spec: BoundEvaluation | EvaluationSpec,
    subject: PublishedSubject,
    *,
    source: SuiteSource,
    directory: Path,
    seed: int,
    verified: HarnessRunEvidence | None = None,
) -> tuple[HarnessEvaluation, dict[Path, bytes]]:
    """What :func:`run_harness_evaluation` would give and write under ``directory``,
    without writing it: the evaluation, and each report file's path and bytes (what
    an auditor compares with the files on disk).

    ``verified``: the subject's evidence, when the caller has loaded it and verified
    it against ``source`` and its store already (an auditor verifies each store
    once); otherwise it is loaded and verified here."""
    bound = _checked_bound(evaluator, spec, source)
    result, report, restricted = _measure(
        evaluator, bound, subject, source=source, seed=seed, verified=verified
    )
    (restricted_path, restricted_raw), (report_path, report_raw) = evaluation_files(
        directory, report, restricted
    )
    evaluation = HarnessEvaluation(result, report, restricted, report_path, restricted_path)
    return evaluation, {restricted_path: restricted_raw, report_path: report_raw}


def _checked_bound(
    evaluator: HarnessEvaluator, spec: BoundEvaluation | EvaluationSpec, source: SuiteSource
) -> BoundEvaluation:
    """``spec`` bound (if it is not yet), supported by ``evaluator``, on its suite."""
    bound = bind_evaluation(evaluator, spec) if isinstance(spec, EvaluationSpec) else spec
    if not isinstance(bound, BoundEvaluation) or not evaluator.supports(bound):
        raise _refuse_unsupported(evaluator, f"the bound evaluation {bound!r}")
    if source.digest != evaluator.source.digest:
        raise EvaluationError(
            "suite-mismatch",
            f"source {source.suite.name} {source.digest} is not the evaluator's "
            f"{evaluator.source.digest}",
        )
    return bound


def _measure(
    evaluator: HarnessEvaluator,
    bound: BoundEvaluation,
    subject: PublishedSubject,
    *,
    source: SuiteSource,
    seed: int,
    verified: HarnessRunEvidence | None = None,
) -> tuple[EvaluationResult | None, HarnessEvaluationReport, RestrictedEvaluationReport]:
    """Load and re-verify the subject (unless the caller has: ``verified``), then
    measure it: the result and both reports."""
    config = evaluator.check_execution(bound)
    if verified is None:
        evidence, store = _load_subject(subject, source, seed)
    else:
        _check_kind(subject)
        evidence = _of_seed(subject, verified, seed)
        store = HarnessEvidenceStore(subject.store_root)
    del verified
    measurement = evaluator.measure(bound, evidence, seed=seed, store=store)
    subject_facts = (
        evidence.digest,
        evidence.suite_name,
        evidence.suite_digest,
        evidence.assignment_digest,
        evidence.seed,
    )
    del evidence  # measured: a large run's evidence is not held while reports are written
    subject_digest, suite_name, suite_digest, assignment_digest, run_seed = subject_facts
    header = EvaluationHeader(
        evaluator=bound.evaluator,
        evaluator_fingerprint=bound.fingerprint,
        determinism=bound.determinism,
        catalog=measurement.catalog,
        disclosure=bound.disclosure,
        config=config.model_dump(mode="json"),
        subject_digest=subject_digest,
        suite_name=suite_name,
        suite_digest=suite_digest,
        assignment_digest=assignment_digest,
        seed=run_seed,
        n_tasks=len(measurement.task_ids),
        attested_tasks=measurement.attested,
    )
    columns = tuple(TaskColumn.of(column) for column in measurement.columns)
    released_metrics, released_columns, withheld = apply_aggregate_rules(
        measurement.results, columns, n_tasks=header.n_tasks
    )
    restricted = RestrictedEvaluationReport(
        evaluation=header,
        metrics=measurement.results,
        task_ids=measurement.task_ids,
        task_columns=columns,
        withheld=withheld if bound.disclosure == "aggregate" else (),
        judge_exchanges=measurement.exchanges,
        scorer_reasons=measurement.scorer_reasons,
    )
    if bound.disclosure == "per-task":
        released_metrics, released_columns, withheld = measurement.results, columns, ()
    report = HarnessEvaluationReport(
        evaluation=header,
        metrics=released_metrics,
        task_ids=measurement.task_ids,
        task_columns=released_columns,
        withheld=withheld,
    )
    result = None
    if measurement.attested:
        result = EvaluationResult(
            evaluator=bound.evaluator,
            evaluator_fingerprint=bound.fingerprint,
            determinism=bound.determinism,
            catalog=measurement.catalog,
            subject_digest=subject_digest,
            suite_digest=suite_digest,
            assignment_digest=assignment_digest,
            seed=run_seed,
            metrics=measurement.results,
        )
    return result, report, restricted
