"""A client for OpenAI-compatible chat-completions endpoints.

OpenAI, vLLM, Ollama, the llama.cpp server and LM Studio all speak this protocol.
Transport failures (429, 500, 502, 503, 504, timeouts, dropped connections) are
retried by :mod:`xaytune.models._http` with capped exponential backoff and
deterministic jitter, honouring ``Retry-After``; every retry is counted, and
exhaustion raises :class:`TransientModelError` so the harness's own retry policy
decides what happens next. Everything else is a terminal :class:`ModelError` with a
stable reason (``model-auth``, ``model-unknown``, ``model-malformed``,
``usage-missing``, ``context-overflow``, ``model-error``);
:meth:`OpenAICompatibleModel.preflight` checks an endpoint before a run. Spend is
never silently zero: a reply without token usage is refused (``usage-missing``);
cached and reasoning tokens are read when the reply gives them and None otherwise
(:mod:`xaytune.models._usage`).

The HTTP client is aiohttp's (:mod:`xaytune.models._http`), one session per event
loop, with no connection cap of its own. httpx was measured slower at the concurrency
a run asks for (``benchmarks/server.py``): its default pool caps requests in flight at
100 and keeps 20 connections alive, and its pool's bookkeeping costs CPU per request
that grows with the connections held (with 200 held, more than the request itself).

A reply is read within :mod:`xaytune.core.limits` before it is parsed: a body over
``MAX_MODEL_REPLY_BYTES`` (read in chunks, never whole), nested deeper than
``MAX_JSON_DEPTH``, with an integer over ``MAX_INT_DIGITS`` digits, a number beyond a
double's range, a lone surrogate in any string, or a shape other than the protocol's
(a ``message`` that is not an object, a token count beyond 2^53) is a malformed reply:
``model-malformed``, definitive, with the limit's word in its message. Tool-call
argument strings are passed on as they are: the toolbox holds them to its own limits,
and the model sees ``bad-arguments``.
"""

from __future__ import annotations

import json
from typing import Any

from xaytune.core import limits
from xaytune.models._http import (
    HttpModel,
    encode_json,
    entry_identity,
    is_count,
    is_token_count,
    parse_json,
    scrub,
    unreachable,
)
from xaytune.models._usage import MalformedUsage, usage_details
from xaytune.models.protocol import (
    ContextOverflowError,
    EndpointIdentity,
    FinishReason,
    Message,
    ModelError,
    ModelReply,
    ModelRequest,
    ToolCall,
    TransientModelError,
    Usage,
)

__all__ = ["OpenAICompatibleModel"]

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "exceeds the context",
    "context size",
    "context_size",
    "context overflow",
)
_UNKNOWN_MODEL_WORDS = ("does not exist", "not found", "model_not_found", "unknown model")
# Body fields the client owns; a parameter may not override them.
_RESERVED = frozenset({"model", "messages", "tools", "stream"})
# The one-token request a preflight sends (the pinned parameters go with it).
_PREFLIGHT = ModelRequest(
    messages=(Message("user", "Reply with OK."),), max_output_tokens=1, sampling_key="preflight"
)


def _message_payload(message: Message) -> dict[str, Any]:
    payload: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        payload["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        payload["tool_call_id"] = message.tool_call_id
    return payload


class OpenAICompatibleModel(HttpModel):
    """A model served behind ``POST {base_url}/chat/completions``.

    ``parameters`` (temperature, top_p, max_tokens, seed, response_format, ...) are
    passed through in the request body and pinned in the identity; ``base_url`` is
    where the model is served, not what it is, so it is an attribute and not part of
    the identity (:meth:`preflight` reports both). The API key is read from
    ``api_key_env`` once, at construction, and never appears in the identity, in
    messages or in a repr. One HTTP session is kept for the running event loop,
    created lazily; await :meth:`aclose` before that loop ends (a later loop gets a new
    session, so sequential loops work).

    Each request is bounded by ``timeout_s`` per connect / read and ``total_timeout_s``
    in all; a failed one is retried at most ``max_retries`` times, waiting the server's
    ``Retry-After`` (at most ``retry_after_cap_s``) or ``backoff_s * 2**n`` (at most
    ``backoff_cap_s``) with deterministic jitter.
    """

    provider = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        revision: str = "unpinned",
        parameters: dict[str, Any] | None = None,
        timeout_s: float = 60.0,
        total_timeout_s: float = 600.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        backoff_cap_s: float = 30.0,
        retry_after_cap_s: float = 60.0,
    ) -> None:
        self._open(
            base_url,
            model,
            route="/chat/completions",
            reserved=_RESERVED,
            api_key_env=api_key_env,
            headers={},
            auth=lambda key: {"Authorization": f"Bearer {key}"},
            revision=revision,
            parameters=parameters,
            timeout_s=timeout_s,
            total_timeout_s=total_timeout_s,
            retry={
                "max_retries": max_retries,
                "backoff_s": backoff_s,
                "backoff_cap_s": backoff_cap_s,
                "retry_after_cap_s": retry_after_cap_s,
            },
        )

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One chat completion, with transport retries counted in ``reply.retries``."""
        body = encode_json(self._body(request))
        answer = await self._http.send("POST", self._url, body=body, key=request.sampling_key)
        return self._reply(answer.status, answer.body, answer.retries)[0]

    async def preflight(self) -> EndpointIdentity:
        """Check the endpoint serves this model; what it says it serves.

        ``GET {base_url}/models`` first (401/403 is ``model-auth``; a 404 or 405, or a
        body that is not a models list, is tolerated: llama.cpp, vLLM and Ollama differ),
        then one completion of one token with the pinned parameters, parsed as a real
        reply. Raises ``model-unreachable`` when the endpoint does not answer within the
        retries, and otherwise what that reply would raise in a run (``model-auth``,
        ``model-unknown``, ``model-malformed``, ``usage-missing``, ``model-error``).
        """
        try:
            entry = await self._models_entry()
            body = encode_json(self._body(_PREFLIGHT))
            answer = await self._http.send("POST", self._url, body=body, key="preflight")
        except TransientModelError as error:
            raise unreachable(self._where, error) from None
        reply, data = self._reply(answer.status, answer.body, answer.retries)
        fingerprint = data.get("system_fingerprint")
        return EndpointIdentity(
            provider=self.provider,
            base_url=self.base_url,
            model=self.model,
            served_model=reply.extra.get("served_model"),
            system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
            model_entry=entry,
        )

    # ------------------------------------------------------------ internals
    async def _models_entry(self) -> dict[str, str | int | bool] | None:
        answer = await self._http.send("GET", f"{self.base_url}/models", body=None, key="models")
        if answer.status in (401, 403):
            raise self._refusal(answer.status, answer.body, answer.retries)
        if answer.status != 200:
            return None  # no models list here (404/405): the completion decides
        try:
            listing = parse_json(answer.body)
        except (ValueError, limits.LimitError):
            return None
        entries = listing.get("data") if isinstance(listing, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict) and entry.get("id") == self.model:
                return entry_identity(entry)
        return None

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            **self._parameters,
            "messages": [_message_payload(message) for message in request.messages],
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
        if request.max_output_tokens is not None:
            # The harness's limit and a pinned max_tokens both hold: send the smaller.
            pinned = self._parameters.get("max_tokens")
            limit = request.max_output_tokens
            body["max_tokens"] = min(limit, pinned) if is_count(pinned) else limit
        return body

    def _error_text(self, raw: bytes) -> str:
        """A short, one-line, key-free excerpt of an error body."""
        try:
            data = parse_json(raw)
        except (ValueError, limits.LimitError):
            text = raw[:1000].decode("utf-8", "replace")
        else:
            error = data.get("error") if isinstance(data, dict) else None
            if isinstance(error, dict):
                text = str(error.get("message") or error.get("code") or error)
            elif error is not None:
                text = str(error)
            elif isinstance(data, dict) and isinstance(data.get("message"), str):
                text = data["message"]  # vLLM's {"object": "error", "message": ...}
            else:
                text = json.dumps(data)[:300]
        return scrub(text, self._api_key)

    def _refusal(self, status: int, raw: bytes, retries: int) -> ModelError:
        if status in (401, 403):
            hint = f" (key from {self._api_key_env})" if self._api_key_env else " (no API key)"
            return ModelError(
                "model-auth",
                f"{self._where}: HTTP {status}, credentials refused{hint}",
                retries=retries,
            )
        text = self._error_text(raw)
        lowered = text.lower()
        if status == 404 or (
            "model" in lowered and any(word in lowered for word in _UNKNOWN_MODEL_WORDS)
        ):
            return ModelError(
                "model-unknown",
                f"{self._where}: HTTP {status}, unknown model: {text}",
                retries=retries,
            )
        if status in (400, 413, 422) and any(word in lowered for word in _CONTEXT_WORDS):
            return ContextOverflowError(f"{self._where}: HTTP {status}: {text}", retries=retries)
        return ModelError("model-error", f"{self._where}: HTTP {status}: {text}", retries=retries)

    def _malformed(self, problem: str, retries: int) -> ModelError:
        return ModelError("model-malformed", f"{self._where}: {problem}", retries=retries)

    def _reply(self, status: int, raw: bytes, retries: int) -> tuple[ModelReply, dict[str, Any]]:
        """The reply of a ``status`` answer with body ``raw``, and the body's JSON."""
        if not 200 <= status < 300:
            raise self._refusal(status, raw, retries)
        try:
            data = parse_json(raw)
        except limits.LimitError as breach:
            raise self._malformed(str(breach), retries) from None
        except ValueError:
            raise self._malformed("the reply is not JSON", retries) from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            if isinstance(data, dict) and "error" in data:
                raise self._refusal(status, raw, retries)
            raise self._malformed("the reply has no choices", retries)
        usage = data.get("usage")
        if not (
            isinstance(usage, dict)
            and is_count(usage.get("prompt_tokens"))
            and is_count(usage.get("completion_tokens"))
        ):
            raise ModelError(
                "usage-missing",
                f"{self._where}: the reply reports no prompt/completion token usage",
                retries=retries,
            )
        if not (
            is_token_count(usage["prompt_tokens"]) and is_token_count(usage["completion_tokens"])
        ):
            raise self._malformed("out-of-range: the reply's token usage is beyond 2^53", retries)
        try:
            cached, reasoning = usage_details(data)
        except MalformedUsage as problem:
            raise self._malformed(str(problem), retries) from None
        message = choices[0].get("message") or {}
        if not isinstance(message, dict):
            raise self._malformed("the reply's message is not an object", retries)
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise self._malformed("message content is not text", retries)
        calls = self._tool_calls(message.get("tool_calls") or [], retries)
        raw_finish = choices[0].get("finish_reason")
        if raw_finish is not None and not isinstance(raw_finish, str):
            raise self._malformed("the reply's finish_reason is not text", retries)
        finish = _FINISH_REASONS.get(raw_finish or "", "stop")
        if calls and finish == "stop":  # some servers (e.g. Ollama) say "stop" with calls
            finish = "tool_calls"
        extra: dict[str, Any] = {}
        if isinstance(data.get("model"), str):
            extra["served_model"] = data["model"]
        if raw_finish != finish:
            extra["finish_reason_raw"] = raw_finish
        reply = ModelReply(
            text=content,
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage["prompt_tokens"],
                output_tokens=usage["completion_tokens"],
                cached_tokens=cached,
                reasoning_tokens=reasoning,
            ),
            finish_reason=finish,
            retries=retries,
            extra=extra,
        )
        return reply, data

    def _tool_calls(self, raw: Any, retries: int) -> tuple[ToolCall, ...]:
        calls: list[ToolCall] = []
        for number, item in enumerate(raw if isinstance(raw, list) else [None], start=1):
            function = item.get("function") if isinstance(item, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or not name:
                raise self._malformed(f"tool call {number} has no function name", retries)
            arguments = function.get("arguments", "")
            if not isinstance(arguments, str):  # some servers send the object itself
                arguments = json.dumps(arguments)
            call_id = item.get("id") if isinstance(item.get("id"), str) else f"call_{number}"
            calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
        return tuple(calls)
