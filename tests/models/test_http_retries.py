"""The retry loop both HTTP adapters share, against a real aiohttp.web server on 127.0.0.1:
which answers are retried, how many retries are counted, the deterministic jitter and
the per-request bounds (a hang, a trickle)."""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import time

import pytest

from xaytune.core.errors import ConfigError
from xaytune.models import (
    AnthropicModel,
    Message,
    ModelError,
    ModelRequest,
    OpenAICompatibleModel,
    TransientModelError,
)
from xaytune.models._http import backoff_delay, jitter_fraction, retry_after

HELLO = ModelRequest(messages=(Message("user", "Say hi."),), sampling_key="task-7:0")
COMPLETION = {
    "model": "served",
    "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1},
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "hi"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 5, "output_tokens": 1},
}
FAST = {"backoff_s": 0.001, "backoff_cap_s": 0.002}


def run(model, request: ModelRequest = HELLO):
    async def once():
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(once())


def failure(model) -> ModelError:
    with pytest.raises(ModelError) as caught:
        run(model)
    return caught.value


# -- deterministic jitter ----------------------------------------------------------------


def test_the_jitter_fraction_is_sha256_of_the_key_and_the_retry_number():
    # Recomputed independently from its definition: the first 8 bytes of the digest / 2^64.
    digest = hashlib.sha256(b"xaytune.retry/v1\0task-7:0\x002").digest()
    assert jitter_fraction("task-7:0", 2) == int.from_bytes(digest[:8], "big") / 2**64
    assert jitter_fraction("task-7:0", 2) == jitter_fraction("task-7:0", 2)
    assert jitter_fraction("task-7:0", 2) != jitter_fraction("task-8:0", 2)
    assert jitter_fraction("task-7:0", 2) != jitter_fraction("task-7:0", 3)


@pytest.mark.parametrize("retry", range(12))
def test_a_backoff_delay_lies_in_the_upper_half_of_the_capped_exponential(retry):
    for key in ("a", "b", "task-7:0", ""):
        delay = backoff_delay(key, retry, base_s=0.5, cap_s=4.0)
        ceiling = min(4.0, 0.5 * 2**retry)  # 0.5, 1, 2, 4, 4, ...
        assert ceiling / 2 <= delay <= ceiling <= 4.0
        assert delay == ceiling * (0.5 + 0.5 * jitter_fraction(key, retry))


def test_the_same_key_waits_the_same_and_different_keys_spread():
    same = {backoff_delay("k", 3, base_s=1.0, cap_s=60.0) for _ in range(5)}
    assert len(same) == 1
    spread = {backoff_delay(f"task-{n}", 3, base_s=1.0, cap_s=60.0) for n in range(50)}
    assert len(spread) == 50


# -- Retry-After ---------------------------------------------------------------------------


def test_retry_after_reads_seconds_and_http_dates_and_is_capped():
    assert retry_after("2.5", cap_s=60.0) == 2.5
    assert retry_after("120", cap_s=60.0) == 60.0
    assert retry_after("-3", cap_s=60.0) == 0.0
    in_30s = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25.0 <= retry_after(in_30s, cap_s=60.0) <= 30.0
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after(past, cap_s=60.0) == 0.0
    for unusable in (None, "", "soon", "nan", "inf", "Wed, 99 Foo 2026 00:00:00"):
        assert retry_after(unusable, cap_s=60.0) is None


# -- retried answers, counted exactly -------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_openai_transient_statuses_are_retried_and_counted(provider, status):
    provider.answer(status, {"error": {"message": "busy"}}, times=2)
    provider.answer(200, COMPLETION)
    reply = run(OpenAICompatibleModel(provider.root + "/v1", "m", **FAST))
    assert reply.text == "hi" and reply.retries == 2
    assert provider.paths() == ["POST /v1/chat/completions"] * 3


@pytest.mark.parametrize("status", [429, 500, 502, 503, 529])
def test_anthropic_transient_statuses_including_529_are_retried(provider, status):
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    provider.answer(status, overloaded)
    provider.answer(200, MESSAGE)
    reply = run(AnthropicModel("claude-test", base_url=provider.root, api_key_env=None, **FAST))
    assert reply.text == "hi" and reply.retries == 1


def test_529_is_not_retried_by_the_openai_adapter(provider):
    # 529 is Anthropic's word; for an OpenAI-compatible endpoint it is an ordinary refusal.
    provider.answer(529, {"error": {"message": "whatever"}})
    error = failure(OpenAICompatibleModel(provider.root + "/v1", "m", **FAST))
    assert error.reason == "model-error" and error.retries == 0


def test_exhausted_retries_are_transient_with_every_retry_counted(provider):
    provider.answer(503, "unavailable", times=4)
    error = failure(OpenAICompatibleModel(provider.root + "/v1", "m", max_retries=3, **FAST))
    assert isinstance(error, TransientModelError)
    assert error.reason == "model-transient" and error.retries == 3
    assert len(provider.seen) == 4 and not error.definitive


def test_a_retry_after_http_date_is_honoured(provider):
    # A date one second from now (HTTP dates have whole seconds): the wait is at most the cap.
    when = email.utils.formatdate(time.time() + 1, usegmt=True)
    provider.answer(429, {"error": {"message": "slow"}}, headers={"Retry-After": when})
    provider.answer(200, COMPLETION)
    model = OpenAICompatibleModel(provider.root + "/v1", "m", retry_after_cap_s=0.05, **FAST)
    reply = run(model)
    assert reply.retries == 1 and reply.text == "hi"


def test_a_retry_after_in_seconds_is_capped(provider):
    # The server asks for an hour; the cap (a test-sized 0.01 s) bounds the wait.
    provider.answer(429, {"error": {"message": "slow"}}, headers={"Retry-After": "3600"})
    provider.answer(200, MESSAGE)
    model = AnthropicModel(
        "claude-test", base_url=provider.root, api_key_env=None, retry_after_cap_s=0.01, **FAST
    )
    reply = run(model)
    assert reply.retries == 1


def test_a_server_that_never_answers_is_cut_off_by_the_read_timeout(provider):
    provider.answer(mode="hang", times=2)
    model = OpenAICompatibleModel(provider.root + "/v1", "m", timeout_s=0.2, max_retries=1, **FAST)
    error = failure(model)
    assert isinstance(error, TransientModelError) and error.retries == 1
    assert "no reply within 0.2s" in str(error)


def test_a_trickling_server_is_cut_off_by_the_total_timeout(provider):
    # A byte every 20 ms never trips the 5 s read timeout; the 0.3 s total bound does.
    provider.answer(mode="trickle", times=2)
    model = AnthropicModel(
        "claude-test",
        base_url=provider.root,
        api_key_env=None,
        timeout_s=5.0,
        total_timeout_s=0.3,
        max_retries=1,
        **FAST,
    )
    error = failure(model)
    assert isinstance(error, TransientModelError) and error.retries == 1
    assert "0.3s in all" in str(error)


def test_a_dropped_connection_is_retried(provider):
    # Content-Length promises more than is sent: the connection breaks mid-reply.
    provider.answer(200, b'{"choices": ', mode="drop")
    provider.answer(200, COMPLETION)
    reply = run(OpenAICompatibleModel(provider.root + "/v1", "m", timeout_s=5.0, **FAST))
    assert reply.retries == 1


@pytest.mark.parametrize(
    "options",
    [
        {"backoff_s": -1.0},
        {"backoff_cap_s": float("nan")},
        {"retry_after_cap_s": float("inf")},
        {"max_retries": -1},
        {"max_retries": 10_000},
        {"timeout_s": 0.0},
        {"total_timeout_s": -5.0},
    ],
)
def test_unbounded_retry_and_timeout_options_are_refused(options):
    with pytest.raises(ConfigError) as caught:
        OpenAICompatibleModel("http://127.0.0.1:9/v1", "m", **options)
    assert caught.value.reason == "model-config"
    with pytest.raises(ConfigError) as caught:
        AnthropicModel("c", base_url="http://127.0.0.1:9", api_key_env=None, **options)
    assert caught.value.reason == "model-config"
