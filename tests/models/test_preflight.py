"""Preflight of both HTTP adapters against a real aiohttp.web server on 127.0.0.1: what an
endpoint says it serves, and one reason word per way an endpoint can be unusable."""

from __future__ import annotations

import asyncio
import socket

import pytest

from xaytune.core.canonical import canonical_bytes
from xaytune.models import (
    DEFINITIVE_REASONS,
    AnthropicModel,
    EndpointIdentity,
    ModelError,
    OpenAICompatibleModel,
    PreflightModel,
    SimulatedModel,
)

COMPLETION = {
    "id": "chatcmpl-1",
    "model": "tiny-chat-0613",
    "system_fingerprint": "fp_44709d6fcb",
    "choices": [{"message": {"role": "assistant", "content": "OK"}, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 1},
}
# vLLM's /v1/models entry: "created" is the time of the request, "permission" nested.
MODELS = {
    "object": "list",
    "data": [
        {"id": "other", "object": "model", "created": 1, "owned_by": "vllm"},
        {
            "id": "tiny-chat",
            "object": "model",
            "created": 1764820000,
            "owned_by": "vllm",
            "root": "org/tiny-chat",
            "parent": None,
            "max_model_len": 4096,
            "permission": [{"id": "modelperm-1", "created": 1764820000}],
        },
    ],
}
MESSAGE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-test-20260101",
    "content": [{"type": "text", "text": "OK"}],
    "stop_reason": "max_tokens",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 1},
}
CLAUDE_ENTRY = {
    "id": "claude-test-20260101",
    "type": "model",
    "display_name": "Claude Test",
    "created_at": "2026-01-01T00:00:00Z",
    "capabilities": {"batch": {"supported": True}},
}


def preflight(model) -> EndpointIdentity:
    async def once():
        try:
            return await model.preflight()
        finally:
            await model.aclose()

    return asyncio.run(once())


def refused(model) -> ModelError:
    with pytest.raises(ModelError) as caught:
        preflight(model)
    return caught.value


def openai(provider, **options) -> OpenAICompatibleModel:
    options = {"backoff_s": 0.001, "backoff_cap_s": 0.002, **options}
    return OpenAICompatibleModel(provider.root + "/v1", "tiny-chat", **options)


def anthropic(provider, **options) -> AnthropicModel:
    options = {"api_key_env": None, "backoff_s": 0.001, "backoff_cap_s": 0.002, **options}
    return AnthropicModel("claude-test", base_url=provider.root, **options)


def test_the_http_adapters_support_preflight_and_the_simulator_does_not():
    assert isinstance(OpenAICompatibleModel("http://127.0.0.1:9/v1", "m"), PreflightModel)
    assert isinstance(AnthropicModel("c", api_key_env=None), PreflightModel)
    assert not isinstance(SimulatedModel(seed=1), PreflightModel)


def test_openai_preflight_reports_what_the_endpoint_serves(provider, monkeypatch):
    monkeypatch.setenv("XAYTUNE_TEST_KEY", "sk-preflight")
    provider.answer(200, MODELS)
    provider.answer(200, COMPLETION)
    identity = preflight(openai(provider, api_key_env="XAYTUNE_TEST_KEY"))
    assert identity == EndpointIdentity(
        provider="openai-compatible",
        base_url=provider.root + "/v1",
        model="tiny-chat",
        served_model="tiny-chat-0613",
        system_fingerprint="fp_44709d6fcb",
        # the scalar fields of its own entry, without the per-request "created"
        model_entry={
            "id": "tiny-chat",
            "object": "model",
            "owned_by": "vllm",
            "root": "org/tiny-chat",
            "max_model_len": 4096,
        },
    )
    canonical_bytes(identity.model_dump(mode="json"))  # canonical-JSON-able
    assert provider.paths() == ["GET /v1/models", "POST /v1/chat/completions"]
    assert provider.seen[0].headers["Authorization"] == "Bearer sk-preflight"
    sent = provider.seen[1].body  # one token, the pinned parameters with it
    assert sent["max_tokens"] == 1 and sent["model"] == "tiny-chat"


@pytest.mark.parametrize("status", [404, 405])
def test_openai_preflight_tolerates_an_endpoint_without_a_models_list(provider, status):
    # llama.cpp, vLLM and Ollama differ here: the one-token completion decides.
    provider.answer(status, "Not Found", content_type="text/plain")
    provider.answer(200, {**COMPLETION, "system_fingerprint": None})
    identity = preflight(openai(provider))
    assert identity.model_entry is None and identity.system_fingerprint is None
    assert identity.served_model == "tiny-chat-0613"


def test_openai_preflight_with_a_list_that_does_not_name_the_model(provider):
    # llama.cpp lists its alias and serves any name: not a refusal, just no entry.
    provider.answer(200, {"object": "list", "data": [{"id": "/models/x.gguf"}]})
    provider.answer(200, COMPLETION)
    assert preflight(openai(provider)).model_entry is None


def test_unreachable_endpoint_is_model_unreachable_after_the_retries():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleModel(
        f"http://127.0.0.1:{port}/v1", "tiny-chat", max_retries=2, backoff_s=0.001
    )
    error = refused(model)
    assert error.reason == "model-unreachable" and error.retries == 2
    assert f"model 'tiny-chat' at http://127.0.0.1:{port}/v1" in str(error)
    assert "connection failed" in str(error) and "\n" not in str(error)


def test_an_unresolvable_host_is_model_unreachable():
    model = OpenAICompatibleModel("http://no-such-host.invalid/v1", "m", max_retries=0)
    assert refused(model).reason == "model-unreachable"


def test_a_hanging_endpoint_is_model_unreachable(provider):
    provider.answer(mode="hang", times=2)
    error = refused(openai(provider, timeout_s=0.2, max_retries=1))
    assert error.reason == "model-unreachable" and "no reply within" in str(error)


def test_an_endpoint_that_stays_overloaded_is_model_unreachable(provider):
    provider.answer(200, MODELS)
    provider.answer(503, "overloaded", times=3)
    error = refused(openai(provider, max_retries=2))
    assert error.reason == "model-unreachable" and "HTTP 503" in str(error)
    assert error.retries == 2


@pytest.mark.parametrize(("status", "on"), [(401, "models"), (403, "models"), (401, "chat")])
def test_refused_credentials_are_model_auth_and_the_key_never_shows(
    provider, monkeypatch, status, on
):
    monkeypatch.setenv("XAYTUNE_TEST_KEY", "sk-leaky-123")
    body = {"error": {"message": "Incorrect API key provided: sk-leaky-123"}}
    if on == "chat":
        provider.answer(404, {})
    provider.answer(status, body)
    error = refused(openai(provider, api_key_env="XAYTUNE_TEST_KEY"))
    assert error.reason == "model-auth" and error.definitive
    assert "sk-leaky-123" not in str(error) and "XAYTUNE_TEST_KEY" in str(error)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, {"error": {"message": "The model `tiny-chat` does not exist"}}),
        (400, {"error": {"message": "model 'tiny-chat' not found, try pulling it first"}}),
    ],
)  # OpenAI's and Ollama's wordings
def test_an_unknown_model_is_model_unknown(provider, status, body):
    provider.answer(404, {})
    provider.answer(status, body)
    error = refused(openai(provider))
    assert error.reason == "model-unknown" and error.definitive


@pytest.mark.parametrize(
    ("body", "reason", "words"),
    [
        ("<!doctype html><html><body>Welcome</body></html>", "model-malformed", "not JSON"),
        ('{"choices": [', "model-malformed", "not JSON"),
        ({"object": "chat.completion"}, "model-malformed", "no choices"),
        ({"choices": [{"message": {"content": "OK"}}]}, "usage-missing", "no prompt"),
    ],
)
def test_a_reply_the_adapter_cannot_use_is_refused_with_its_word(provider, body, reason, words):
    provider.answer(200, "<html>a web page</html>", content_type="text/html")  # /models
    provider.answer(200, body, content_type="text/html")
    error = refused(openai(provider))
    assert error.reason == reason and error.definitive and words in str(error)
    assert f"model 'tiny-chat' at {provider.root}/v1" in str(error)


def test_definitive_reasons_are_the_endpoints_own():
    expected = {"model-auth", "model-unknown", "model-malformed", "usage-missing"}
    assert expected == DEFINITIVE_REASONS
    assert ModelError("model-auth", "x").definitive
    for reason in ("model-error", "model-transient", "context-overflow", "model-unreachable"):
        assert not ModelError(reason, "x").definitive


# -- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_preflight_gets_the_model_then_sends_one_token(provider, monkeypatch):
    monkeypatch.setenv("XAYTUNE_ANTHROPIC_KEY", "sk-ant-test")
    provider.answer(200, CLAUDE_ENTRY)
    provider.answer(200, MESSAGE)
    identity = preflight(anthropic(provider, api_key_env="XAYTUNE_ANTHROPIC_KEY"))
    assert identity == EndpointIdentity(
        provider="anthropic",
        base_url=provider.root,
        model="claude-test",
        served_model="claude-test-20260101",
        system_fingerprint=None,
        model_entry={
            "id": "claude-test-20260101",
            "type": "model",
            "display_name": "Claude Test",
            "created_at": "2026-01-01T00:00:00Z",
        },
    )
    assert provider.paths() == ["GET /v1/models/claude-test", "POST /v1/messages"]
    for seen in provider.seen:
        assert seen.headers["x-api-key"] == "sk-ant-test"
        assert seen.headers["anthropic-version"] == "2023-06-01"
    assert provider.seen[1].body["max_tokens"] == 1


def test_anthropic_unknown_model_is_refused_by_the_models_route(provider):
    provider.answer(
        404, {"type": "error", "error": {"type": "not_found_error", "message": "model: x"}}
    )
    error = refused(anthropic(provider))
    assert error.reason == "model-unknown" and provider.paths() == ["GET /v1/models/claude-test"]


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "authentication_error"), (403, "permission_error")]
)
def test_anthropic_refused_credentials_are_model_auth(provider, status, kind):
    provider.answer(
        status, {"type": "error", "error": {"type": kind, "message": "invalid x-api-key"}}
    )
    assert refused(anthropic(provider)).reason == "model-auth"


def test_anthropic_gateway_without_the_models_route_lets_the_message_decide(provider):
    provider.answer(404, "404 page not found", content_type="text/plain")
    provider.answer(200, "<html>gateway</html>", content_type="text/html")
    error = refused(anthropic(provider))
    assert error.reason == "model-malformed" and "not JSON" in str(error)


def test_anthropic_reply_without_usage_is_usage_missing(provider):
    provider.answer(200, CLAUDE_ENTRY)
    provider.answer(200, {**MESSAGE, "usage": {"output_tokens": 1}})
    assert refused(anthropic(provider)).reason == "usage-missing"
