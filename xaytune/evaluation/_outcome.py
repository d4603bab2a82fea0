"""``harness-outcome``: task_success by the declared scorer, and every execution
metric (DETERMINISTIC).

The scorer (``spec.scorer``; contract and built-ins in ``xaytune.evaluation.scorers``,
default ``exact``) is resolved when the evaluation is bound, and its code identity is
pinned into the bound config (``spec.scorer.code``), so the fingerprint covers the
scorer's code (C3). Every later check and each measurement resolve it again and
refuse ``scorer-mismatch`` when its code is no longer the pinned one; a measurement
instantiates it once.

Per entry of the verified evidence:

* attested, terminal ``answer`` with an answer: task_success 1 when the scorer says
  success on (answer, reference), else 0; a scorer that raises or returns something
  other than a bool or a Score refuses the evaluation (``scorer-failed``);
* attested, ``answer`` without an extracted answer, ``budget-stop``,
  ``context-overflow``, ``model-error``: task_success 0 (spec: a failure to answer
  scores 0; there is no answer to judge, which is the judge's not-applicable);
* attested, ``cancelled``: task_success absent ``unscored-cancelled``; the execution
  metrics of the attempt are still recorded;
* no-attested-result: task_success and execution metrics absent
  ``no-attested-result``.

Execution metrics come from the attested attempt's spend. The spend metrics
(``spend_tokens``, ``spend_attempts``) count ALL attempts, partial ones included, so
they exist for every entry; ``spend_tokens`` is ``spend-unaccounted`` when an attempt
was recovered after a crash (its spend is rebuilt from whole events only, a lower
bound). ``quality`` is not reported: this evaluator does not measure it, and the
judge's ``quality`` must be the only one in a replicate (comparison refuses a metric
reported twice).

Successful-tasks slices: the mean of each recorded execution metric over the tasks
with task_success 1 (``metric@successful-tasks``); the disclosure rules withhold
them. When task_success is absent on any task, which tasks succeeded is unknown and
every slice is absent (see ``metrics.slice_result``).

The catalog is the config's (``spec.metrics``): v1 by default, exactly as above;
v2 adds what :mod:`xaytune.evaluation._catalog_v2` measures (usage details, wall
time, time per model call, dollars at the config's price table) and slices every
execution metric (``cost@successful-tasks`` is the mean cost of a success).
"""

from __future__ import annotations

from typing import Any, ClassVar

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import EvaluationError
from xaytune.evaluation._catalog_v2 import v2_columns
from xaytune.evaluation._common import Determinism, EvaluatorBase, Measurement, ScorerReason
from xaytune.evaluation.config import (
    OUTCOME_KIND,
    BoundEvaluation,
    EvaluationConfig,
    OutcomeEvaluationConfig,
    resolve_config,
)
from xaytune.evaluation.metrics import (
    CATALOG_ID,
    EXECUTION_METRICS,
    EXECUTION_METRICS_V2,
    NOT_RECORDED_V1,
    Column,
    absence_code,
    run_result,
    slice_result,
)
from xaytune.evaluation.scorers import ResolvedScorer, normalise, resolve_scorer
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.store import HarnessEvidenceStore

__all__ = ["SLICED_METRICS", "SLICED_METRICS_V2", "HarnessOutcomeEvaluator", "normalise"]

# Execution metrics read from the attested attempt's spend (key -> per-spend value).
_SPEND_FIELDS: tuple[tuple[str, str, float], ...] = (
    ("input_tokens", "input_tokens", 1.0),
    ("output_tokens", "output_tokens", 1.0),
    ("model_time", "model_time_us", 1e-6),
    ("tool_time", "tool_time_us", 1e-6),
    ("turns", "turns", 1.0),
    ("tool_calls", "tool_calls", 1.0),
    ("retries", "retries", 1.0),
    ("peak_context_tokens", "peak_context_tokens", 1.0),
)
# Slices of metrics never recorded in v1 would say nothing: they are not produced.
SLICED_METRICS: tuple[str, ...] = tuple(k for k in EXECUTION_METRICS if k not in NOT_RECORDED_V1)
SLICED_METRICS_V2: tuple[str, ...] = EXECUTION_METRICS_V2
_NO_ATTESTED = absence_code("no-attested-result")
_CANCELLED = absence_code("unscored-cancelled")
_UNACCOUNTED = absence_code("spend-unaccounted")


class HarnessOutcomeEvaluator(EvaluatorBase):
    """``harness-outcome`` over runs of the suite ``source`` (see module docstring)."""

    name: ClassVar[str] = "harness-outcome"
    kind: ClassVar[str] = OUTCOME_KIND
    determinism: ClassVar[Determinism] = "DETERMINISTIC"

    def __init__(self, source: SuiteSource) -> None:
        self.source = source

    def resolve(self, config: dict[str, Any]) -> EvaluationConfig:
        """The canonical config, typed, with its scorer resolved and its code identity
        pinned (``spec.scorer.code``); a given ``code`` must be the current one
        (``scorer-mismatch``). Refuses what ``resolve_config`` and
        :func:`~xaytune.evaluation.scorers.resolve_scorer` refuse."""
        resolved = resolve_config(config)
        if not isinstance(resolved, OutcomeEvaluationConfig):
            return resolved  # another evaluator's kind: bind_evaluation refuses it
        scorer = _scorer(resolved)
        scorer.check_tasks(self.source.suite.tasks)  # scorer-unsuited, before any model call
        plain = resolved.model_dump(mode="json")
        plain["spec"]["scorer"]["code"] = scorer.code.model_dump(mode="json")
        return resolve_config(plain)

    def prepare(self, bound: BoundEvaluation) -> BoundEvaluation:
        """Nothing leaves the process; a reference egress grant here is refused."""
        self.check_execution(bound)
        return bound

    def check_execution(self, bound: BoundEvaluation) -> EvaluationConfig:
        """The bound config, re-resolved, its scorer still the pinned code; a grant on
        it is refused (nothing is sent)."""
        return self._checked(bound)[0]

    def _checked(self, bound: BoundEvaluation) -> tuple[EvaluationConfig, ResolvedScorer | None]:
        config = bound.resolved()
        if bound.grant is not None:
            raise EvaluationError(
                "grant-unneeded",
                f"evaluation {config.metadata.name}: {self.name} sends no reference, yet a "
                f"reference egress grant ({bound.grant.digest}) is attached",
            )
        if not isinstance(config, OutcomeEvaluationConfig):
            return config, None
        if config.spec.scorer.code is None:
            raise EvaluationError(
                "scorer-mismatch",
                f"evaluation {config.metadata.name}: the bound config does not pin the code "
                f"of scorer {config.spec.scorer.name!r} (code is null); bind it with "
                "bind_evaluation",
            )
        return config, _scorer(config)

    def measure(
        self,
        bound: BoundEvaluation,
        evidence: HarnessRunEvidence,
        *,
        seed: int,
        store: HarnessEvidenceStore | None = None,
    ) -> Measurement:
        """task_success and every execution metric of ``evidence`` (already verified)
        in the config's catalog; ``store`` is the evidence's (v2 reads each call of an
        attempt from it when the price table has tiers or a cache-write price:
        ``store-required`` without)."""
        config, scorer = self._checked(bound)  # the scorer, resolved once per measurement
        if scorer is None or not isinstance(config, OutcomeEvaluationConfig):
            raise EvaluationError("unsupported-evaluator", f"{self.name} got a {config.kind}")
        catalog = config.spec.catalog
        n = len(evidence.entries)
        success: list[float] = [0.0] * n
        success_codes = [0] * n
        exec_codes = [0] * n
        spend_codes = [0] * n
        spend_values: dict[str, list[float]] = {key: [0.0] * n for key, _, _ in _SPEND_FIELDS}
        spend_tokens = [0.0] * n
        spend_attempts = [0.0] * n
        attested_count = 0
        reasons: list[ScorerReason] = []  # why the scorer decided: restricted report only
        for i, entry in enumerate(evidence.entries):
            attempts = entry.attempts
            spend_attempts[i] = len(attempts)
            if any(attempt.recovered for attempt in attempts):
                spend_codes[i] = _UNACCOUNTED
            else:
                spend_tokens[i] = sum(a.spend.total_tokens for a in attempts)
            attested = entry.attested
            if attested is None or attested.outcome is None:
                success_codes[i] = exec_codes[i] = _NO_ATTESTED
                continue
            attested_count += 1
            spend = attested.spend
            for key, field, scale in _SPEND_FIELDS:
                spend_values[key][i] = getattr(spend, field) * scale
            outcome = attested.outcome
            if outcome.terminal == "cancelled":
                success_codes[i] = _CANCELLED
            elif outcome.terminal == "answer" and outcome.answer is not None:
                reference = self.source.reference(entry.task_id).text
                verdict = scorer.score(outcome.answer, reference, task_id=entry.task_id)
                success[i] = float(verdict.success)
                if verdict.reason:
                    reasons.append(ScorerReason(task_id=entry.task_id, reason=verdict.reason))
        built = self._columns(n, exec_codes, spend_values, catalog)
        built["spend_tokens"] = Column.build("spend_tokens", spend_tokens, spend_codes, catalog)
        built["spend_attempts"] = Column.build("spend_attempts", spend_attempts, [0] * n, catalog)
        sliced = SLICED_METRICS
        if catalog == CATALOG_ID:
            order = EXECUTION_METRICS
        else:
            built.update(v2_columns(evidence, prices=config.spec.prices, store=store))
            order = sliced = SLICED_METRICS_V2
        success_column = Column.build("task_success", success, success_codes, catalog)
        columns = (success_column, *(built[key] for key in order))
        results = [run_result(column) for column in columns]
        results += [slice_result(built[key], success_column) for key in sliced]
        return Measurement(
            task_ids=tuple(entry.task_id for entry in evidence.entries),
            columns=columns,
            results=tuple(results),
            attested=attested_count,
            catalog=catalog,
            scorer_reasons=tuple(reasons),
        )

    @staticmethod
    def _columns(
        n: int, exec_codes: list[int], spend_values: dict[str, list[float]], catalog: str
    ) -> dict[str, Column]:
        """The execution columns both catalogs read from the spend (and v1's absent
        ones, which v2 replaces)."""
        built = {
            key: Column.build(key, values, exec_codes, catalog)
            for key, values in spend_values.items()
        }
        inputs, outputs = spend_values["input_tokens"], spend_values["output_tokens"]
        totals = [a + b for a, b in zip(inputs, outputs, strict=True)]
        built["total_tokens"] = Column.build("total_tokens", totals, exec_codes, catalog)
        if catalog == CATALOG_ID:
            for key in NOT_RECORDED_V1:
                built[key] = Column.absent(key, n, "not-recorded")
        return built


def _scorer(config: OutcomeEvaluationConfig) -> ResolvedScorer:
    where = f"evaluation {config.metadata.name}: spec.scorer"
    return resolve_scorer(config.spec.scorer, config.spec.match, where=where)
