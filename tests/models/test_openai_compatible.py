"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import time
import warnings

import pytest

from xaytune.core.errors import ConfigError
from xaytune.models import (
    ContextOverflowError,
    Message,
    Model,
    ModelError,
    ModelRequest,
    OpenAICompatibleModel,
    ToolCall,
    ToolSchema,
    TransientModelError,
)

HELLO = ModelRequest(
    messages=(Message("system", "Be brief."), Message("user", "Say hi.")), sampling_key="s"
)
CALCULATOR = ToolSchema(
    name="calculator",
    description="Evaluate an arithmetic expression.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}},
)


def completion(content="hi", *, tool_calls=None, finish="stop", usage=(12, 3)) -> dict:
    message = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body = {
        "id": "chatcmpl-1",
        "model": "served-name",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
    return body


def run(model: OpenAICompatibleModel, request: ModelRequest = HELLO):
    async def once():
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(once())


def refusal(model: OpenAICompatibleModel, request: ModelRequest = HELLO) -> ModelError:
    with pytest.raises(ModelError) as caught:
        run(model, request)
    return caught.value


def test_plain_chat_returns_text_usage_and_sends_parameters(chat_server, monkeypatch):
    monkeypatch.setenv("XAYTUNE_TEST_KEY", "sk-test-secret")
    chat_server.respond(body=completion("hello there"))
    model = OpenAICompatibleModel(
        chat_server.base_url + "/",
        "tiny-chat",
        api_key_env="XAYTUNE_TEST_KEY",
        revision="2026-01",
        parameters={"temperature": 0.0, "seed": 7},
    )
    reply = run(model)
    assert reply.text == "hello there" and reply.tool_calls == ()
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 3)
    assert reply.finish_reason == "stop" and reply.retries == 0
    assert reply.extra["served_model"] == "served-name"
    (sent,) = chat_server.received
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == "Bearer sk-test-secret"
    assert sent.body == {
        "model": "tiny-chat",
        "temperature": 0.0,
        "seed": 7,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hi."},
        ],
    }
    assert isinstance(model, Model)
    assert model.base_url == chat_server.base_url
    assert model.identity.model_dump() == {
        "provider": "openai-compatible",
        "model": "tiny-chat",
        "revision": "2026-01",
        "parameters": {"temperature": 0.0, "seed": 7},
    }
    assert "sk-test-secret" not in repr(model) + model.identity.model_dump_json()


def test_tool_calls_round_trip(chat_server):
    call = {
        "id": "call_9",
        "type": "function",
        "function": {"name": "calculator", "arguments": '{"expression": "2 + 2"}'},
    }
    chat_server.respond(body=completion(None, tool_calls=[call], finish="tool_calls"))
    history = ModelRequest(
        messages=(
            Message("user", "What is 1 + 1, then 2 + 2?"),
            Message(
                "assistant", None, (ToolCall("call_1", "calculator", '{"expression": "1 + 1"}'),)
            ),
            Message("tool", "2", tool_call_id="call_1"),
        ),
        tools=(CALCULATOR,),
    )
    reply = run(OpenAICompatibleModel(chat_server.base_url, "tiny-chat"), history)
    assert reply.finish_reason == "tool_calls" and reply.text is None
    assert reply.tool_calls == (ToolCall("call_9", "calculator", '{"expression": "2 + 2"}'),)
    body = chat_server.received[0].body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "calculator",
                "description": "Evaluate an arithmetic expression.",
                "parameters": CALCULATOR.parameters,
            },
        }
    ]
    assert body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "calculator", "arguments": '{"expression": "1 + 1"}'},
            }
        ],
    }
    assert body["messages"][2] == {"role": "tool", "content": "2", "tool_call_id": "call_1"}
    assert "Authorization" not in chat_server.received[0].headers


def test_rate_limit_is_retried_after_the_retry_after_delay(chat_server):
    chat_server.respond(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0.3"})
    chat_server.respond(body=completion())
    started = time.perf_counter()
    reply = run(OpenAICompatibleModel(chat_server.base_url, "tiny-chat", backoff_s=0.0))
    assert time.perf_counter() - started >= 0.3  # backoff is 0: the wait is Retry-After's
    assert reply.retries == 1 and reply.text == "hi"
    assert len(chat_server.received) == 2


def test_server_errors_exhaust_retries_as_transient(chat_server):
    chat_server.respond(503, {"error": "overloaded"}, times=3)
    error = refusal(
        OpenAICompatibleModel(chat_server.base_url, "tiny-chat", max_retries=2, backoff_s=0.01)
    )
    assert isinstance(error, TransientModelError)
    assert error.reason == "model-transient" and error.retries == 2
    assert len(chat_server.received) == 3
    assert "tiny-chat" in str(error) and chat_server.base_url in str(error)


def test_timeouts_are_retried_then_transient(chat_server):
    chat_server.respond(body=completion(), delay_s=0.6, times=2)
    model = OpenAICompatibleModel(
        chat_server.base_url, "tiny-chat", timeout_s=0.2, max_retries=1, backoff_s=0.0
    )
    error = refusal(model)
    assert isinstance(error, TransientModelError)
    assert error.reason == "model-transient" and error.retries == 1


def test_refused_connection_is_transient():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleModel(
        f"http://127.0.0.1:{port}/v1", "tiny-chat", max_retries=1, backoff_s=0.0
    )
    error = refusal(model)
    assert error.reason == "model-transient" and error.retries == 1


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_model_auth(chat_server, monkeypatch, status):
    monkeypatch.setenv("XAYTUNE_TEST_KEY", "sk-leaky")
    chat_server.respond(status, {"error": {"message": "Incorrect API key sk-leaky"}})
    error = refusal(
        OpenAICompatibleModel(chat_server.base_url, "tiny-chat", api_key_env="XAYTUNE_TEST_KEY")
    )
    assert error.reason == "model-auth"
    assert "sk-leaky" not in str(error) and "\n" not in str(error)


def test_missing_key_variable_is_refused_at_construction(monkeypatch):
    monkeypatch.delenv("XAYTUNE_NO_SUCH_KEY", raising=False)
    with pytest.raises(ModelError) as caught:
        OpenAICompatibleModel(
            "http://127.0.0.1:9/v1", "tiny-chat", api_key_env="XAYTUNE_NO_SUCH_KEY"
        )
    assert caught.value.reason == "model-auth"
    assert "XAYTUNE_NO_SUCH_KEY" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "message"),
    [(404, "Not Found"), (400, "The model `tiny-chat` does not exist")],
)
def test_unknown_model_is_model_unknown(chat_server, status, message):
    chat_server.respond(status, {"error": {"message": message}})
    error = refusal(OpenAICompatibleModel(chat_server.base_url, "tiny-chat"))
    assert error.reason == "model-unknown"


@pytest.mark.parametrize(
    "body",
    [  # OpenAI, vLLM and llama.cpp server wordings
        {
            "error": {
                "message": "This model's maximum context length is 4096 tokens. However, "
                "you requested 5000 tokens.",
                "code": "context_length_exceeded",
            }
        },
        {
            "object": "error",
            "message": "This model's maximum context length is 2048 tokens.",
            "type": "BadRequestError",
            "code": 400,
        },
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ],
)
def test_context_length_error_is_context_overflow(chat_server, body):
    chat_server.respond(400, body)
    error = refusal(OpenAICompatibleModel(chat_server.base_url, "tiny-chat"))
    assert isinstance(error, ContextOverflowError)
    assert error.reason == "context-overflow" and error.retries == 0


def test_other_client_errors_are_model_error_with_retries_counted(chat_server):
    chat_server.respond(502, "bad gateway")
    chat_server.respond(422, {"error": {"message": "temperature must be <= 2"}})
    error = refusal(OpenAICompatibleModel(chat_server.base_url, "tiny-chat", backoff_s=0.0))
    assert error.reason == "model-error" and error.retries == 1
    assert "temperature must be <= 2" in str(error)


def test_reply_without_usage_is_refused(chat_server):
    chat_server.respond(body=completion(usage=None))
    error = refusal(OpenAICompatibleModel(chat_server.base_url, "tiny-chat"))
    assert error.reason == "usage-missing"


def test_max_output_tokens_is_sent_as_max_tokens(chat_server):
    chat_server.respond(body=completion(), times=2)
    limited = ModelRequest(messages=HELLO.messages, max_output_tokens=64)
    run(OpenAICompatibleModel(chat_server.base_url, "tiny-chat"), limited)
    run(
        OpenAICompatibleModel(chat_server.base_url, "tiny-chat", parameters={"max_tokens": 32}),
        limited,
    )
    assert [sent.body["max_tokens"] for sent in chat_server.received] == [64, 32]


def test_one_model_serves_several_event_loops_in_turn(chat_server):
    chat_server.respond(body=completion("one"))
    chat_server.respond(body=completion("two"))
    model = OpenAICompatibleModel(chat_server.base_url, "tiny-chat")
    first = run(model)  # run() closes the loop's client before its loop ends
    second = run(model)
    assert (first.text, second.text) == ("one", "two")


@pytest.mark.parametrize(
    "options",
    [
        {"base_url": "127.0.0.1:8080/v1"},
        {"timeout_s": 0},
        {"max_retries": -1},
        {"parameters": {"messages": []}},
    ],
)
def test_invalid_client_options_are_refused(options):
    arguments = {"base_url": "http://127.0.0.1:9/v1", "model": "tiny-chat", **options}
    with pytest.raises(ConfigError) as caught:
        OpenAICompatibleModel(**arguments)
    assert caught.value.reason == "model-config"


# -- limits on a reply (issue 23): a malformed reply is model-malformed (definitive) -------


def _raw_completion(content_json: str) -> str:
    """A completion whose message content is the raw JSON text ``content_json``."""
    return (
        '{"choices": [{"message": {"role": "assistant", "content": ' + content_json + "}, "
        '"finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
    )


@pytest.mark.parametrize(
    ("body", "word"),
    [
        (_raw_completion("[" * 100_000 + "]" * 100_000), "too-deep"),
        (_raw_completion("[" * 100_000), "too-deep"),
        (_raw_completion("9" * 5_000), "too-many-digits"),
        (_raw_completion("1e400"), "out-of-range"),
        (_raw_completion('"\\ud800 lone"'), "not-text"),
        (json.dumps({**completion(), "usage": {"prompt_tokens": 2**60, "completion_tokens": 1}}),
         "out-of-range"),
        (json.dumps({"choices": [{"message": "hi"}], "usage": {"prompt_tokens": 1,
                                                              "completion_tokens": 1}}),
         "message is not an object"),
        (json.dumps({**completion(), "choices": [{"message": {"content": "x"},
                                                  "finish_reason": ["stop"]}]}),
         "finish_reason is not text"),
    ],
)  # fmt: skip
def test_a_reply_breaking_a_limit_is_a_malformed_reply(chat_server, body: str, word: str):
    chat_server.respond(body=body)
    error = refusal(OpenAICompatibleModel(chat_server.base_url, "tiny-chat", max_retries=0))
    assert error.reason == "model-malformed" and error.retries == 0 and error.definitive
    assert word in str(error)
    assert "\n" not in str(error) and len(str(error)) < 300


def test_a_reply_body_over_the_size_limit_is_refused_before_it_is_parsed(chat_server, monkeypatch):
    from xaytune.core import limits

    monkeypatch.setattr(limits, "MAX_MODEL_REPLY_BYTES", 1_000)
    chat_server.respond(body=completion("x" * 5_000))
    error = refusal(OpenAICompatibleModel(chat_server.base_url, "tiny-chat"))
    assert error.reason == "model-malformed"
    assert "too-large" in str(error) and "MAX_MODEL_REPLY_BYTES" in str(error)


def test_tool_call_arguments_breaking_a_limit_pass_through_to_the_toolbox(chat_server):
    # The toolbox, not the adapter, refuses them: the model sees bad-arguments and the
    # attempt continues.
    from xaytune.harness.toolbox import Toolbox

    deep = '{"expression": ' + "[" * 100_000 + "]" * 100_000 + "}"
    call = {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": deep}}
    chat_server.respond(body=completion(None, tool_calls=[call], finish="tool_calls"))
    reply = run(OpenAICompatibleModel(chat_server.base_url, "tiny-chat"))
    (tool_call,) = reply.tool_calls
    assert tool_call.arguments == deep
    result = Toolbox.default().call(tool_call, authorized=frozenset({"calculator"}))
    assert result.error == "bad-arguments" and "too-deep" in result.content


# -- the connection pool (issue 22): no cap of the adapter's own, connections kept alive ----


def test_every_concurrent_request_is_in_flight_at_once_and_connections_are_reused(chat_server):
    # 150 concurrent calls, each held 0.5 s by the server: all 150 reach it together
    # (httpx's default pool held at most 100, aiohttp's default connector 100 too), and
    # a second round reuses the 150 connections instead of opening new ones.
    calls = 150
    chat_server.respond(body=completion(), delay_s=0.5, times=2 * calls)
    model = OpenAICompatibleModel(chat_server.base_url, "tiny-chat", max_retries=0)

    async def rounds():
        try:
            first = await asyncio.gather(*(model.complete(HELLO) for _ in range(calls)))
            second = await asyncio.gather(*(model.complete(HELLO) for _ in range(calls)))
            return first + second
        finally:
            await model.aclose()

    replies = asyncio.run(rounds())
    assert [reply.text for reply in replies] == ["hi"] * (2 * calls)
    assert chat_server.peak_in_flight == calls
    assert chat_server.connections == calls


def test_a_loop_that_ends_without_aclose_closes_the_session_in_that_loop(chat_server, caplog):
    # HarnessRunner.run and a quick asyncio.run(model.complete(...)) never await
    # aclose(): the loop's shutdown closes the session, so nothing is reported unclosed
    # and the server sees each connection closed.
    chat_server.respond(body=completion("one"))
    chat_server.respond(body=completion("two"))
    model = OpenAICompatibleModel(chat_server.base_url, "tiny-chat")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = asyncio.run(model.complete(HELLO))
        second = asyncio.run(model.complete(HELLO))  # a new loop: a new session
        gc.collect()
    assert (first.text, second.text) == ("one", "two")
    assert chat_server.connections == 2
    unclosed = [str(w.message) for w in caught if "nclosed" in str(w.message)]
    assert unclosed == [] and "nclosed" not in caplog.text


_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def test_the_environments_proxy_carries_requests_and_no_proxy_bypasses_it(chat_server, monkeypatch):
    # As with httpx before: HTTP_PROXY is honoured and NO_PROXY names hosts reached directly.
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    proxy = chat_server.base_url.removesuffix("/v1")
    monkeypatch.setenv("HTTP_PROXY", proxy)
    chat_server.respond(body=completion("through the proxy"))
    reply = run(OpenAICompatibleModel("http://model.invalid/v1", "tiny-chat", max_retries=0))
    assert reply.text == "through the proxy"
    assert chat_server.received[0].path == "http://model.invalid/v1/chat/completions"

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{probe.getsockname()[1]}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    chat_server.respond(body=completion("directly"))
    reply = run(OpenAICompatibleModel(chat_server.base_url, "tiny-chat", max_retries=0))
    assert reply.text == "directly"
    assert chat_server.received[1].path == "/v1/chat/completions"


def test_a_redirect_is_not_followed_but_refused_as_a_model_error(chat_server):
    # The body (and the key) go to the configured endpoint only, never to another URL.
    chat_server.respond(307, {}, headers={"Location": chat_server.base_url + "/elsewhere"})
    error = refusal(OpenAICompatibleModel(chat_server.base_url, "tiny-chat", max_retries=0))
    assert error.reason == "model-error" and "HTTP 307" in str(error)
    assert [sent.path for sent in chat_server.received] == ["/v1/chat/completions"]
