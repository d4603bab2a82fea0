"""Catalog xaytune.harness-metrics/v2: what it adds to v1, each number checked by hand.

v2 is selected in the outcome config (``spec.metrics``) and is in the fingerprint;
v1 is spelled by leaving ``spec.metrics`` out and measures exactly what it did.
Costs are recomputed here independently of the evaluator: from the attested
trajectories' per-call usage, with exact fractions and the prices as written.
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import pytest

from xaytune.core.errors import EvaluationError, EvidenceError
from xaytune.evaluation._outcome import SLICED_METRICS_V2
from xaytune.evaluation.config import config_fingerprint, resolve_config
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.evaluation.metrics import (
    CATALOG,
    CATALOG_ID,
    CATALOG_V2,
    CATALOG_V2_ID,
    NOT_RECORDED_V1,
    metric_definition,
)
from xaytune.harness import Harness
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.calls import attempt_calls
from xaytune.models import ModelPrices, PriceTier, SimulatedModel

V2 = CATALOG_V2_ID
PRICES = ModelPrices(input_per_mtok=2.5, cached_input_per_mtok=1.25, output_per_mtok=10.0)
CALCULATOR = Harness(
    name="calc",
    system_prompt="Use the calculator tool for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)
# arith-tools questions (the simulator reads their grammar), 2 to 4 steps each.
QUESTIONS = [
    ("q1", "Convert 9 weeks to hours.", "1512"),
    ("q2", "Convert 5 kilometres to millimetres.", "5000000"),
    ("q3", "Start with 2. Add 44. Divide by 2. Add 12. What is the result?", "35"),
]


def evaluate(run, out, config):
    evaluator = HarnessOutcomeEvaluator(run.source)
    spec = bind_evaluation(
        evaluator, EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=config))
    )
    subject = publish_evidence(run.evidence, run.store)
    return run_harness_evaluation(
        evaluator, spec, subject, source=run.source, output_uri=str(out), seed=101
    )


def observed(evaluation, key):
    return {o.task_id: (o.value, o.absence) for o in evaluation.task_observations[key]}


def v2(prices=PRICES, **options):
    return outcome_config(catalog=V2, prices=prices, **options)


# -- the catalog ----------------------------------------------------------------------


def test_v2_holds_every_v1_metric_alike_and_adds_two():
    v1 = {d.key: d for d in CATALOG}
    both = {d.key: d for d in CATALOG_V2}
    assert set(both) - set(v1) == {"model_call_time", "spend_cost"}
    for key, definition in v1.items():
        other = both[key]
        assert (other.kind, other.unit, other.reference_derived) == (
            definition.kind,
            definition.unit,
            definition.reference_derived,
        )
        if key not in NOT_RECORDED_V1:
            assert other == definition, key  # measured the same way
    assert metric_definition("cost", V2).absences == ("no-attested-result", "not-recorded")
    assert metric_definition("cost").absences == ("not-recorded",)  # v1, as the spec says
    assert metric_definition("model_call_time", V2).unit == "s"
    assert metric_definition("spend_cost", V2).unit == "usd"


def test_an_unknown_catalog_is_refused():
    with pytest.raises(EvaluationError) as caught:
        metric_definition("cost", "xaytune.harness-metrics/v9")
    assert caught.value.reason == "unknown-catalog"


def test_v2_only_metrics_are_unknown_to_v1():
    with pytest.raises(EvaluationError) as caught:
        metric_definition("spend_cost")
    assert caught.value.reason == "unknown-metric"


# -- the config -----------------------------------------------------------------------


def test_v1_is_spelled_without_metrics_and_keeps_its_fingerprint():
    plain = outcome_config()
    assert "metrics" not in plain["spec"]
    config = resolve_config(plain)
    assert config.spec.catalog == CATALOG_ID and config.spec.prices is None
    assert "metrics" not in config.model_dump(mode="json")["spec"]


def test_v1_written_out_is_not_canonical():
    plain = outcome_config()
    plain["spec"]["metrics"] = {"catalog": CATALOG_ID, "prices": None}
    with pytest.raises(EvaluationError) as caught:
        resolve_config(plain)
    assert caught.value.reason == "non-canonical-config"


@pytest.mark.parametrize("missing", ["catalog", "prices"])
def test_v2_metrics_name_catalog_and_prices_explicitly(missing):
    plain = v2()
    del plain["spec"]["metrics"][missing]
    with pytest.raises(EvaluationError) as caught:
        resolve_config(plain)
    assert caught.value.reason == "non-canonical-config"
    assert f"spec.metrics.{missing}" in str(caught.value)


def test_catalog_and_prices_are_in_the_fingerprint():
    v1 = config_fingerprint(resolve_config(outcome_config()))
    unpriced = config_fingerprint(resolve_config(v2(prices=None)))
    priced = config_fingerprint(resolve_config(v2()))
    dearer = PRICES.model_copy(update={"output_per_mtok": 12.0})
    repriced = config_fingerprint(resolve_config(v2(prices=dearer)))
    assert len({v1, unpriced, priced, repriced}) == 4


def test_a_price_that_is_not_a_number_is_invalid():
    plain = v2()
    plain["spec"]["metrics"]["prices"]["input_per_mtok"] = "2.5"
    with pytest.raises(EvaluationError) as caught:
        resolve_config(plain)
    assert caught.value.reason == "invalid-config"


# -- measuring ------------------------------------------------------------------------


@pytest.fixture
def simulated(tmp_path, kit):
    """Three tasks run with the calculator by a simulator that reports usage details."""
    return kit.run_suite(
        kit.make_suite(tmp_path / "s", QUESTIONS),
        tmp_path / "r",
        SimulatedModel(seed=101, usage_details=True),
        harness=CALCULATOR,
        tools=frozenset({"calculator"}),
    )


def _calls_by_hand(run, entry):
    """Per-call usage of the attested attempt, parsed here from its file."""
    path = run.store.attempt_file(entry.position, entry.attested.attempt)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    events = [json.loads(line) for line in parts.events]
    return [e["v"] for e in events if e["type"] == "model_reply"]


def test_cost_is_recomputed_by_hand_from_the_trajectories(tmp_path, simulated):
    evaluation = evaluate(simulated, tmp_path / "out", v2())
    costs = observed(evaluation, "cost")
    total = Fraction(0)
    for entry in simulated.evidence.entries:
        by_hand = Fraction(0)
        replies = _calls_by_hand(simulated, entry)
        assert len(replies) >= 2  # calculator calls, then the answer
        for reply in replies:
            usage = reply["usage"]
            fresh = usage["input"] - usage["cached"]
            by_hand += (fresh * Fraction("2.5") + usage["cached"] * Fraction("1.25")) + usage[
                "output"
            ] * Fraction(10)
        by_hand /= 1_000_000
        assert costs[entry.task_id] == (float(by_hand), None)
        total += by_hand
    assert evaluation.result.metric("cost").value == pytest.approx(float(total / 3), rel=1e-15)
    # One attempt per task: spend_cost is the cost.
    assert observed(evaluation, "spend_cost") == costs


def test_usage_details_time_and_calls_come_from_the_attested_spend(tmp_path, simulated):
    evaluation = evaluate(simulated, tmp_path / "out", v2())
    for entry in simulated.evidence.entries:
        spend = entry.attested.spend
        replies = _calls_by_hand(simulated, entry)
        assert spend.cached_tokens == sum(r["usage"]["cached"] for r in replies)
        assert replies[0]["usage"]["cached"] == 0  # a first call finds nothing cached
        assert 0 < spend.cached_tokens < spend.input_tokens
        assert observed(evaluation, "cached_tokens")[entry.task_id] == (spend.cached_tokens, None)
        assert observed(evaluation, "reasoning_tokens")[entry.task_id] == (0, None)
        e2e = observed(evaluation, "end_to_end_time")[entry.task_id][0]
        assert e2e == spend.wall_time_us * 1e-6
        assert e2e >= (spend.model_time_us + spend.tool_time_us) * 1e-6
        per_call = observed(evaluation, "model_call_time")[entry.task_id][0]
        assert per_call == spend.model_time_us * 1e-6 / len(replies)
    assert evaluation.report.evaluation.catalog == V2
    assert evaluation.result.catalog == V2
    # The evaluator's output records the prices it computed cost at.
    assert evaluation.report.evaluation.config["spec"]["metrics"]["prices"] == (
        PRICES.model_dump(mode="json")
    )


def test_v2_reports_every_v1_metric_with_the_same_value(tmp_path, simulated):
    one = evaluate(simulated, tmp_path / "v1", outcome_config()).result
    two = evaluate(simulated, tmp_path / "v2", v2()).result
    assert one.catalog == CATALOG_ID
    time = {"model_time", "tool_time"}  # measured once, read twice: equal too
    for result in one.metrics:
        if result.metric in NOT_RECORDED_V1:
            assert result.value is None and result.absent_reasons == {"not-recorded": 3}
            continue
        assert two.metric(result.key) == result, result.key
    assert time <= {r.metric for r in one.metrics}


def test_without_a_price_table_cost_is_not_recorded_never_zero(tmp_path, simulated):
    evaluation = evaluate(simulated, tmp_path / "out", v2(prices=None))
    for key in ("cost", "spend_cost"):
        assert set(observed(evaluation, key).values()) == {(None, "not-recorded")}
        assert evaluation.result.metric(key).absent_reasons == {"not-recorded": 3}
    assert evaluation.result.metric("cached_tokens").value is not None


def test_free_models_cost_zero_dollars(tmp_path, simulated):
    free = ModelPrices(input_per_mtok=0.0, output_per_mtok=0.0)
    evaluation = evaluate(simulated, tmp_path / "out", v2(prices=free))
    assert set(observed(evaluation, "cost").values()) == {(0.0, None)}


def test_v2_slices_every_execution_metric(tmp_path, simulated):
    evaluation = evaluate(simulated, tmp_path / "out", v2(disclosure="per-task"))
    successes = [v for v, _ in observed(evaluation, "task_success").values()]
    costs = [v for v, _ in observed(evaluation, "cost").values()]
    wins = [c for c, s in zip(costs, successes, strict=True) if s == 1.0]
    assert wins  # the calculator gets these right
    assert {"cost", "spend_cost", "model_call_time"} <= set(SLICED_METRICS_V2)
    sliced = evaluation.result.metric("cost@successful-tasks")
    assert sliced.value == pytest.approx(sum(wins) / len(wins), rel=1e-15)


# -- absences -------------------------------------------------------------------------

MIXED = [
    ("ok", "say:42:100:10", "42"),
    ("crash", "crash", "1"),
    ("cancel", "say:2:1:1", "2"),
]


def test_absences_of_the_v2_metrics(tmp_path, kit):
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", MIXED),
        tmp_path / "r",
        kit.ScriptedModel(),
        cancelled=["cancel"],
    )
    evaluation = evaluate(run, tmp_path / "out", v2())
    # The scripted model reports no usage details: not-recorded, never 0; its cost is
    # unknown too, since cached input is priced apart.
    assert observed(evaluation, "cached_tokens") == {
        "ok": (None, "not-recorded"),
        "crash": (None, "no-attested-result"),
        "cancel": (0.0, None),  # cancelled before any call: nothing was left unreported
    }
    assert observed(evaluation, "cost")["ok"] == (None, "not-recorded")
    assert observed(evaluation, "cost")["cancel"] == (0.0, None)
    assert observed(evaluation, "model_call_time")["cancel"] == (None, "not-applicable")
    assert observed(evaluation, "model_call_time")["crash"] == (None, "no-attested-result")
    assert observed(evaluation, "end_to_end_time")["cancel"][1] is None
    # spend_cost covers the crashed (partial) attempt too: unknown like "ok"'s cost.
    assert observed(evaluation, "spend_cost")["crash"] == (0.0, None)  # it made no call
    # Billed as input, unreported cached tokens no longer matter: the cost is known.
    flat = ModelPrices(input_per_mtok=3.0, output_per_mtok=15.0)
    priced = evaluate(run, tmp_path / "flat", v2(prices=flat))
    assert observed(priced, "cost")["ok"] == ((100 * 3 + 10 * 15) / 1e6, None)


def test_spend_cost_counts_partial_attempts_by_hand(tmp_path, kit):
    harness = Harness(
        name="retrying",
        system_prompt="Use the calculator.",
        tools=("calculator",),
        attempts_per_task=2,
    )
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", [("f", "flaky", "2")]),
        tmp_path / "r",
        kit.ScriptedModel(),
        harness=harness,
        tools=frozenset({"calculator"}),
    )
    assert [a.status for a in run.evidence.entries[0].attempts] == ["partial", "complete"]
    flat = ModelPrices(input_per_mtok=3.0, output_per_mtok=15.0)
    evaluation = evaluate(run, tmp_path / "out", v2(prices=flat))
    # Attested attempt: 50/5 then 60/6 -> (110*3 + 11*15)/1e6; the partial one: 50/5.
    assert observed(evaluation, "cost") == {"f": ((110 * 3 + 11 * 15) / 1e6, None)}
    assert observed(evaluation, "spend_cost") == {"f": ((160 * 3 + 16 * 15) / 1e6, None)}
    assert observed(evaluation, "model_call_time")["f"][1] is None


def test_spend_cost_is_unaccounted_after_a_recovered_attempt(tmp_path, kit):
    model = kit.ScriptedModel()
    run = kit.run_suite(
        kit.make_suite(tmp_path / "s", [("c", "crash", "7")]),
        tmp_path / "r",
        model,
        before_assembly=kit.reopen_and_resume(model),
    )
    assert [a.recovered for a in run.evidence.entries[0].attempts] == [True, False]
    flat = ModelPrices(input_per_mtok=3.0, output_per_mtok=15.0)
    evaluation = evaluate(run, tmp_path / "out", v2(prices=flat))
    assert observed(evaluation, "spend_cost") == {"c": (None, "spend-unaccounted")}
    assert observed(evaluation, "cost") == {"c": ((30 * 3 + 3 * 15) / 1e6, None)}


# -- tiered prices --------------------------------------------------------------------

TIERED = ModelPrices(
    input_per_mtok=1.25,
    output_per_mtok=10.0,
    tiers=(PriceTier(above_prompt_tokens=200_000, input_per_mtok=2.5, output_per_mtok=15.0),),
)


def test_a_tier_applies_above_its_threshold_not_at_it(tmp_path, kit):
    run = kit.run_suite(
        kit.make_suite(
            tmp_path / "s",
            [("at", "say:42:200000:10", "42"), ("above", "say:42:200001:10", "42")],
        ),
        tmp_path / "r",
        kit.ScriptedModel(),
    )
    evaluation = evaluate(run, tmp_path / "out", v2(prices=TIERED))
    # At 200,000 prompt tokens: (200000 * 1.25 + 10 * 10) / 1e6 = 0.2501 (base prices).
    # At 200,001: every token at the tier's prices, (200001 * 2.5 + 10 * 15) / 1e6.
    assert observed(evaluation, "cost") == {"at": (0.2501, None), "above": (0.5001525, None)}


def test_tiers_price_each_call_by_its_own_prompt(tmp_path, simulated):
    # A threshold inside the simulator's prompt sizes: early calls base, later tiered.
    sizes = sorted(
        r["usage"]["input"]
        for e in simulated.evidence.entries
        for r in _calls_by_hand(simulated, e)
    )
    threshold = sizes[len(sizes) // 2]
    tiered = PRICES.model_copy(
        update={
            "tiers": (
                PriceTier(
                    above_prompt_tokens=threshold,
                    input_per_mtok=5.0,
                    cached_input_per_mtok=2.5,
                    output_per_mtok=20.0,
                ),
            )
        }
    )
    evaluation = evaluate(simulated, tmp_path / "out", v2(prices=tiered))
    both = 0
    for entry in simulated.evidence.entries:
        by_hand = Fraction(0)
        rates = set()
        for reply in _calls_by_hand(simulated, entry):
            usage = reply["usage"]
            above = usage["input"] > threshold
            rates.add(above)
            p_in, p_cached, p_out = ("5", "2.5", "20") if above else ("2.5", "1.25", "10")
            by_hand += (
                (usage["input"] - usage["cached"]) * Fraction(p_in)
                + usage["cached"] * Fraction(p_cached)
                + usage["output"] * Fraction(p_out)
            )
        both += rates == {True, False}
        assert observed(evaluation, "cost")[entry.task_id] == (float(by_hand / 1_000_000), None)
    assert both  # some attempt had calls on both sides of the threshold


def test_tiered_prices_need_the_store_to_read_each_call(simulated):
    evaluator = HarnessOutcomeEvaluator(simulated.source)
    bound = bind_evaluation(
        evaluator,
        EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=v2(prices=TIERED))),
    )
    with pytest.raises(EvaluationError) as caught:
        evaluator.measure(bound, simulated.evidence, seed=101)
    assert caught.value.reason == "store-required"
    measured = evaluator.measure(bound, simulated.evidence, seed=101, store=simulated.store)
    assert measured.catalog == V2


def test_calls_are_read_only_from_the_attested_file(simulated):
    entry = simulated.evidence.entries[0]
    attempt = entry.attested
    calls = attempt_calls(simulated.store, entry, attempt)
    assert sum(c.input_tokens for c in calls) == attempt.spend.input_tokens
    path = simulated.store.attempt_file(entry.position, attempt.attempt)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    events = list(parts.events)
    at = next(i for i, line in enumerate(events) if b'"type":"model_reply"' in line)
    events[at] = events[at].replace(b'"input":', b'"input":1', 1)  # more prompt tokens
    assert events[at] != parts.events[at]
    path.write_bytes(dataclasses.replace(parts, events=tuple(events)).join())
    with pytest.raises(EvidenceError) as caught:
        attempt_calls(simulated.store, entry, attempt)
    assert caught.value.reason in {"chain-broken", "chain-head-mismatch"}
