"""Built-in models resolve through the plugin registry (issue 28, item 3), in process.

Every model kind of the config (``simulated``, ``openai_compatible``, ``anthropic``,
``llama_cpp_local``) names its adapter in the registry; the experiment looks it up and
calls it with the config's parameters. These tests pin the three things that must hold:
the lookup is what decides (a re-pointed registry entry builds the other object), the
config's parameters fit the adapter's signature (a renamed argument on either side
fails here, not in a user's run), and the code identities the run records are those of
before the registry (the C4 facet and the manifest's parts).
"""

from __future__ import annotations

import inspect

import pytest

from xaytune.core.errors import PluginError
from xaytune.experiment.config import (
    AnthropicModelConfig,
    LlamaCppLocalModelConfig,
    OpenAICompatibleModelConfig,
    SimulatedModelConfig,
    TargetModelConfig,
)
from xaytune.experiment.model_adapters import (
    adapter_identity,
    build_model,
    configured_adapter,
    model_adapter_identity,
)
from xaytune.models import ModelIdentity, ModelReply, ModelRequest, SimulatedModel, Usage
from xaytune.plugins import BUILTINS, lookup

CONFIGS = {
    "simulated": SimulatedModelConfig(kind="simulated"),
    "openai_compatible": OpenAICompatibleModelConfig(
        kind="openai_compatible", base_url="http://127.0.0.1:9/v1", name="served-model"
    ),
    "anthropic": AnthropicModelConfig(kind="anthropic", name="claude-x"),
    "llama_cpp_local": LlamaCppLocalModelConfig(kind="llama_cpp_local"),
}


class StandIn:
    """A model adapter a test points a built-in registry entry at."""

    def __init__(self, *, seed: int, **settings: object) -> None:
        self.settings = {"seed": seed, **settings}

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(provider="test", model="stand-in", revision="1")

    async def complete(self, request: ModelRequest) -> ModelReply:
        return ModelReply(text="ANSWER: 0", tool_calls=(), usage=Usage(1, 1), finish_reason="stop")


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_each_kind_is_the_registrys_entry_of_that_name(kind):
    config = CONFIGS[kind]
    assert config.adapter == kind
    assert configured_adapter(config) is lookup("model", kind, where="test")[1]


def test_the_registry_decides_what_a_kind_builds(monkeypatch):
    # Re-pointing the built-in entry (nothing else) changes what the simulated kind builds.
    monkeypatch.setitem(BUILTINS["model"], "simulated", f"{__name__}:StandIn")
    model = build_model(SimulatedModelConfig(kind="simulated", latency_s=0.5), seed=7)
    assert isinstance(model, StandIn)
    # The config's fields, the replicate's seed (the config pins none), nothing else.
    assert model.settings == {
        "seed": 7,
        "latency_s": 0.5,
        "transient_error_rate": 0.0,
        "context_window": None,
        "mental_error_base": 0.08,
        "usage_details": False,
    }


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_a_kinds_parameters_fit_its_adapters_signature(kind):
    config = CONFIGS[kind]
    adapter = configured_adapter(config)
    # Raises TypeError when a config field and the adapter's arguments drift apart.
    inspect.signature(adapter).bind(**config.adapter_params(seed=101))


def test_the_http_kinds_send_the_served_name_as_model():
    # The keyword arguments the adapters were built with before the registry (written
    # out by hand from the earlier explicit constructor calls).
    openai = CONFIGS["openai_compatible"].adapter_params(seed=101)
    assert openai == {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "served-model",
        "api_key_env": None,
        "revision": "unpinned",
        "parameters": {},
        "timeout_s": 60.0,
        "total_timeout_s": 600.0,
        "max_retries": 3,
    }
    anthropic = CONFIGS["anthropic"].adapter_params(seed=101)
    assert anthropic == {
        "model": "claude-x",
        "base_url": "https://api.anthropic.com",
        "api_key_env": "ANTHROPIC_API_KEY",
        "anthropic_version": "2023-06-01",
        "revision": "unpinned",
        "parameters": {},
        "max_tokens": 4096,
        "timeout_s": 60.0,
        "total_timeout_s": 600.0,
        "max_retries": 3,
    }
    assert CONFIGS["llama_cpp_local"].adapter_params(seed=5)["seed"] == 5


def test_a_simulated_model_is_seeded_per_replicate_unless_pinned():
    assert build_model(CONFIGS["simulated"], seed=102).identity.parameters["seed"] == 102
    pinned = SimulatedModelConfig(kind="simulated", seed=9)
    assert build_model(pinned, seed=102).identity.parameters["seed"] == 9


def test_the_simulators_identities_are_those_of_before_the_registry():
    # What every replicate record's C4 facet and the manifest's parts name: the class,
    # not the registry's name for it (the golden runs and the cache keys depend on it).
    model = build_model(CONFIGS["simulated"], seed=101)
    assert type(model) is SimulatedModel
    built = model_adapter_identity(model)
    assert built.name == "SimulatedModel"
    assert built.target == "xaytune.models.simulated.SimulatedModel"
    assert adapter_identity(CONFIGS["simulated"]) == built


def test_an_http_kind_builds_its_adapter_without_a_call():
    model = build_model(CONFIGS["openai_compatible"], seed=101)
    assert type(model).__name__ == "OpenAICompatibleModel"
    assert model.identity.model == "served-model"
    assert adapter_identity(CONFIGS["openai_compatible"]) == model_adapter_identity(model)


def test_a_target_names_a_registered_builtin_or_is_refused():
    scripted = TargetModelConfig.model_validate({"_target_": "simulated", "latency_s": 0})
    assert type(build_model(scripted, seed=3)) is SimulatedModel  # seed added: it takes one
    with pytest.raises(PluginError) as refused:
        build_model(TargetModelConfig.model_validate({"_target_": "no-such-model"}), seed=1)
    assert refused.value.reason == "unknown-part"
