"""Usage details of OpenAI-compatible replies: cached and reasoning tokens.

Recorded reply bodies of two server kinds (``fixtures/README.md`` says where each
comes from) are served by a real HTTP server on 127.0.0.1, and the adapter's usage is
compared with what each body says. A detail a server does not report is None (never
0); one it reports is the value, 0 included. End to end, through the runner, the
evidence and the v2 evaluator: a server that reports cached tokens gives
``cached_tokens`` its value, one that omits them gives ``not-recorded``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from xaytune.core.domain.benchmark import SeededSample, record_assignment
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.evaluation.metrics import CATALOG_V2_ID
from xaytune.harness import Harness, HarnessRunner, Toolbox, compile_replicate
from xaytune.harness.evidence import assemble_evidence
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.models import Message, ModelError, ModelPrices, ModelRequest, OpenAICompatibleModel
from xaytune.suites import build_suite

FIXTURES = Path(__file__).parent / "fixtures"
REQUEST = ModelRequest(messages=(Message("user", "What is 12 + 30?"),))


def body(name: str) -> str:
    return (FIXTURES / name).read_text()


def complete(server, raw: str):
    server.respond(200, raw)  # a str body is sent as it is, byte for byte
    model = OpenAICompatibleModel(server.base_url, "m", max_retries=0)

    async def once():
        try:
            return await model.complete(REQUEST)
        finally:
            await model.aclose()

    return asyncio.run(once())


# (fixture, input, output, cached, reasoning): read off each body by hand.
RECORDED = [
    ("llama_cpp_first_call.json", 29, 24, 0, None),
    ("llama_cpp_cached_prefix.json", 68, 24, 52, None),
    ("openai_reasoning_tool_call.json", 1532, 218, 1280, 192),
    ("openai_no_cache_hit.json", 54, 12, 0, 0),
    ("vllm_no_details.json", 61, 5, None, None),
]


@pytest.mark.parametrize(("name", "tokens_in", "tokens_out", "cached", "reasoning"), RECORDED)
def test_recorded_bodies_give_the_usage_they_report(
    chat_server, name, tokens_in, tokens_out, cached, reasoning
):
    usage = complete(chat_server, body(name)).usage
    assert (usage.input_tokens, usage.output_tokens) == (tokens_in, tokens_out)
    assert (usage.cached_tokens, usage.reasoning_tokens) == (cached, reasoning)


def test_the_reasoning_models_tool_call_is_read_with_its_usage(chat_server):
    reply = complete(chat_server, body("openai_reasoning_tool_call.json"))
    assert reply.finish_reason == "tool_calls" and reply.text is None
    (call,) = reply.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("calculator", {"expression": "12 + 30"})


def _edited(name: str, edit) -> str:
    data = json.loads(body(name))
    edit(data)
    return json.dumps(data)


def test_llama_cpp_timings_say_what_was_cached_when_the_usage_details_do_not(chat_server):
    # An older llama.cpp build: no prompt_tokens_details, but timings.cache_n (52) and
    # timings.prompt_n (16) make up usage.prompt_tokens (68).
    raw = _edited("llama_cpp_cached_prefix.json", lambda d: d["usage"].pop("prompt_tokens_details"))
    assert complete(chat_server, raw).usage.cached_tokens == 52


def test_llama_cpp_timings_that_do_not_add_up_say_nothing(chat_server):
    def edit(data):
        del data["usage"]["prompt_tokens_details"]
        data["timings"]["prompt_n"] = 68  # counted the whole prompt: cache_n is not a part

    usage = complete(chat_server, _edited("llama_cpp_cached_prefix.json", edit)).usage
    assert usage.cached_tokens is None


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda u: u.update(prompt_tokens_details={"cached_tokens": 69}), "cached_tokens (69)"),
        (lambda u: u.update(prompt_tokens_details={"cached_tokens": "52"}), "cached_tokens"),
        (lambda u: u.update(prompt_tokens_details={"cached_tokens": -1}), "cached_tokens (-1)"),
        (lambda u: u.update(prompt_tokens_details={"cached_tokens": True}), "cached_tokens"),
        (lambda u: u.update(prompt_tokens_details=[52]), "prompt_tokens_details is not"),
        (
            lambda u: u.update(completion_tokens_details={"reasoning_tokens": 25}),
            "reasoning_tokens (25)",
        ),
    ],
    ids=["above prompt", "text", "negative", "boolean", "a list", "reasoning above output"],
)
def test_a_usage_detail_that_is_not_a_count_within_its_total_is_a_malformed_reply(
    chat_server, edit, words
):
    raw = _edited("llama_cpp_cached_prefix.json", lambda d: edit(d["usage"]))
    with pytest.raises(ModelError) as caught:
        complete(chat_server, raw)
    assert caught.value.reason == "model-malformed"
    assert words in str(caught.value)


@pytest.mark.parametrize(
    "details",
    [{}, {"cached_tokens": None}, None],
    ids=["no key", "null value", "null details"],
)
def test_an_unreported_cached_count_is_none_never_zero(chat_server, details):
    raw = _edited(
        "openai_no_cache_hit.json", lambda d: d["usage"].update(prompt_tokens_details=details)
    )
    assert complete(chat_server, raw).usage.cached_tokens is None


# -- end to end: evidence and catalog v2 ---------------------------------------------

TASKS = [("t1", "What is 12 + 30?", "42"), ("t2", "What is 50 - 8?", "42")]
HARNESS = Harness(name="plain", system_prompt="Answer. End with ANSWER: <number>.")
PRICES = ModelPrices(input_per_mtok=2.0, cached_input_per_mtok=0.5, output_per_mtok=8.0)


def _evaluate(tmp_path: Path, server, replies: list[str]):
    source = build_suite(
        tmp_path / "suite",
        name="mini",
        version="1",
        tasks=[
            {"id": tid, "input": {"question": q}, "attachments": [], "metadata": {}}
            for tid, q, _ in TASKS
        ],
        references=[{"id": tid, "answer": answer} for tid, _, answer in TASKS],
    )
    for raw in replies:
        server.respond(200, raw)
    model = OpenAICompatibleModel(server.base_url, "m", max_retries=0)
    store = HarnessEvidenceStore(tmp_path / "run", durability="none")
    sampling = SeededSample(count=None)
    assignment = record_assignment(source.suite, sampling, seed=101)
    specs = compile_replicate(
        HARNESS, suite=source.suite, assignment=assignment, store=store, authorized_tools=()
    )

    async def run():
        try:  # one task at a time: the scripted replies are served in order
            return await HarnessRunner(durability="none").run_many(
                specs, model=model, toolbox=Toolbox.default(), authorized_tools=(), concurrency=1
            )
        finally:
            await model.aclose()

    asyncio.run(run())
    evidence = assemble_evidence(specs, source.suite, sampling, assignment, source, store)
    evaluator = HarnessOutcomeEvaluator(source)
    config = outcome_config(catalog=CATALOG_V2_ID, prices=PRICES)
    bound = bind_evaluation(
        evaluator, EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=config))
    )
    return run_harness_evaluation(
        evaluator,
        bound,
        publish_evidence(evidence, store),
        source=source,
        output_uri=str(tmp_path / "eval"),
        seed=101,
    )


def _answer(cached: int | None) -> str:
    data = json.loads(body("openai_no_cache_hit.json"))
    if cached is None:
        del data["usage"]["prompt_tokens_details"]
    else:
        data["usage"]["prompt_tokens_details"]["cached_tokens"] = cached
    return json.dumps(data)


def test_a_server_that_reports_cached_tokens_gives_their_value_and_the_cost(tmp_path, chat_server):
    evaluation = _evaluate(tmp_path, chat_server, [_answer(32), _answer(0)])
    observed = {o.task_id: o.value for o in evaluation.task_observations["cached_tokens"]}
    assert sorted(observed.values()) == [0, 32]
    assert evaluation.result.metric("cached_tokens").value == 16.0  # (32 + 0) / 2
    # By hand, per task: 54 prompt tokens (cached at $0.5/M, the rest at $2/M) and 12
    # output tokens at $8/M: cached 32 -> (22*2 + 32*0.5 + 12*8)/1e6 = 156e-6; 0 ->
    # (54*2 + 12*8)/1e6 = 204e-6.
    costs = sorted(o.value for o in evaluation.task_observations["cost"])
    assert costs == [156e-6, 204e-6]
    assert evaluation.result.metric("cost").value == pytest.approx(180e-6, rel=1e-12)


def test_a_server_that_omits_cached_tokens_gives_not_recorded(tmp_path, chat_server):
    evaluation = _evaluate(tmp_path, chat_server, [_answer(32), _answer(None)])
    cached = {o.value: o.absence for o in evaluation.task_observations["cached_tokens"]}
    assert cached == {32: None, None: "not-recorded"}
    result = evaluation.result.metric("cached_tokens")
    assert result.value is None and result.absent_reasons == {"not-recorded": 1}
    # Its cost is unknown (cached input is priced apart), not a guess: not-recorded.
    costs = [o.absence for o in evaluation.task_observations["cost"]]
    assert sorted(costs, key=str) == [None, "not-recorded"]
    # Reasoning tokens were reported (0) by both: a value.
    assert evaluation.result.metric("reasoning_tokens").value == 0
