"""The scripted model replays its script, by conversation position, and nothing else."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from xaytune.core.errors import PluginError
from xaytune.experiment.config import TargetModelConfig
from xaytune.experiment.model_adapters import build_target_model, model_adapter_identity
from xaytune.models import Message, ModelError, ModelRequest
from xaytune.models.scripted import ScriptedModel
from xaytune.plugins import lookup

SYSTEM = Message("system", "Be brief.")


def _ask(model: ScriptedModel, *messages: Message):
    return asyncio.run(model.complete(ModelRequest(messages=(SYSTEM, *messages))))


def test_replies_follow_the_conversation_position():
    model = ScriptedModel(
        script=[
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
            "ANSWER: 42",
        ]
    )
    first = _ask(model, Message("user", "6 times 7?"))
    assert first.text is None and first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("calculator", {"expression": "6*7"})
    second = _ask(
        model,
        Message("user", "6 times 7?"),
        Message("assistant", None, first.tool_calls),
        Message("tool", "42", tool_call_id=call.id),
    )
    assert second.text == "ANSWER: 42" and second.tool_calls == ()
    # Stateless: the first position again gives the first reply.
    assert _ask(model, Message("user", "again")).tool_calls == first.tool_calls


def test_a_script_per_first_user_message():
    model = ScriptedModel(script={"q1": ["one"], "q2": ["two"]})
    assert _ask(model, Message("user", "q2")).text == "two"
    assert _ask(model, Message("user", "q1")).text == "one"
    with pytest.raises(ModelError) as caught:
        _ask(model, Message("user", "q3"))
    assert caught.value.reason == "script-missing"


def test_a_conversation_past_the_script_is_a_definitive_error():
    model = ScriptedModel(script=["only"])
    with pytest.raises(ModelError) as caught:
        _ask(model, Message("user", "q"), Message("assistant", "only"), Message("user", "more"))
    assert caught.value.reason == "script-exhausted"
    assert type(caught.value) is ModelError  # not transient: never retried


@pytest.mark.parametrize(
    "script",
    [
        [{"text": "x", "bogus": 1}],
        [{"tool_calls": [{"arguments": {}}]}],
        [3],
        {"q": "not a list"},
    ],
)
def test_a_malformed_script_is_refused_when_built(script):
    with pytest.raises(ValueError) as caught:
        ScriptedModel(script=script)
    assert str(caught.value).startswith("script: ") and "\n" not in str(caught.value)


def test_the_identity_pins_the_script():
    one, same = ScriptedModel(script=["a"]), ScriptedModel(script=["a"])
    other = ScriptedModel(script=["b"])
    assert one.identity == same.identity
    assert one.identity.revision != other.identity.revision
    assert (one.identity.provider, one.identity.model) == ("scripted", "scripted")


def test_it_is_the_built_in_model_adapter_scripted(tmp_path: Path):
    name, target = lookup("model", "scripted", where="model._target_")
    assert (name, target) == ("scripted", ScriptedModel)
    path = tmp_path / "script.json"
    path.write_text(json.dumps(["ANSWER: 4"]))
    model = build_target_model(
        TargetModelConfig.model_validate({"_target_": "scripted", "path": str(path)}), seed=1
    )
    assert _ask(model, Message("user", "2+2?")).text == "ANSWER: 4"
    identity = model_adapter_identity(model)
    assert (identity.kind, identity.name, identity.version) == ("model", "scripted", "1")
    with pytest.raises(PluginError) as caught:
        build_target_model(TargetModelConfig.model_validate({"_target_": "scripted"}), seed=1)
    assert caught.value.reason == "bad-part"


def test_a_script_per_seed_varies_the_replicates(tmp_path: Path):
    """by_seed (inline) and a path naming {seed} (a file per seed) play the replicate's
    own script: the run passes each replicate's seed, so replicates can differ (a script
    alone makes them identical, se = 0). A seed without a script is refused when built."""
    by_seed = {"101": ["ANSWER: 4"], "102": ["ANSWER: 5"]}
    built = {
        seed: build_target_model(
            TargetModelConfig.model_validate({"_target_": "scripted", "by_seed": by_seed}),
            seed=seed,
        )
        for seed in (101, 102)
    }
    assert _ask(built[101], Message("user", "2+2?")).text == "ANSWER: 4"
    assert _ask(built[102], Message("user", "2+2?")).text == "ANSWER: 5"
    assert built[101].identity.revision == ScriptedModel(script=["ANSWER: 4"]).identity.revision
    with pytest.raises(PluginError) as caught:
        build_target_model(
            TargetModelConfig.model_validate({"_target_": "scripted", "by_seed": by_seed}),
            seed=7,
        )
    assert caught.value.reason == "bad-part" and "no script for seed 7" in str(caught.value)
    for seed, answer in ((1, "ANSWER: 1"), (2, "ANSWER: 2")):
        (tmp_path / f"seed-{seed}.json").write_text(json.dumps([answer]))
    template = str(tmp_path / "seed-{seed}.json")
    model = build_target_model(
        TargetModelConfig.model_validate({"_target_": "scripted", "path": template}), seed=2
    )
    assert _ask(model, Message("user", "q")).text == "ANSWER: 2"
    with pytest.raises(ValueError, match="exactly one"):
        ScriptedModel(script=["a"], by_seed=by_seed, seed=101)
