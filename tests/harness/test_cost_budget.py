"""A dollar budget: ``cost_budget_usd`` stops an attempt (``budget-stop``) like the
token budget, at the prices the spec pins, counted exactly.

Every cost below is computed by hand from the scripted usage and the prices.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _fixtures_run import Bench, ScriptedModel, calc, make_source, read_attempt

from xaytune.core.errors import ExecutionError
from xaytune.core.harness_evaluation import bind_task
from xaytune.harness import Harness, HarnessCompilationContext, HarnessCompiler, HarnessRunner
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.harness.toolbox import Toolbox
from xaytune.models import ModelPrices, ModelReply, PriceTier, Usage

TOOLS = frozenset({"calculator"})
CALC = Harness(
    name="calc",
    system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)
# $100 per million input tokens, $10 per million cached, $1000 per million output.
PRICES = ModelPrices(input_per_mtok=100.0, cached_input_per_mtok=10.0, output_per_mtok=1000.0)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    return make_source(tmp_path_factory.mktemp("budget") / "suite", count=8)


@pytest.fixture
def bench(source, tmp_path: Path) -> Bench:
    return Bench(source, tmp_path / "store", count=2)


def priced_spec(bench: Bench, harness: Harness, prices: ModelPrices | None = PRICES):
    """The spec of the bench's first task, compiled with ``prices``."""
    task, binding = bind_task(bench.suite, bench.assignment, bench.assignment.task_ids[0])
    return HarnessCompiler().compile(
        harness,
        HarnessCompilationContext(
            task=task,
            seed=bench.seed,
            authorized_tools=TOOLS,
            output_uri=str(bench.store.task_output(binding.position)),
            trajectory=bench.spec(CALC).trajectory,
            task_binding=binding,
            suite=bench.suite,
            prices=prices,
        ),
    )


def tool_turn(n: int, cached: int | None = None) -> ModelReply:
    """A calculator call with 1000 prompt tokens (``cached`` of them cached) and 100
    output tokens."""
    return ModelReply(
        text=None,
        tool_calls=(calc(f"{n} + 1", f"c{n}"),),
        usage=Usage(input_tokens=1000, output_tokens=100, cached_tokens=cached),
        finish_reason="tool_calls",
    )


def run(spec: AgentExecutionSpec, model) -> object:
    return HarnessRunner().run(spec, model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS)


# Each call, nothing cached reported as 0: (1000 * 100 + 100 * 1000) / 1e6 = $0.2.
@pytest.mark.parametrize(
    ("budget", "calls"),
    [
        (0.5, 3),  # 0.6 > 0.5 after the third call
        (0.6, 4),  # 0.6 is not above 0.6 (exactly, no float drift); 0.8 is
        (0.1, 1),  # the first call already passes it: it is recorded, then the stop
    ],
)
def test_a_dollar_budget_stops_the_attempt_after_the_call_that_passes_it(bench, budget, calls):
    harness = CALC.model_copy(update={"cost_budget_usd": budget})
    model = ScriptedModel([tool_turn(n, cached=0) for n in range(1, 10)])
    result = run(priced_spec(bench, harness), model)
    assert result.status == "complete" and result.outcome.terminal == "budget-stop"
    assert result.outcome.detail.startswith(f"cost budget ${budget:g} exceeded")
    assert f"(${0.2 * calls:.6g} spent)" in result.outcome.detail
    assert result.spend.model_calls == calls == len(model.requests)
    seal, events = read_attempt(result.path)
    assert seal["outcome"]["terminal"] == "budget-stop"
    assert [e["type"] for e in events].count("model_reply") == calls


def test_reported_cached_tokens_are_billed_at_the_cached_price(bench):
    # 900 of 1000 prompt tokens cached: (100 * 100 + 900 * 10 + 100 * 1000) / 1e6
    # = $0.119 a call; a $0.25 budget is passed by the third call (0.357).
    harness = CALC.model_copy(update={"cost_budget_usd": 0.25})
    model = ScriptedModel([tool_turn(n, cached=900) for n in range(1, 10)])
    result = run(priced_spec(bench, harness), model)
    assert result.outcome.terminal == "budget-stop" and result.spend.model_calls == 3
    assert "($0.357 spent)" in result.outcome.detail
    assert result.spend.cached_tokens == 2700


def test_unreported_cached_tokens_are_billed_at_the_dearer_price(bench):
    # Not reported: priced as if none were cached ($0.2 a call), an upper bound; the
    # same $0.25 budget is passed by the second call.
    harness = CALC.model_copy(update={"cost_budget_usd": 0.25})
    model = ScriptedModel([tool_turn(n, cached=None) for n in range(1, 10)])
    result = run(priced_spec(bench, harness), model)
    assert result.outcome.terminal == "budget-stop" and result.spend.model_calls == 2
    assert result.spend.cached_tokens is None  # unknown, never 0


def test_a_tier_prices_a_call_whose_prompt_passes_its_threshold(bench):
    # Above 999 prompt tokens every token costs ten times as much: $2 a call.
    tiered = PRICES.model_copy(
        update={
            "tiers": (
                PriceTier(
                    above_prompt_tokens=999,
                    input_per_mtok=1000.0,
                    cached_input_per_mtok=100.0,
                    output_per_mtok=10000.0,
                ),
            )
        }
    )
    harness = CALC.model_copy(update={"cost_budget_usd": 3.0})
    model = ScriptedModel([tool_turn(n, cached=0) for n in range(1, 10)])
    result = run(priced_spec(bench, harness, tiered), model)
    assert result.spend.model_calls == 2 and "($4 spent)" in result.outcome.detail


def test_the_spec_pins_the_prices_only_for_a_dollar_budget(bench):
    budgeted = priced_spec(bench, CALC.model_copy(update={"cost_budget_usd": 1.0}))
    assert budgeted.config["prices"] == PRICES.model_dump(mode="json")
    assert budgeted.prices == PRICES
    plain = priced_spec(bench, CALC)
    assert "prices" not in plain.config
    assert plain.fingerprint == priced_spec(bench, CALC, prices=None).fingerprint


def test_an_unset_dollar_budget_leaves_the_harness_declaration_as_it_was():
    assert "cost_budget_usd" not in CALC.model_dump(mode="json")
    budgeted = CALC.model_copy(update={"cost_budget_usd": 1.0})
    assert budgeted.model_dump(mode="json")["cost_budget_usd"] == 1.0
    assert budgeted.fingerprint != CALC.fingerprint
    assert Harness.model_validate(budgeted.model_dump(mode="json")) == budgeted


@pytest.mark.parametrize("budget", [0, -1.0, float("inf"), float("nan"), 1e10])
def test_a_dollar_budget_must_be_a_positive_finite_amount(budget):
    with pytest.raises(ValueError):
        CALC.model_copy(update={"cost_budget_usd": None}).model_validate(
            {**CALC.model_dump(mode="json"), "cost_budget_usd": budget}
        )


def test_compiling_a_dollar_budget_without_prices_is_refused(bench):
    harness = CALC.model_copy(update={"cost_budget_usd": 1.0})
    with pytest.raises(ExecutionError) as caught:
        priced_spec(bench, harness, prices=None)
    assert caught.value.reason == "cost-budget-unpriced"


def test_running_a_dollar_budget_whose_spec_pins_no_prices_is_refused(bench):
    spec = priced_spec(bench, CALC.model_copy(update={"cost_budget_usd": 1.0}))
    plain = spec.model_dump(mode="json", by_alias=True, exclude={"fingerprint"})
    del plain["config"]["prices"]
    unpriced = AgentExecutionSpec.model_validate(plain)
    model = ScriptedModel([])
    with pytest.raises(ExecutionError) as caught:
        run(unpriced, model)
    assert caught.value.reason == "cost-budget-unpriced"
    assert model.requests == []  # refused before any call
