"""harness-judge: quality from a pinned judge and rubric, strict parsing, retries,
repeats and spread, absences, bounded concurrency, any Model (HTTP included)."""

from __future__ import annotations

import asyncio
import json
import statistics
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from xaytune.core.errors import EvaluationError
from xaytune.evaluation._judge import parse_score
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessJudgeEvaluator,
    ReferenceEgressGrant,
    bind_evaluation,
    judge_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.harness import Harness
from xaytune.models import OpenAICompatibleModel, SimulatedModel

ITEMS = [
    ("right", "say:5:100:10", "5"),
    ("wrong", "say:8:400:40", "9"),
    ("big", "say:1,000:200:20", "1000"),
    ("noanswer", "prose:10:1", "3"),
    ("budget", "say:5:5000:10", "5"),
    ("error", "error", "1"),
    ("overflow", "overflow", "1"),
    ("crash", "crash", "1"),
    ("cancel", "say:2:1:1", "2"),
]
ANSWERED = 3  # right, wrong, big


@pytest.fixture
def run(tmp_path, kit):
    source = kit.make_suite(tmp_path / "s", ITEMS)
    harness = Harness(name="budgeted", system_prompt="End with ANSWER: <n>.", token_budget=1000)
    return kit.run_suite(
        source, tmp_path / "r", kit.ScriptedModel(), harness=harness, cancelled=["cancel"]
    )


def judge_run(run, out, judge, *, grant=None, grants=(), concurrency=8, **config):
    evaluator = HarnessJudgeEvaluator(
        run.source, judge_model=judge, grants=grants, concurrency=concurrency
    )
    cfg = judge_config(
        judge_model=judge.identity, rubric="Score the answer's correctness.", **config
    )
    spec = bind_evaluation(
        evaluator,
        EvaluationSpec(evaluator=EvaluatorSpec(name="harness-judge", config=cfg), grant=grant),
    )
    subject = publish_evidence(run.evidence, run.store)
    return run_harness_evaluation(
        evaluator, spec, subject, source=run.source, output_uri=str(out), seed=101
    )


def quality(evaluation):
    return {o.task_id: (o.value, o.absence) for o in evaluation.task_observations["quality"]}


def test_quality_with_reference_scores_answers_and_leaves_others_absent(run, tmp_path, kit):
    judge = kit.CountingModel(SimulatedModel(seed=7, judge_noise_rate=0.0))
    grant = ReferenceEgressGrant.issue(
        suite_digest=run.source.digest, judge_model=judge.identity, issued_by="test-host"
    )
    evaluation = judge_run(
        run, tmp_path / "o", judge, grant=grant, grants=[grant], reference_access="reference"
    )
    assert quality(evaluation) == {
        "right": (5.0, None),  # the simulated judge scores a match HI, a miss LO
        "wrong": (1.0, None),
        "big": (5.0, None),
        "noanswer": (None, "not-applicable"),
        "budget": (None, "not-applicable"),  # budget stop: no answer, no judge call
        "error": (None, "not-applicable"),
        "overflow": (None, "not-applicable"),
        "crash": (None, "no-attested-result"),
        "cancel": (None, "unscored-cancelled"),
    }
    assert len(judge.requests) == ANSWERED  # no judge call without an answer
    result = evaluation.result
    assert result.determinism == "STOCHASTIC" and result.evaluator == "harness-judge"
    assert result.metric("quality").value is None
    assert result.metric("quality").absent_reasons == {
        "not-applicable": 4,
        "no-attested-result": 1,
        "unscored-cancelled": 1,
    }
    assert result.metric("task_success") is None  # the judge measures quality only


def test_prompt_holds_rubric_task_candidate_reference_and_format(run, tmp_path, kit):
    judge = kit.CountingModel(SimulatedModel(seed=7))
    grant = ReferenceEgressGrant.issue(
        suite_digest=run.source.digest, judge_model=judge.identity, issued_by="test-host"
    )
    judge_run(run, tmp_path / "o", judge, grant=grant, grants=[grant], reference_access="reference")
    user = {r.messages[1].content for r in judge.requests if "say:8:" in r.messages[1].content}
    (prompt,) = user
    assert "You are a grader" in judge.requests[0].messages[0].content
    assert "Score the answer's correctness." in prompt
    assert "Candidate answer: 8\n" in prompt
    assert "Reference answer: 9\n" in prompt
    assert prompt.endswith("Reply with exactly: SCORE: <integer from 1 to 5>")


def test_no_reference_in_prompt_without_reference_access(tmp_path, kit):
    items = [("a", "say:5:1:1", "CANARY-NO-ACCESS-1"), ("b", "say:6:1:1", "CANARY-NO-ACCESS-2")]
    source = kit.SpySource(kit.make_suite(tmp_path / "s", items).path)
    run = kit.run_suite(source, tmp_path / "r", kit.ScriptedModel())
    judge = kit.CountingModel(SimulatedModel(seed=7))
    judge_run(run, tmp_path / "o", judge)
    assert len(judge.requests) == 2
    for request in judge.requests:
        text = "".join(m.content or "" for m in request.messages)
        assert "Reference answer" not in text and "CANARY" not in text
    assert source.reads == 0  # the judge never opened the references


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SCORE: 3", 3),
        ("  SCORE: 5\n", 5),
        ("SCORE: 6", None),  # out of scale
        ("SCORE: 0", None),
        ("score: 3", None),
        ("SCORE: 3 because", None),
        ("The answer is fine. SCORE: 4", None),
        ("SCORE: 3.5", None),
        (None, None),
    ],
)
def test_parse_score_is_strict(text, expected):
    assert parse_score(text, 1, 5) == expected


def test_unparsable_replies_are_retried_then_judge_failed(run, tmp_path, kit):
    judge = kit.CountingModel(SimulatedModel(seed=7, judge_malformed_rate=1.0))
    evaluation = judge_run(run, tmp_path / "o", judge, judge_repeats=2, judge_retries=2)
    assert len(judge.requests) == ANSWERED * 2 * 3  # tasks x repeats x (1 + retries)
    observed = quality(evaluation)
    assert {observed[t] for t in ("right", "wrong", "big")} == {(None, "judge-failed")}
    assert evaluation.result.metric("quality").absent_reasons["judge-failed"] == 3
    exchanges = evaluation.restricted.judge_exchanges
    assert len(exchanges) == 18 and all(e.score is None and e.error for e in exchanges)


def test_repeats_give_the_judges_spread(tmp_path, kit):
    items = [(f"t{i}", f"say:{i}:10:1", str(i)) for i in range(6)]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    judge = SimulatedModel(seed=3, judge_noise_rate=1.0)
    evaluation = judge_run(run, tmp_path / "o", judge, judge_repeats=3, judge_retries=0)
    scores: dict[str, list[int]] = {}
    for exchange in evaluation.restricted.judge_exchanges:
        scores.setdefault(exchange.task_id, []).append(exchange.score)
    observations = {o.task_id: o for o in evaluation.task_observations["quality"]}
    spreads = []
    for task_id, task_scores in scores.items():
        assert len(task_scores) == 3
        assert observations[task_id].value == pytest.approx(statistics.mean(task_scores))
        assert observations[task_id].judge_spread == pytest.approx(statistics.stdev(task_scores))
        spreads.append(statistics.stdev(task_scores))
    result = evaluation.result.metric("quality")
    assert result.judge_spread == pytest.approx(statistics.mean(spreads))
    assert result.judge_spread > 0  # noise 1.0 moves every score one step
    assert result.value == pytest.approx(statistics.mean(o.value for o in observations.values()))


def test_one_repeat_has_unknown_spread_not_zero(tmp_path, kit):
    items = [("a", "say:5:1:1", "5")]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    evaluation = judge_run(run, tmp_path / "o", SimulatedModel(seed=7), judge_repeats=1)
    (observation,) = evaluation.task_observations["quality"]
    assert observation.value is not None and observation.judge_spread is None
    assert evaluation.result.metric("quality").judge_spread is None


def test_judge_calls_run_concurrently_under_the_bound(run, tmp_path, kit):
    judge = kit.CountingModel(SimulatedModel(seed=7))
    judge.delay_s = 0.02
    judge_run(run, tmp_path / "o", judge, concurrency=2, judge_repeats=2)
    assert judge.max_in_flight == 2


def test_judge_model_mismatch_is_refused_before_any_call(run, kit):
    judge = kit.CountingModel(SimulatedModel(seed=8))
    pinned = SimulatedModel(seed=7).identity
    evaluator = HarnessJudgeEvaluator(run.source, judge_model=judge)
    config = judge_config(judge_model=pinned, rubric="r")
    with pytest.raises(EvaluationError) as caught:
        bind_evaluation(
            evaluator, EvaluationSpec(evaluator=EvaluatorSpec(name="harness-judge", config=config))
        )
    assert caught.value.reason == "judge-model-mismatch"
    assert judge.requests == []


class _Judge(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    bodies: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        reply = {
            "id": "x",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "SCORE: 4"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23},
        }
        raw = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args) -> None:
        pass


def test_openai_compatible_judge_over_http(run, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        judge = OpenAICompatibleModel(
            f"http://127.0.0.1:{server.server_port}/v1", "judge-1", revision="r1", max_retries=0
        )
        evaluation = judge_run(run, tmp_path / "o", judge)
    finally:
        server.shutdown()
        server.server_close()
    assert len(_Judge.bodies) == ANSWERED
    observed = quality(evaluation)
    assert {observed[t] for t in ("right", "wrong", "big")} == {(4.0, None)}


def test_the_judge_closes_its_model_client_in_the_event_loop_it_used(run, tmp_path, kit):
    # An HTTP judge holds connections per event loop, and the judging loop ends with the
    # evaluation: the judge closes them there (issue 22; unclosed, they leak, and
    # aiohttp reports an unclosed session).
    class Closing(kit.CountingModel):
        def __init__(self, inner) -> None:
            super().__init__(inner)
            self.used_in: set[asyncio.AbstractEventLoop] = set()
            self.closed_in: list[asyncio.AbstractEventLoop] = []

        async def complete(self, request):
            self.used_in.add(asyncio.get_running_loop())
            return await super().complete(request)

        async def aclose(self) -> None:
            self.closed_in.append(asyncio.get_running_loop())

    judge = Closing(SimulatedModel(seed=7, judge_noise_rate=0.0))
    judge_run(run, tmp_path / "o", judge)
    assert len(judge.requests) == ANSWERED
    assert len(judge.closed_in) == 1 and set(judge.closed_in) == judge.used_in
