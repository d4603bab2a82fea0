"""The spend's usage details and times are evidence like the rest of the spend.

``model_errors``, ``cached_tokens``, ``reasoning_tokens`` (null when not reported)
and ``wall_time_us`` are sealed, equal to the end event, and claimed by the
evidence: a forged value is refused, and so is a seal that carries one of another
JSON type, misses one, or writes 0 where nothing was reported.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest
from _fixtures_run import Bench, ScriptedModel, make_source, read_attempt, refused, reply

from xaytune.harness import Harness, HarnessRunner
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.store import SEAL_SCHEMA, SpendRecord
from xaytune.harness.toolbox import Toolbox
from xaytune.models import ModelError, ModelReply, SimulatedModel, TransientModelError, Usage

POSITION = 5
NEW_FIELDS = ("model_errors", "cached_tokens", "reasoning_tokens", "wall_time_us")


def test_the_seal_schema_is_v2_and_names_every_new_field():
    assert SEAL_SCHEMA == "xaytune.attempt-seal/v2"
    assert set(NEW_FIELDS) <= set(SpendRecord.model_fields)
    assert {n for n, f in SpendRecord.model_fields.items() if not f.is_required()} == set()


# -- claims ---------------------------------------------------------------------------


def forged(evidence: HarnessRunEvidence, **spend) -> HarnessRunEvidence:
    """``evidence`` resealed with the spend of the attempt at POSITION changed."""
    entries = list(evidence.entries)
    entry = entries[POSITION]
    attempt = entry.attempts[0]
    attempt = attempt.model_copy(update={"spend": attempt.spend.model_copy(update=spend)})
    entries[POSITION] = entry.model_copy(update={"attempts": (attempt,)})
    return evidence.model_copy(update={"entries": tuple(entries)}).sealed()


def test_the_simulator_reports_no_usage_details_by_default(verified_run):
    spend = verified_run.evidence.entries[POSITION].attempts[0].spend
    assert (spend.cached_tokens, spend.reasoning_tokens) == (None, None)
    assert spend.wall_time_us >= spend.model_time_us + spend.tool_time_us > 0


@pytest.mark.parametrize(
    "update",
    [
        {"cached_tokens": 0},  # a zero standing in for "not reported"
        {"reasoning_tokens": 0},
        {"wall_time_us": 1},
        {"model_errors": 1},
    ],
    ids=lambda u: next(iter(u)),
)
def test_a_forged_usage_detail_or_time_is_refused(verified_run, update):
    error = refused(
        lambda: verified_run.verify(forged(verified_run.evidence, **update)), "digest-mismatch"
    )
    assert verified_run.evidence.entries[POSITION].task_id in str(error)
    verified_run.verify()


# -- seals ----------------------------------------------------------------------------


def seal_of(path: Path) -> dict:
    parts = AttemptParts.of(path.read_bytes(), str(path))
    return json.loads(parts.seal)


def write_seal(path: Path, seal: dict) -> None:
    parts = AttemptParts.of(path.read_bytes(), str(path))
    line = json.dumps(seal, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    path.write_bytes(replace(parts, seal=line.encode() + b"\n").join())


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda s: s.update(cached_tokens="0"), "ill-typed spend"),
        (lambda s: s.update(cached_tokens=-1), "ill-typed spend"),
        (lambda s: s.update(reasoning_tokens=1.5), "ill-typed spend"),
        (lambda s: s.update(reasoning_tokens=False), "ill-typed spend"),
        (lambda s: s.update(wall_time_us=None), "ill-typed spend"),  # null only for details
        (lambda s: s.update(model_errors=None), "ill-typed spend"),
        (lambda s: s.update(wall_time_us=2**60), "ill-typed spend"),
        (lambda s: s.pop("wall_time_us"), "spend is missing or adding wall_time_us"),
        (lambda s: s.pop("cached_tokens"), "spend is missing or adding cached_tokens"),
        (lambda s: s.update(cost_usd=0), "spend is missing or adding cost_usd"),
    ],
    ids=[
        "text cached",
        "negative cached",
        "float reasoning",
        "bool reasoning",
        "null wall time",
        "null model errors",
        "unsafe wall time",
        "no wall time",
        "no cached",
        "an added cost",
    ],
)
def test_a_seal_with_an_ill_formed_new_spend_field_is_a_bad_seal(verified_run, edit, why):
    path = verified_run.attempt_file(POSITION)
    seal = seal_of(path)
    edit(seal["spend"])
    write_seal(path, seal)
    for step in (verified_run.verify, verified_run.assemble):
        error = refused(step, "bad-seal")
        assert str(path) in str(error) and why in str(error)


def test_a_seal_of_the_previous_schema_is_a_bad_seal(verified_run):
    path = verified_run.attempt_file(POSITION)
    seal = seal_of(path)
    seal["schema"] = "xaytune.attempt-seal/v1"
    for key in NEW_FIELDS:
        del seal["spend"][key]
    write_seal(path, seal)
    refused(verified_run.verify, "bad-seal")


# -- what the runner records ----------------------------------------------------------


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    return make_source(tmp_path_factory.mktemp("details") / "suite", count=8)


PLAIN = Harness(name="plain", system_prompt="End with ANSWER: <number>.", model_retries=2)


def _run(source, root: Path, model):
    bench = Bench(source, root, count=2)
    spec = bench.spec(PLAIN, tools=())
    return HarnessRunner().run(spec, model=model, toolbox=Toolbox.default(), authorized_tools=())


def _detailed(text: str, cached: int | None, reasoning: int | None) -> ModelReply:
    return ModelReply(
        text=text,
        tool_calls=(),
        usage=Usage(100, 20, cached_tokens=cached, reasoning_tokens=reasoning),
        finish_reason="stop",
    )


def test_failed_calls_are_counted_and_timed_apart_from_replies(source, tmp_path):
    model = ScriptedModel(
        [TransientModelError("busy"), TransientModelError("busy"), reply("ANSWER: 1")]
    )
    result = _run(source, tmp_path, model)
    assert result.outcome.terminal == "answer"
    assert (result.spend.model_calls, result.spend.model_errors) == (1, 2)
    seal, events = read_attempt(result.path)
    errors = [e["v"] for e in events if e["type"] == "model_error"]
    replies = [e["v"] for e in events if e["type"] == "model_reply"]
    assert len(errors) == 2 and len(replies) == 1
    assert seal["spend"]["model_time_us"] == sum(e["time_us"] for e in errors + replies)


def test_a_terminal_model_error_is_a_counted_call(source, tmp_path):
    # A refusal of this request (not the endpoint's: that would end the attempt partial).
    result = _run(source, tmp_path, ScriptedModel([ModelError("model-error", "HTTP 400")]))
    assert result.outcome.terminal == "model-error"
    assert (result.spend.model_calls, result.spend.model_errors) == (0, 1)


def test_usage_details_are_summed_while_every_call_reports_them(source, tmp_path):
    # Both calls report: sums. Then a call that does not: the sum is unknown (null).
    harness = PLAIN.model_copy(update={"loop": "self-check"})
    bench = Bench(source, tmp_path / "a", count=2)
    model = ScriptedModel([_detailed("ANSWER: 1", 60, 5), _detailed("ANSWER: 1", 80, 7)])
    result = HarnessRunner().run(
        bench.spec(harness, tools=()), model=model, toolbox=Toolbox.default(), authorized_tools=()
    )
    assert (result.spend.cached_tokens, result.spend.reasoning_tokens) == (140, 12)
    bench = Bench(source, tmp_path / "b", count=2)
    model = ScriptedModel([_detailed("ANSWER: 1", 60, 5), _detailed("ANSWER: 1", None, 7)])
    result = HarnessRunner().run(
        bench.spec(harness, tools=()), model=model, toolbox=Toolbox.default(), authorized_tools=()
    )
    assert (result.spend.cached_tokens, result.spend.reasoning_tokens) == (None, 12)
    seal, events = read_attempt(result.path)
    assert seal["spend"]["cached_tokens"] is None
    usages = [e["v"]["usage"] for e in events if e["type"] == "model_reply"]
    assert usages == [
        {"input": 100, "output": 20, "cached": 60, "reasoning": 5},
        {"input": 100, "output": 20, "cached": None, "reasoning": 7},
    ]


def test_the_simulators_prefix_cache_reports_what_the_previous_call_sent(source, tmp_path):
    harness = Harness(
        name="calc",
        system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
        tools=("calculator",),
    )
    bench = Bench(source, tmp_path, count=2)
    spec = bench.spec(harness)
    result = HarnessRunner().run(
        spec,
        model=SimulatedModel(seed=101, usage_details=True),
        toolbox=Toolbox.default(),
        authorized_tools=frozenset({"calculator"}),
    )
    _, events = read_attempt(result.path)
    usages = [e["v"]["usage"] for e in events if e["type"] == "model_reply"]
    assert len(usages) >= 2 and usages[0]["cached"] == 0
    for before, now in itertools.pairwise(usages):
        # The previous request is this one's prefix: all of its whole tokens are cached.
        assert before["input"] - 1 <= now["cached"] <= before["input"] < now["input"]
    assert all(u["reasoning"] == 0 for u in usages)
