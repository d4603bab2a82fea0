"""Catalog v2 prices cache writes exactly (Anthropic's ``cache_creation_input_tokens``).

End to end, in process: a plain model class that reports prompt-cache reads and
writes the way the Anthropic adapter does, run by the real runner into a real store,
assembled, published and measured by the outcome evaluator under catalog v2. Every
cost is computed here by hand, with exact fractions, from the usage the model was
scripted to report and the prices as written, not from the evaluator's code.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from xaytune.core.errors import EvaluationError
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
from xaytune.harness import Harness
from xaytune.models import (
    ModelIdentity,
    ModelPrices,
    ModelReply,
    ModelRequest,
    PriceTier,
    ToolCall,
    Usage,
)

# Anthropic-shaped prices: input $3, cache read $0.30, cache write $3.75, output $15.
PRICES = ModelPrices(
    input_per_mtok=3.0,
    cached_input_per_mtok=0.3,
    cache_write_per_mtok=3.75,
    output_per_mtok=15.0,
)
P_IN, P_READ, P_WRITE, P_OUT = Fraction("3"), Fraction("0.3"), Fraction("3.75"), Fraction("15")
CALCULATOR = Harness(
    name="calc",
    system_prompt="Use the calculator once. End with ANSWER: <number>.",
    tools=("calculator",),
)
# (task id, question, reference). The question's number scales the usage.
TASKS = [("a", "cache:1:7", "7"), ("b", "cache:2:9", "9"), ("silent", "silent:3:4", "4")]


def scripted_usage(word: str, k: int, turn: int) -> Usage:
    """The usage the model reports on ``turn`` (0: the tool call, 1: the answer).

    Turn 0 writes the prompt to the cache; turn 1 reads it back and writes the new
    tool exchange. A ``silent`` task's provider reports no cache writes.
    """
    if turn == 0:
        usage = Usage(1000 * k + 17, 40 + k, cached_tokens=0, cache_write_tokens=900 * k)
    else:
        usage = Usage(1100 * k + 60, 12, cached_tokens=900 * k, cache_write_tokens=150 + k)
    if word == "silent":
        return Usage(usage.input_tokens, usage.output_tokens, cached_tokens=usage.cached_tokens)
    return usage


class PromptCachingModel:
    """A plain Model: one calculator call, then the answer; usage as scripted above."""

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(provider="test", model="prompt-caching", revision="1")

    async def complete(self, request: ModelRequest) -> ModelReply:
        question = next(m.content for m in request.messages if m.role == "user") or ""
        word, k, result = question.split(":")
        turn = sum(1 for m in request.messages if m.role == "tool")
        usage = scripted_usage(word, int(k), turn)
        if turn == 0:
            call = ToolCall(id="t1", name="calculator", arguments='{"expression": "1 + 1"}')
            return ModelReply(
                text=None, tool_calls=(call,), usage=usage, finish_reason="tool_calls"
            )
        return ModelReply(
            text=f"ANSWER: {result}", tool_calls=(), usage=usage, finish_reason="stop"
        )


def by_hand(word: str, k: int) -> Fraction:
    """The dollars of one task's two calls at PRICES."""
    total = Fraction(0)
    for turn in (0, 1):
        u = scripted_usage(word, k, turn)
        fresh = u.input_tokens - u.cached_tokens - u.cache_write_tokens
        total += (
            fresh * P_IN
            + u.cached_tokens * P_READ
            + u.cache_write_tokens * P_WRITE
            + u.output_tokens * P_OUT
        )
    return total / 1_000_000


@pytest.fixture
def run(tmp_path, kit):
    return kit.run_suite(
        kit.make_suite(tmp_path / "s", TASKS),
        tmp_path / "r",
        PromptCachingModel(),
        harness=CALCULATOR,
        tools=frozenset({"calculator"}),
    )


def evaluate(run, out, prices):
    evaluator = HarnessOutcomeEvaluator(run.source)
    spec = bind_evaluation(
        evaluator,
        EvaluationSpec(
            evaluator=EvaluatorSpec(
                name="harness-outcome",
                config=outcome_config(catalog=CATALOG_V2_ID, prices=prices),
            )
        ),
    )
    subject = publish_evidence(run.evidence, run.store)
    return run_harness_evaluation(
        evaluator, spec, subject, source=run.source, output_uri=str(out), seed=101
    )


def observed(evaluation, key):
    return {o.task_id: (o.value, o.absence) for o in evaluation.task_observations[key]}


def test_the_hand_computed_cost_of_one_task():
    # Task "a" (k = 1), written out in full:
    # turn 0: 1017 in (0 read, 900 written, 117 fresh), 41 out
    #   117 * 3 + 900 * 3.75 + 41 * 15 = 351 + 3375 + 615 = 4341
    # turn 1: 1160 in (900 read, 151 written, 109 fresh), 12 out
    #   109 * 3 + 900 * 0.3 + 151 * 3.75 + 12 * 15 = 327 + 270 + 566.25 + 180 = 1343.25
    # (4341 + 1343.25) / 1e6 = $0.00568425
    assert by_hand("cache", 1) == Fraction("0.00568425")


def test_an_anthropic_run_gets_an_exact_cost_under_catalog_v2(tmp_path, run):
    evaluation = evaluate(run, tmp_path / "out", PRICES)
    costs = observed(evaluation, "cost")
    assert costs["a"] == (float(by_hand("cache", 1)), None)
    assert costs["b"] == (float(by_hand("cache", 2)), None)
    # A provider that did not report cache writes, at a table that prices them apart:
    # the cost is unknown, never guessed.
    assert costs["silent"] == (None, "not-recorded")
    assert observed(evaluation, "spend_cost") == costs  # one attempt per task
    # Cache reads are summed in the attested spend, as before.
    assert observed(evaluation, "cached_tokens")["b"] == (1800, None)
    assert observed(evaluation, "task_success") == {
        "a": (1.0, None),
        "b": (1.0, None),
        "silent": (1.0, None),
    }
    # Not every task has a cost: no run value (zero never stands in for an absence).
    assert evaluation.result.metric("cost").value is None


def test_without_a_cache_write_price_writes_are_billed_as_input(tmp_path, run):
    flat = ModelPrices(input_per_mtok=3.0, cached_input_per_mtok=0.3, output_per_mtok=15.0)
    costs = observed(evaluate(run, tmp_path / "out", flat), "cost")
    for task, word, k in (("a", "cache", 1), ("silent", "silent", 3)):
        expected = Fraction(0)
        for turn in (0, 1):
            u = scripted_usage(word, k, turn)
            expected += (
                (u.input_tokens - u.cached_tokens) * P_IN
                + u.cached_tokens * P_READ
                + u.output_tokens * P_OUT
            )
        assert costs[task] == (float(expected / 1_000_000), None)


def test_a_cache_write_price_needs_the_store_to_read_each_call(run):
    evaluator = HarnessOutcomeEvaluator(run.source)
    config = outcome_config(catalog=CATALOG_V2_ID, prices=PRICES)
    bound = bind_evaluation(
        evaluator, EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=config))
    )
    with pytest.raises(EvaluationError) as caught:
        evaluator.measure(bound, run.evidence, seed=101)
    assert caught.value.reason == "store-required"
    measured = evaluator.measure(bound, run.evidence, seed=101, store=run.store)
    assert measured.catalog == CATALOG_V2_ID


def test_only_a_cache_write_price_apart_from_input_asks_for_each_call():
    base = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    assert not ModelPrices(**base).cache_writes_priced
    assert not ModelPrices(**base, cache_write_per_mtok=3.0).cache_writes_priced
    assert PRICES.cache_writes_priced
    tier = PriceTier(above_prompt_tokens=200_000, cache_write_per_mtok=7.5, **base)
    assert ModelPrices(**base, tiers=(tier,)).cache_writes_priced
