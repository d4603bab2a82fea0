"""Cache-write tokens (Anthropic's ``cache_creation_input_tokens``) are evidence.

A reply's cache-write tokens are recorded in its ``model_reply`` event as
``usage.cache_write`` only when the provider reported them, so a trajectory of a
provider that never does is spelled as before; they are attested by the chain like
every other recorded number (an edit is refused), read back per call, and the dollar
budget prices them exactly. Every cost below is computed by hand from the scripted
usage and the prices.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _fixtures_run import Bench, ScriptedModel, calc, make_source, read_attempt, refused

from xaytune.core.harness_evaluation import bind_task
from xaytune.harness import Harness, HarnessCompilationContext, HarnessCompiler, HarnessRunner
from xaytune.harness.evidence import assemble_evidence, verify_run_evidence
from xaytune.harness.evidence.calls import attempt_calls
from xaytune.harness.toolbox import Toolbox
from xaytune.models import ModelPrices, ModelReply, Usage

TOOLS = frozenset({"calculator"})
CALC = Harness(
    name="calc",
    system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)
# Anthropic-shaped prices: input $3, cache read $0.30, cache write $3.75, output $15.
PRICES = ModelPrices(
    input_per_mtok=3.0,
    cached_input_per_mtok=0.3,
    cache_write_per_mtok=3.75,
    output_per_mtok=15.0,
)
PLAIN_KEYS = {"input", "output", "cached", "reasoning"}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    return make_source(tmp_path_factory.mktemp("cache-writes") / "suite", count=8)


def tool_turn(n: int, *, cached: int | None, writes: int | None) -> ModelReply:
    """A calculator call with 1000 prompt tokens and 100 output tokens."""
    return ModelReply(
        text=None,
        tool_calls=(calc(f"{n} + 1", f"c{n}"),),
        usage=Usage(1000, 100, cached_tokens=cached, cache_write_tokens=writes),
        finish_reason="tool_calls",
    )


def answer(*, cached: int | None, writes: int | None) -> ModelReply:
    return ModelReply(
        text="ANSWER: 2",
        tool_calls=(),
        usage=Usage(1200, 30, cached_tokens=cached, cache_write_tokens=writes),
        finish_reason="stop",
    )


def script() -> list[ModelReply]:
    """One task's calls: the first writes the prompt to the cache, the second reads
    it and writes its new turn; the third reports no cache writes."""
    return [
        tool_turn(1, cached=0, writes=800),
        tool_turn(2, cached=800, writes=150),
        answer(cached=950, writes=None),
    ]


def run_bench(bench: Bench, model_for) -> tuple[list, list]:
    """Run every task of the bench, each with a fresh model: (specs, results)."""
    specs = bench.specs(CALC)
    results = [
        HarnessRunner().run(
            spec, model=model_for(), toolbox=Toolbox.default(), authorized_tools=TOOLS
        )
        for spec in specs
    ]
    return specs, results


def usages(path: Path) -> list[dict]:
    _, events = read_attempt(path)
    return [e["v"]["usage"] for e in events if e["type"] == "model_reply"]


def test_reported_cache_writes_are_recorded_per_call_and_the_evidence_verifies(source, tmp_path):
    bench = Bench(source, tmp_path / "store", count=2)
    specs, results = run_bench(bench, lambda: ScriptedModel(script()))
    assert usages(results[0].path) == [
        {"input": 1000, "output": 100, "cached": 0, "reasoning": None, "cache_write": 800},
        {"input": 1000, "output": 100, "cached": 800, "reasoning": None, "cache_write": 150},
        # Not reported: no key at all (never a 0, never a null).
        {"input": 1200, "output": 30, "cached": 950, "reasoning": None},
    ]
    evidence = assemble_evidence(
        specs, bench.suite, bench.sampling, bench.assignment, bench.source, bench.store
    )
    verify_run_evidence(evidence, bench.suite, bench.source, bench.store)
    entry = evidence.entries[0]
    calls = attempt_calls(bench.store, entry, entry.attested)
    assert [c.cache_write_tokens for c in calls] == [800, 150, None]
    assert [c.cached_tokens for c in calls] == [0, 800, 950]
    # The sealed spend keeps its form: cache writes are per call, not summed there.
    assert "cache_write_tokens" not in entry.attested.spend.model_dump()


def test_a_provider_that_reports_no_cache_writes_records_usage_as_before(source, tmp_path):
    bench = Bench(source, tmp_path / "store", count=2)
    model = lambda: ScriptedModel(  # noqa: E731
        [tool_turn(1, cached=None, writes=None), answer(cached=None, writes=None)]
    )
    _, results = run_bench(bench, model)
    for result in results:
        assert [set(u) for u in usages(result.path)] == [PLAIN_KEYS, PLAIN_KEYS]


@pytest.mark.parametrize(
    ("recorded", "forged"),
    [(b'"cache_write":800', b'"cache_write":100'), (b'"cached":800', b'"cached":100')],
    ids=["cache_write", "cached"],
)
def test_an_edited_cache_write_count_is_refused_like_the_other_usage_counts(
    source, tmp_path, recorded, forged
):
    bench = Bench(source, tmp_path / "store", count=2)
    specs, results = run_bench(bench, lambda: ScriptedModel(script()))
    evidence = assemble_evidence(
        specs, bench.suite, bench.sampling, bench.assignment, bench.source, bench.store
    )
    path = results[0].path
    data = path.read_bytes()
    assert data.count(recorded) == 1  # the first or second reply: a middle event
    path.write_bytes(data.replace(recorded, forged))
    error = refused(
        lambda: verify_run_evidence(evidence, bench.suite, bench.source, bench.store),
        "chain-broken",
    )
    assert evidence.entries[0].task_id in str(error)
    # Assembling again from the edited store is refused the same way.
    refused(
        lambda: assemble_evidence(
            specs, bench.suite, bench.sampling, bench.assignment, bench.source, bench.store
        ),
        "chain-broken",
    )


def budgeted(bench: Bench, budget: float):
    """The spec of the bench's first task with a dollar budget at PRICES."""
    harness = CALC.model_copy(update={"cost_budget_usd": budget})
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
            prices=PRICES,
        ),
    )


def test_the_dollar_budget_prices_reported_cache_writes_exactly(source, tmp_path):
    # Each call: 200 fresh input, 800 written, 100 output:
    # (200 * 3 + 800 * 3.75 + 100 * 15) / 1e6 = (600 + 3000 + 1500) / 1e6 = $0.0051.
    # Two calls are $0.0102, not above a $0.0102 budget (exact, no float drift); the
    # third passes it.
    bench = Bench(source, tmp_path / "store", count=2)
    model = ScriptedModel([tool_turn(n, cached=0, writes=800) for n in range(1, 10)])
    result = HarnessRunner().run(
        budgeted(bench, 0.0102), model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
    )
    assert result.outcome.terminal == "budget-stop" and result.spend.model_calls == 3
    assert "($0.0153 spent)" in result.outcome.detail


def test_the_dollar_budget_prices_unreported_cache_writes_at_the_dearest_price(source, tmp_path):
    # Not reported: every input token may have been a cache write, priced at $3.75
    # (the bound): (1000 * 3.75 + 100 * 15) / 1e6 = $0.00525 a call; two calls
    # ($0.0105) pass the same $0.0102 budget.
    bench = Bench(source, tmp_path / "store", count=2)
    model = ScriptedModel([tool_turn(n, cached=0, writes=None) for n in range(1, 10)])
    result = HarnessRunner().run(
        budgeted(bench, 0.0102), model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
    )
    assert result.outcome.terminal == "budget-stop" and result.spend.model_calls == 2
    assert "($0.0105 spent)" in result.outcome.detail
