"""Fuzzing the OpenAI-compatible adapter's reply parsing through a real HTTP server.

A server on 127.0.0.1 answers fuzzed bodies (a completion with fuzzed fields, or any
bytes); ``complete`` returns a reply or raises ``ModelError`` in one line, never
anything else, and a reply it returns can be recorded as evidence and its tool calls
handed to the toolbox.
"""

from __future__ import annotations

import asyncio
import json

from _fuzz_support import (
    FUZZ,
    FUZZ_TIMEOUT,
    JSON_TEXT,
    JSON_VALUES,
    bounded_memory,
    embedded,
    one_line,
    to_bytes,
)
from hypothesis import event, example, given
from hypothesis import strategies as st

from xaytune.core import limits
from xaytune.core.canonical import canonical_bytes
from xaytune.harness.toolbox import Toolbox, ToolResult
from xaytune.models import Message, ModelError, ModelReply, ModelRequest, OpenAICompatibleModel

pytestmark = FUZZ_TIMEOUT

REQUEST = ModelRequest(messages=(Message("user", "What is 2 + 2?"),), sampling_key="fuzz")
DEEP = "[" * 100_000 + "]" * 100_000
USAGE = '"usage": {"prompt_tokens": 3, "completion_tokens": 2}'
TOOL_CALL = '{"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": {}}}'


def _arguments_as_object(value: object) -> str:
    """A tool call whose ``arguments`` is a JSON value, not a string (some servers)."""
    call = {"function": {"name": "calculator", "arguments": value}}
    usage = {"prompt_tokens": 1, "completion_tokens": 1}
    return json.dumps({"choices": [{"message": {"tool_calls": [call]}}], "usage": usage})


BODIES = st.one_of(
    # A completion with one field fuzzed (as JSON text: deep, huge, NaN, surrogates, ...).
    embedded('{"choices": [{"message": {"role": "assistant", "content": {}}}], ' + USAGE + "}"),
    embedded('{"choices": [{"message": {"content": "x", "tool_calls": {}}}], ' + USAGE + "}"),
    embedded('{"choices": [{"message": {"tool_calls": [' + TOOL_CALL + "]}}], " + USAGE + "}"),
    embedded('{"choices": [{"message": {}}], ' + USAGE + "}"),
    embedded('{"choices": [{"message": {"content": "x"}, "finish_reason": {}}], ' + USAGE + "}"),
    embedded('{"choices": {}, ' + USAGE + "}"),
    embedded('{"choices": [{"message": {"content": "x"}}], "usage": {}}'),
    embedded('{"choices": [{"message": {"content": "x"}}], "model": {}, ' + USAGE + "}"),
    embedded('{"error": {"message": {}}}'),
    # The same fields as fuzzed Python values, serialised.
    JSON_VALUES.map(
        lambda value: json.dumps(
            {"choices": [{"message": {"content": "x", "tool_calls": value}}], "usage": value}
        )
    ),
    JSON_VALUES.map(_arguments_as_object),
    JSON_TEXT,
).map(to_bytes)
STATUSES = st.sampled_from([200, 200, 200, 200, 400, 401, 404, 413, 422, 500, 503])


def _complete(server, status: int, body: bytes, chunked: bool) -> ModelReply | ModelError:
    server.respond(status, body, chunked=chunked)
    model = OpenAICompatibleModel(server.base_url, "fuzz", max_retries=0, backoff_s=0.0)

    async def once() -> ModelReply:
        try:
            return await model.complete(REQUEST)
        finally:
            await model.aclose()

    try:
        return asyncio.run(once())
    except ModelError as error:  # TransientModelError and ContextOverflowError are ModelErrors
        return error


def _check(outcome: ModelReply | ModelError) -> None:
    if isinstance(outcome, ModelError):
        assert one_line(str(outcome)) and len(str(outcome)) < 1_000, str(outcome)[:3_000]
        return
    # What the runner writes of a reply: it must be canonical UTF-8 JSON.
    canonical_bytes(
        {
            "text": outcome.text,
            "calls": [[call.id, call.name, call.arguments] for call in outcome.tool_calls],
            "usage": [outcome.usage.input_tokens, outcome.usage.output_tokens],
            "finish": outcome.finish_reason,
            "extra": outcome.extra,
        }
    )
    toolbox = Toolbox.default()
    for call in outcome.tool_calls:
        result = toolbox.call(call, authorized=frozenset({"calculator"}))
        assert isinstance(result, ToolResult) and one_line(result.content)


@FUZZ
@given(status=STATUSES, body=BODIES, chunked=st.booleans())
@example(status=200, body=to_bytes('{"choices": [{"message": {"content": ' + DEEP + "}}]}"),
         chunked=False)  # fmt: skip
@example(status=200, body=b'{"choices": [{"message": "hi"}], ' + USAGE.encode() + b"}",
         chunked=False)  # fmt: skip
@example(status=200, body=b'{"choices": [{"message": {"content": "x"}, "finish_reason": []}], '
         + USAGE.encode() + b"}", chunked=True)  # fmt: skip
@example(status=200, body=b'{"choices": [{"message": {"content": "\\ud800"}}], '
         + USAGE.encode() + b"}", chunked=False)  # fmt: skip
@example(status=200, body=b'{"choices": [{"message": {"content": "x"}}], "usage": '
         b'{"prompt_tokens": 1e999, "completion_tokens": ' + b"9" * 5_000 + b"}}",
         chunked=False)  # fmt: skip
@example(status=500, body=b"\xff\xfe not text", chunked=True)
def test_any_reply_body_is_a_reply_or_a_one_line_model_error(raw_server, status, body, chunked):
    with bounded_memory():
        outcome = _complete(raw_server, status, body, chunked)
    event(outcome.reason if isinstance(outcome, ModelError) else "reply")
    _check(outcome)


def test_a_streamed_reply_over_the_size_limit_is_refused_while_read(raw_server, monkeypatch):
    # Chunked: no Content-Length to refuse by, so the count while reading decides.
    monkeypatch.setattr(limits, "MAX_MODEL_REPLY_BYTES", 100_000)
    body = b'{"choices": [{"message": {"content": "' + b"x" * 1_000_000 + b'"}}]}'
    outcome = _complete(raw_server, 200, body, chunked=True)
    assert isinstance(outcome, ModelError) and outcome.reason == "model-malformed"
    assert "too-large" in str(outcome)
