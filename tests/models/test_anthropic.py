"""The Anthropic Messages adapter against a real aiohttp.web server on 127.0.0.1 answering
in the documented shapes (tests/models/fixtures/README.md says where each came from)."""

from __future__ import annotations

import asyncio
import json
from fractions import Fraction
from pathlib import Path

import pytest

from xaytune.core.errors import ConfigError
from xaytune.models import (
    AnthropicModel,
    ContextOverflowError,
    Message,
    ModelError,
    ModelPrices,
    ModelRequest,
    ToolCall,
    ToolSchema,
    TransientModelError,
    Usage,
)

FIXTURES = Path(__file__).parent / "fixtures"
TOOL_USE = json.loads((FIXTURES / "anthropic_tool_use.json").read_text())
END_TURN = json.loads((FIXTURES / "anthropic_end_turn_no_cache.json").read_text())
ERRORS = json.loads((FIXTURES / "anthropic_errors.json").read_text())
CALCULATOR = ToolSchema(
    name="calculator",
    description="Evaluate an arithmetic expression.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}},
)
SEARCH = ToolSchema(name="search", description="Search.", parameters={"type": "object"})


def model(provider, **options) -> AnthropicModel:
    options = {"api_key_env": None, "backoff_s": 0.001, "backoff_cap_s": 0.002, **options}
    return AnthropicModel("claude-sonnet-4-5", base_url=provider.root + "/", **options)


def run(adapter: AnthropicModel, request: ModelRequest):
    async def once():
        try:
            return await adapter.complete(request)
        finally:
            await adapter.aclose()

    return asyncio.run(once())


def refusal(adapter: AnthropicModel, request: ModelRequest) -> ModelError:
    with pytest.raises(ModelError) as caught:
        run(adapter, request)
    return caught.value


HELLO = ModelRequest(messages=(Message("user", "What is 17 * 23?"),), sampling_key="k")


def test_a_conversation_with_tools_is_sent_as_the_messages_api_expects(provider, monkeypatch):
    monkeypatch.setenv("XAYTUNE_ANTHROPIC_KEY", "sk-ant-secret")
    provider.answer(200, END_TURN)
    request = ModelRequest(
        messages=(
            Message("system", "Be brief."),
            Message("system", "Use the tools."),
            Message("user", "What is 17 * 23, and who said it?"),
            Message(
                "assistant",
                "Let me check.",
                tool_calls=(
                    ToolCall("toolu_1", "calculator", '{"expression": "17 * 23"}'),
                    ToolCall("toolu_2", "search", '{"q": "17 * 23"}'),
                ),
            ),
            Message("tool", "391", tool_call_id="toolu_1"),
            Message("tool", "no results", tool_call_id="toolu_2"),
            Message("user", "Answer now."),
        ),
        tools=(CALCULATOR, SEARCH),
        max_output_tokens=300,
        sampling_key="k",
    )
    adapter = model(
        provider,
        api_key_env="XAYTUNE_ANTHROPIC_KEY",
        parameters={"temperature": 0.0, "max_tokens": 200},
    )
    reply = run(adapter, request)
    assert reply.text == "17 * 23 = 391." and reply.finish_reason == "stop"
    (seen,) = provider.seen
    assert (seen.method, seen.path) == ("POST", "/v1/messages")
    assert seen.headers["x-api-key"] == "sk-ant-secret"
    assert seen.headers["anthropic-version"] == "2023-06-01"
    # Written by hand from the Messages API reference: system at the top level, the two
    # tool results (and the user's next words) merged into ONE user message.
    assert seen.body == {
        "model": "claude-sonnet-4-5",
        "temperature": 0.0,
        "max_tokens": 200,  # the pinned 200 and the harness's 300: the smaller
        "system": "Be brief.\n\nUse the tools.",
        "messages": [
            {"role": "user",
             "content": [{"type": "text", "text": "What is 17 * 23, and who said it?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "calculator",
                     "input": {"expression": "17 * 23"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "search",
                     "input": {"q": "17 * 23"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "391"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no results"},
                    {"type": "text", "text": "Answer now."},
                ],
            },
        ],
        "tools": [
            {"name": "calculator", "description": "Evaluate an arithmetic expression.",
             "input_schema": CALCULATOR.parameters},
            {"name": "search", "description": "Search.", "input_schema": {"type": "object"}},
        ],
    }  # fmt: skip


def test_max_tokens_falls_back_to_the_declared_default(provider):
    provider.answer(200, END_TURN)
    run(model(provider, max_tokens=777), HELLO)
    assert provider.seen[0].body["max_tokens"] == 777
    assert "system" not in provider.seen[0].body and "tools" not in provider.seen[0].body


def test_a_tool_use_reply_becomes_tool_calls_with_cache_usage_counted(provider):
    provider.answer(200, TOOL_USE)
    reply = run(model(provider), HELLO)
    assert reply.text == "I'll compute that with the calculator."
    assert reply.tool_calls == (
        ToolCall("toolu_01A09q90qw90lq917835lq9", "calculator", '{"expression": "17 * 23"}'),
    )
    assert reply.finish_reason == "tool_calls"
    # By hand: Anthropic's input_tokens (412) excludes the cache: 412 + 1536 written + 2048
    # read = 3996 prompt tokens, of which 2048 were read from the cache.
    assert reply.usage == Usage(
        input_tokens=3996, output_tokens=57, cached_tokens=2048, cache_write_tokens=1536
    )
    assert reply.extra == {"served_model": "claude-sonnet-4-5-20250929"}


def test_the_reply_usage_is_priced_with_cache_reads_and_writes(provider):
    provider.answer(200, TOOL_USE)
    usage = run(model(provider), HELLO).usage
    prices = ModelPrices(
        input_per_mtok=3.0,
        cached_input_per_mtok=0.3,
        cache_write_per_mtok=3.75,
        output_per_mtok=15.0,
    )
    # By hand: 412 * 3 + 2048 * 0.3 + 1536 * 3.75 + 57 * 15 = 1236 + 614.4 + 5760 + 855
    # = 8465.4 micro-dollars.
    exact = Fraction(84654, 10_000_000)
    cost = prices.call_cost(
        usage.input_tokens,
        usage.cached_tokens,
        usage.output_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    assert cost == exact
    # Without the write count (what the recorded trajectory holds today) the cost is not
    # known, and the bound prices the 1948 uncached input tokens at the write price:
    # 1948 * 3.75 + 614.4 + 855 = 8774.4 micro-dollars, above the exact cost.
    assert prices.call_cost(usage.input_tokens, usage.cached_tokens, usage.output_tokens) is None
    bound = prices.call_cost_bound(usage.input_tokens, usage.cached_tokens, usage.output_tokens)
    assert bound == Fraction(87744, 10_000_000) and bound > exact


def test_zero_cache_counts_are_reported_zeros(provider):
    provider.answer(200, END_TURN)
    usage = run(model(provider), HELLO).usage
    assert usage == Usage(input_tokens=530, output_tokens=9, cached_tokens=0, cache_write_tokens=0)


def test_absent_cache_counts_are_unknown_not_zero(provider):
    provider.answer(200, {**END_TURN, "usage": {"input_tokens": 530, "output_tokens": 9}})
    usage = run(model(provider), HELLO).usage
    assert usage.cached_tokens is None and usage.cache_write_tokens is None
    assert usage.input_tokens == 530


@pytest.mark.parametrize(
    ("stop", "finish", "raw"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "length", None),
        ("model_context_window_exceeded", "length", None),
        ("refusal", "content_filter", None),
        ("pause_turn", "stop", "pause_turn"),
        (None, "stop", None),
    ],
)
def test_stop_reasons_are_mapped_and_others_recorded_raw(provider, stop, finish, raw):
    provider.answer(200, {**END_TURN, "stop_reason": stop})
    reply = run(model(provider), HELLO)
    assert reply.finish_reason == finish
    assert reply.extra.get("finish_reason_raw") == raw


def test_thinking_blocks_carry_no_answer(provider):
    content = [{"type": "thinking", "thinking": "hmm", "signature": "x"}, *END_TURN["content"]]
    provider.answer(200, {**END_TURN, "content": content})
    assert run(model(provider), HELLO).text == "17 * 23 = 391."


@pytest.mark.parametrize(
    ("status", "name", "reason"),
    [
        (401, "authentication_error", "model-auth"),
        (404, "not_found_error", "model-unknown"),
        (400, "invalid_request_error", "model-error"),
    ],
)
def test_error_bodies_map_to_reason_words(provider, status, name, reason):
    provider.answer(status, ERRORS[name])
    error = refusal(model(provider), HELLO)
    assert error.reason == reason and error.retries == 0
    assert ERRORS[name]["error"]["message"] in str(error) and "\n" not in str(error)


def test_a_prompt_too_long_is_context_overflow(provider):
    provider.answer(400, ERRORS["prompt_too_long"])
    error = refusal(model(provider), HELLO)
    assert isinstance(error, ContextOverflowError) and error.reason == "context-overflow"
    assert not error.definitive


def test_overload_and_rate_limits_exhaust_as_transient(provider):
    provider.answer(529, ERRORS["overloaded_error"])
    provider.answer(429, ERRORS["rate_limit_error"], headers={"retry-after": "0"})
    provider.answer(529, ERRORS["overloaded_error"])
    error = refusal(model(provider, max_retries=2), HELLO)
    assert isinstance(error, TransientModelError) and error.retries == 2
    assert "HTTP 529" in str(error)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("<html>Bad gateway page</html>", "not JSON"),
        ({"type": "message", "content": "hi", "usage": {}}, "no content list"),
        ({**END_TURN, "content": [{"type": "tool_use", "id": "t", "name": "calculator",
                                   "input": "17*23"}]}, "input is not an object"),
        ({**END_TURN, "content": [{"text": "untyped"}]}, "has no type"),
        ({**END_TURN, "usage": {**END_TURN["usage"], "cache_read_input_tokens": -1}},
         "cache_read_input_tokens is not a token count"),
    ],
)  # fmt: skip
def test_a_reply_that_is_not_the_protocols_is_model_malformed(provider, body, words):
    provider.answer(200, body)
    error = refusal(model(provider), HELLO)
    assert error.reason == "model-malformed" and error.definitive and words in str(error)


def test_an_error_body_with_status_200_is_still_a_refusal(provider):
    provider.answer(200, ERRORS["not_found_error"])
    assert refusal(model(provider), HELLO).reason == "model-unknown"


def test_tool_call_arguments_that_are_not_an_object_are_refused_before_sending(provider):
    request = ModelRequest(
        messages=(
            Message("user", "go"),
            Message("assistant", None, tool_calls=(ToolCall("t1", "calculator", "[1, 2]"),)),
            Message("tool", "error", tool_call_id="t1"),
        )
    )
    error = refusal(model(provider), request)
    assert error.reason == "model-error" and "'t1'" in str(error)
    assert provider.seen == []


def test_the_identity_pins_provider_model_revision_and_parameters():
    adapter = AnthropicModel(
        "claude-x", api_key_env=None, revision="2026-01", parameters={"temperature": 0.5}
    )
    assert adapter.identity.model_dump() == {
        "provider": "anthropic",
        "model": "claude-x",
        "revision": "2026-01",
        "parameters": {"temperature": 0.5},
    }
    assert adapter.base_url == "https://api.anthropic.com"


def test_a_missing_key_variable_is_model_auth_at_construction(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelError) as caught:
        AnthropicModel("claude-x")
    assert caught.value.reason == "model-auth" and "ANTHROPIC_API_KEY" in str(caught.value)


@pytest.mark.parametrize(
    "options",
    [{"parameters": {"system": "x"}}, {"parameters": {"messages": []}}, {"max_tokens": 0},
     {"base_url": "api.anthropic.com"}],
)  # fmt: skip
def test_bad_options_are_model_config(options):
    with pytest.raises(ConfigError) as caught:
        AnthropicModel("claude-x", api_key_env=None, **options)
    assert caught.value.reason == "model-config"


def test_the_config_builds_the_adapter_with_its_keys(monkeypatch):
    from omegaconf import OmegaConf

    from xaytune.experiment.config import AnthropicModelConfig
    from xaytune.experiment.model_adapters import build_model

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-config")
    conf = Path(__file__).parents[2] / "xaytune" / "conf" / "model" / "anthropic.yaml"
    plain = OmegaConf.to_container(OmegaConf.load(conf))
    config = AnthropicModelConfig.model_validate({**plain, "name": "claude-x", "max_tokens": 99})
    adapter = build_model(config, seed=1)
    assert isinstance(adapter, AnthropicModel)
    assert adapter.identity.model_dump() == {
        "provider": "anthropic",
        "model": "claude-x",
        "revision": "unpinned",
        "parameters": {"temperature": 0.0},
    }
    assert adapter.request_body(HELLO)["max_tokens"] == 99


def _composed(*overrides: str) -> dict:
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        config = compose(config_name="config", overrides=["+experiment=quickstart", *overrides])
    return OmegaConf.to_container(config, resolve=True)


def test_model_anthropic_composes_and_validates():
    from xaytune.experiment.config import AnthropicModelConfig, validate_config

    cfg = validate_config(_composed("model=anthropic", "model.name=claude-x"))
    assert isinstance(cfg.model, AnthropicModelConfig)
    assert (cfg.model.name, cfg.model.api_key_env) == ("claude-x", "ANTHROPIC_API_KEY")


def test_an_anthropic_price_table_without_a_cache_write_price_is_refused():
    # Cache writes cost more than input: an unpriced write would underestimate the cost.
    from xaytune.experiment.config import validate_config

    plain = _composed("model=anthropic", "model.name=claude-x")
    plain["model"]["prices"] = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
    with pytest.raises(ConfigError) as caught:
        validate_config(plain)
    assert caught.value.reason == "bad-config"
    assert str(caught.value).startswith("bad-config: model.prices")
    assert "cache_write_per_mtok" in str(caught.value) and "\n" not in str(caught.value)
    plain["model"]["prices"]["cache_write_per_mtok"] = 3.75
    assert validate_config(plain).model.prices.cache_write_per_mtok == 3.75
