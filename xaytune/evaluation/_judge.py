"""``harness-judge``: quality, one integer on a declared scale, from a pinned judge
model and rubric (STOCHASTIC).

Per entry of the verified evidence:

* no-attested-result: quality absent ``no-attested-result``;
* cancelled: ``unscored-cancelled``;
* no answer (budget stop, context overflow, model error, nothing extracted):
  ``not-applicable`` and no judge call (spec: there is no answer to judge);
* otherwise the judge is asked ``judge_repeats`` times (independent passes over the
  same evidence). Each pass parses the reply strictly (``SCORE: <n>`` with n on the
  scale); an unparsable or out-of-scale reply, or a failed call, is retried up to
  ``judge_retries`` times. The task's quality is the mean of its passes and its
  spread their sample sd (None with one repeat). If any pass stays unscored the task
  is ``judge-failed``: a score is never built from the passes that happened to work.

Grants: ``prepare()`` (called by ``bind_evaluation``) checks the judge identity and
the reference egress grant against this host's grants before anything is sent;
``measure()`` checks both again, against the grants of the evaluator that executes,
before any reference is read. Judge calls are I/O: they run concurrently under a
bound (``concurrency``).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import EvaluationError
from xaytune.evaluation._common import Determinism, EvaluatorBase, JudgeExchange, Measurement
from xaytune.evaluation._grants import ReferenceEgressGrant, check_grant
from xaytune.evaluation.config import JUDGE_KIND, BoundEvaluation, JudgeEvaluationConfig
from xaytune.evaluation.metrics import Column, absence_code, run_result
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.models.protocol import Message, Model, ModelError, ModelRequest

__all__ = ["GRADER_SYSTEM", "HarnessJudgeEvaluator", "judge_prompt", "parse_score"]

GRADER_SYSTEM = (
    "You are a grader. Apply the rubric to the candidate answer of the task and reply "
    "with the score line only."
)
_SCORE = re.compile(r"SCORE: (-?\d+)")
T = TypeVar("T")


def parse_score(text: str | None, low: int, high: int) -> int | None:
    """The score in a reply that is exactly ``SCORE: <n>`` with ``low <= n <= high``."""
    if text is None:
        return None
    match = _SCORE.fullmatch(text.strip())
    if match is None:
        return None
    score = int(match[1])
    return score if low <= score <= high else None


def _render_input(task_input: dict[str, Any]) -> str:
    if set(task_input) == {"question"}:
        return str(task_input["question"])
    return "\n".join(f"{key}: {value}" for key, value in sorted(task_input.items()))


def judge_prompt(
    config: JudgeEvaluationConfig,
    task_input: dict[str, Any],
    answer: str,
    reference: str | None,
) -> tuple[Message, Message]:
    """System and user messages of one judge request.

    The user message holds the rubric, the task input, ``Candidate answer: ...``,
    ``Reference answer: ...`` (only with reference access) and the reply format.
    """
    spec = config.spec
    lines = [
        "Rubric:",
        spec.rubric.text,
        "",
        "Task:",
        _render_input(task_input),
        "",
        f"Candidate answer: {answer}",
    ]
    if reference is not None:
        lines.append(f"Reference answer: {reference}")
    lines.append(f"Reply with exactly: SCORE: <integer from {spec.scale.min} to {spec.scale.max}>")
    return Message("system", GRADER_SYSTEM), Message("user", "\n".join(lines))


def _run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, even inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


@dataclass(frozen=True, slots=True)
class _Job:
    position: int
    task_id: str
    messages: tuple[Message, Message]


class HarnessJudgeEvaluator(EvaluatorBase):
    """``harness-judge`` over runs of ``source`` with the pinned ``judge_model``.

    ``grants`` are the reference egress grants this host issued; ``concurrency``
    bounds the judge calls in flight.
    """

    name: ClassVar[str] = "harness-judge"
    kind: ClassVar[str] = JUDGE_KIND
    determinism: ClassVar[Determinism] = "STOCHASTIC"

    def __init__(
        self,
        source: SuiteSource,
        *,
        judge_model: Model,
        grants: Iterable[ReferenceEgressGrant] = (),
        concurrency: int = 8,
    ) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise EvaluationError("bad-concurrency", f"judge concurrency {concurrency!r} < 1")
        self.source = source
        self.judge_model = judge_model
        self.grants = tuple(grants)
        for grant in self.grants:
            if grant.digest != grant.content_digest():
                raise EvaluationError(
                    "grant-altered", f"host grant {grant.digest} is not its contents' digest"
                )
        self.concurrency = concurrency

    def prepare(self, bound: BoundEvaluation) -> BoundEvaluation:
        """Check the judge identity and the grant before anything is sent."""
        self.check_execution(bound)
        return bound

    def check_execution(self, bound: BoundEvaluation) -> JudgeEvaluationConfig:
        """Re-resolve the config; refuse another judge model or an unusable grant."""
        config = bound.resolved()
        if not isinstance(config, JudgeEvaluationConfig):
            raise EvaluationError("unsupported-evaluator", f"{self.name} got a {config.kind}")
        where = f"evaluation {config.metadata.name}"
        pinned = config.spec.judge_model.identity()
        actual = self.judge_model.identity
        if actual != pinned:
            raise EvaluationError(
                "judge-model-mismatch",
                f"{where}: config pins judge {pinned.provider}/{pinned.model}@{pinned.revision} "
                f"{pinned.parameters}; the evaluator has {actual.provider}/{actual.model}@"
                f"{actual.revision} {actual.parameters}",
            )
        check_grant(
            bound.grant,
            sends_reference=config.spec.reference_access == "reference",
            suite_digest=self.source.digest,
            judge_model=pinned,
            host_grants=self.grants,
            where=where,
        )
        return config

    def measure(
        self,
        bound: BoundEvaluation,
        evidence: HarnessRunEvidence,
        *,
        seed: int,
        store: HarnessEvidenceStore | None = None,
    ) -> Measurement:
        """quality for every entry of ``evidence`` (already verified); ``store`` is not
        read (quality is judged from the attested answers)."""
        config = self.check_execution(bound)  # before any reference is read
        with_reference = config.spec.reference_access == "reference"
        n = len(evidence.entries)
        codes = [0] * n
        jobs: list[_Job] = []
        attested = 0
        for i, entry in enumerate(evidence.entries):
            attempt = entry.attested
            if attempt is None or attempt.outcome is None:
                codes[i] = absence_code("no-attested-result")
                continue
            attested += 1
            outcome = attempt.outcome
            if outcome.terminal == "cancelled":
                codes[i] = absence_code("unscored-cancelled")
            elif outcome.terminal != "answer" or outcome.answer is None:
                codes[i] = absence_code("not-applicable")
            else:
                reference = self.source.reference(entry.task_id).text if with_reference else None
                task_input = self.source.suite.task(entry.task_id).input
                messages = judge_prompt(config, task_input, outcome.answer, reference)
                jobs.append(_Job(i, entry.task_id, messages))
        prefix = f"judge:{bound.fingerprint}:{evidence.digest}:{seed}"
        judged = _run_sync(lambda: self._judge_all(jobs, config, prefix))
        values = [math.nan] * n
        spreads = np.full(n, np.nan)
        exchanges: list[JudgeExchange] = []
        for job, (scores, calls) in zip(jobs, judged, strict=True):
            exchanges += calls
            if any(score is None for score in scores):
                codes[job.position] = absence_code("judge-failed")
                continue
            values[job.position], spread = _mean_and_sd(scores)  # type: ignore[arg-type]
            spreads[job.position] = math.nan if spread is None else spread
        column = Column.build("quality", values, codes)
        column = Column(column.metric, column.values, column.absences, spreads)
        return Measurement(
            task_ids=tuple(entry.task_id for entry in evidence.entries),
            columns=(column,),
            results=(run_result(column),),
            attested=attested,
            exchanges=tuple(exchanges),
        )

    async def _judge_all(
        self, jobs: list[_Job], config: JudgeEvaluationConfig, prefix: str
    ) -> list[tuple[list[int | None], list[JudgeExchange]]]:
        semaphore = asyncio.Semaphore(self.concurrency)
        repeats = config.spec.judge_repeats

        async def task(job: _Job) -> tuple[list[int | None], list[JudgeExchange]]:
            passes = await asyncio.gather(
                *(
                    self._one_pass(job, repeat, config, prefix, semaphore)
                    for repeat in range(repeats)
                )
            )
            return [score for score, _ in passes], [call for _, calls in passes for call in calls]

        try:
            return list(await asyncio.gather(*(task(job) for job in jobs)))
        finally:
            # An HTTP judge's connections belong to this event loop, which ends here.
            close = getattr(self.judge_model, "aclose", None)
            if close is not None:
                await close()

    async def _one_pass(
        self,
        job: _Job,
        repeat: int,
        config: JudgeEvaluationConfig,
        prefix: str,
        semaphore: asyncio.Semaphore,
    ) -> tuple[int | None, list[JudgeExchange]]:
        spec = config.spec
        calls: list[JudgeExchange] = []
        plain = tuple({"role": m.role, "content": m.content or ""} for m in job.messages)
        for attempt in range(spec.judge_retries + 1):
            key = f"{prefix}:{job.task_id}:{repeat}:{attempt}"
            request = ModelRequest(messages=job.messages, sampling_key=key)
            reply_text: str | None = None
            error: str | None = None
            async with semaphore:
                try:
                    reply = await self.judge_model.complete(request)
                    reply_text = reply.text
                except ModelError as failure:
                    error = str(failure)
            score = parse_score(reply_text, spec.scale.min, spec.scale.max)
            if error is None and score is None:
                error = "unparsable or out-of-scale reply"
            calls.append(
                JudgeExchange(
                    task_id=job.task_id,
                    position=job.position,
                    repeat=repeat,
                    attempt=attempt,
                    sampling_key=key,
                    messages=plain,
                    reply=reply_text,
                    error=error,
                    score=score,
                )
            )
            if score is not None:
                return score, calls
        return None, calls


def _mean_and_sd(scores: list[int]) -> tuple[float, float | None]:
    """Mean and sample sd (None for one score: unknown, not zero)."""
    mean = sum(scores) / len(scores)
    if len(scores) < 2:
        return mean, None
    return mean, math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
