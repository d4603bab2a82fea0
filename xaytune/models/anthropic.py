"""A client for Anthropic's Messages API (``POST {base_url}/v1/messages``).

It is written on aiohttp (:mod:`xaytune.models._http`) rather than on the official
``anthropic`` SDK: the SDK is built on httpx and retries 429, 5xx, 529 and connection
errors itself (twice by default, with its own 10-minute timeout), so its retries would
be hidden from the attempt's spend unless disabled, and its limits and errors would
duplicate, differently, the bounded body reads, retry loop and preflight every adapter
here shares. The wire format is small and documented; owning it keeps one retry
policy, one set of limits and one set of reason words for every endpoint.

Conversion: ``system`` messages become the top-level ``system`` text (joined by a
blank line, in order); tools are sent with ``input_schema``; an assistant's tool calls
become ``tool_use`` blocks (``input`` is the call's JSON arguments, which must be an
object); ``tool`` messages become ``tool_result`` blocks, and consecutive messages of
one role are merged into one message, so the results of one turn travel in one user
message, as the API requires. ``max_tokens`` is required by the API: the harness's
``max_output_tokens``, a pinned ``max_tokens`` parameter (the smaller of the two), or
the adapter's ``max_tokens`` default.

Reply: ``text`` blocks are joined into the text, ``tool_use`` blocks become tool calls
(arguments = the JSON text of ``input``); stop reasons map end_turn / stop_sequence
-> stop, tool_use -> tool_calls, max_tokens / model_context_window_exceeded ->
length, refusal -> content_filter, and anything else is ``stop`` (``tool_calls`` when
the reply holds calls) with the raw reason in ``extra["finish_reason_raw"]``. Usage:
Anthropic's ``input_tokens`` excludes the prompt tokens read from and written to its
cache, so ``Usage.input_tokens`` is input + cache_creation_input_tokens +
cache_read_input_tokens, ``cached_tokens`` is cache_read_input_tokens and
``cache_write_tokens`` is cache_creation_input_tokens (None when not reported).

Errors (``{"type": "error", "error": {"type": ..., "message": ...}}``): 401/403 ->
``model-auth``; 404 / ``not_found_error`` -> ``model-unknown``; "prompt is too long"
-> ``context-overflow``; a reply that is not the protocol's -> ``model-malformed``;
no usage -> ``usage-missing``; 429, 5xx and 529 ``overloaded_error`` are retried, then
``model-transient``; any other refusal is ``model-error``.
"""

from __future__ import annotations

import json
from typing import Any

from xaytune.core import limits
from xaytune.core.errors import ConfigError
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

__all__ = ["ANTHROPIC_VERSION", "AnthropicModel"]

ANTHROPIC_VERSION = "2023-06-01"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
_CONTEXT_WORDS = ("prompt is too long", "context window", "context length", "too many tokens")
# Body fields the client owns; a parameter may not override them.
_RESERVED = frozenset({"model", "messages", "tools", "system", "stream"})
_PREFLIGHT = ModelRequest(
    messages=(Message("user", "Reply with OK."),), max_output_tokens=1, sampling_key="preflight"
)


class AnthropicModel(HttpModel):
    """A Claude model behind ``POST {base_url}/v1/messages``.

    ``parameters`` (temperature, top_p, top_k, stop_sequences, max_tokens, ...) are
    passed through in the request body and pinned in the identity (``anthropic /
    <model> / <revision>``); ``base_url`` is where the model is served, not what it is.
    The key is read from ``api_key_env`` once, at construction (``None``: no key is
    sent, e.g. a local gateway), and sent as ``x-api-key``; it never appears in the
    identity, in messages or in a repr. ``max_tokens`` is sent when neither the harness
    nor the parameters give one. Timeouts and retries are as for
    :class:`~xaytune.models.openai_compatible.OpenAICompatibleModel`, plus 529.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.anthropic.com",
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        anthropic_version: str = ANTHROPIC_VERSION,
        revision: str = "unpinned",
        parameters: dict[str, Any] | None = None,
        max_tokens: int = 4096,
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
            route="/v1/messages",
            reserved=_RESERVED,
            api_key_env=api_key_env,
            headers={"anthropic-version": anthropic_version},
            auth=lambda key: {"x-api-key": key},
            revision=revision,
            parameters=parameters,
            timeout_s=timeout_s,
            total_timeout_s=total_timeout_s,
            retry={
                "max_retries": max_retries,
                "backoff_s": backoff_s,
                "backoff_cap_s": backoff_cap_s,
                "retry_after_cap_s": retry_after_cap_s,
                "statuses": _RETRY_STATUSES,
            },
        )
        if not (is_count(max_tokens) and 0 < max_tokens <= limits.MAX_CONTEXT_WINDOW):
            raise ConfigError(
                "model-config", f"{self._where}: max_tokens {max_tokens!r} is not >= 1"
            )
        self._max_tokens = max_tokens

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One message, with transport retries counted in ``reply.retries``."""
        body = encode_json(self.request_body(request))
        answer = await self._http.send("POST", self._url, body=body, key=request.sampling_key)
        return self._reply(answer.status, answer.body, answer.retries)

    async def preflight(self) -> EndpointIdentity:
        """Check the endpoint serves this model; what it says it serves.

        ``GET {base_url}/v1/models/{model}`` first (401/403 is ``model-auth``, an
        Anthropic ``not_found_error`` is ``model-unknown``; a gateway without the route
        is tolerated), then one message of one token parsed as a real reply. Raises
        ``model-unreachable`` when the endpoint does not answer within the retries.
        """
        try:
            entry = await self._models_entry()
            body = encode_json(self.request_body(_PREFLIGHT))
            answer = await self._http.send("POST", self._url, body=body, key="preflight")
        except TransientModelError as error:
            raise unreachable(self._where, error) from None
        reply = self._reply(answer.status, answer.body, answer.retries)
        return EndpointIdentity(
            provider=self.provider,
            base_url=self.base_url,
            model=self.model,
            served_model=reply.extra.get("served_model"),
            model_entry=entry,
        )

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API body for ``request`` (see the module docstring)."""
        system = [m.content for m in request.messages if m.role == "system" and m.content]
        turns: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                continue
            role = "assistant" if message.role == "assistant" else "user"
            blocks = self._blocks(message)
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].extend(blocks)  # one turn per role, as the API requires
            else:
                turns.append({"role": role, "content": blocks})
        pinned = self._parameters.get("max_tokens")
        limit = request.max_output_tokens
        if limit is None:
            max_tokens = pinned if is_count(pinned) else self._max_tokens
        else:
            max_tokens = min(limit, pinned) if is_count(pinned) else limit
        body: dict[str, Any] = {"model": self.model, **self._parameters, "max_tokens": max_tokens}
        if system:
            body["system"] = "\n\n".join(system)
        body["messages"] = turns
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        return body

    # ------------------------------------------------------------ internals
    def _blocks(self, message: Message) -> list[dict[str, Any]]:
        if message.role == "tool":
            return [
                {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": message.content or "",
                }
            ]
        blocks: list[dict[str, Any]] = []
        if message.content or not message.tool_calls:
            blocks.append({"type": "text", "text": message.content or ""})
        for call in message.tool_calls:
            try:
                arguments = json.loads(call.arguments or "{}")
            except ValueError:
                arguments = None
            if not isinstance(arguments, dict):
                raise ModelError(
                    "model-error",
                    f"{self._where}: tool call {call.id!r} ({call.name}) has arguments that "
                    "are not a JSON object; the Messages API takes only an object as input",
                )
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}
            )
        return blocks

    async def _models_entry(self) -> dict[str, str | int | bool] | None:
        url = f"{self.base_url}/v1/models/{self.model}"
        answer = await self._http.send("GET", url, body=None, key="models")
        if answer.status in (401, 403):
            raise self._refusal(answer.status, answer.body, answer.retries)
        if answer.status == 404 and self._error_type(answer.body) == "not_found_error":
            raise self._refusal(answer.status, answer.body, answer.retries)
        if answer.status != 200:
            return None  # a gateway without the models route: the message decides
        try:
            return entry_identity(parse_json(answer.body))
        except (ValueError, limits.LimitError):
            return None

    def _error(self, raw: bytes) -> tuple[str | None, str]:
        """(the Anthropic error type, a short key-free excerpt) of an error body."""
        try:
            data = parse_json(raw)
        except (ValueError, limits.LimitError):
            return None, scrub(raw[:1000].decode("utf-8", "replace"), self._api_key)
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            kind = error.get("type") if isinstance(error.get("type"), str) else None
            text = str(error.get("message") or kind or error)
            return kind, scrub(text, self._api_key)
        return None, scrub(json.dumps(data)[:300], self._api_key)

    def _error_type(self, raw: bytes) -> str | None:
        return self._error(raw)[0]

    def _refusal(self, status: int, raw: bytes, retries: int) -> ModelError:
        kind, text = self._error(raw)
        if status in (401, 403) or kind in ("authentication_error", "permission_error"):
            hint = f" (key from {self._api_key_env})" if self._api_key_env else " (no API key)"
            return ModelError(
                "model-auth",
                f"{self._where}: HTTP {status}, credentials refused{hint}: {text}",
                retries=retries,
            )
        if status == 404 or kind == "not_found_error":
            return ModelError(
                "model-unknown",
                f"{self._where}: HTTP {status}, unknown model: {text}",
                retries=retries,
            )
        if status in (400, 413) and any(word in text.lower() for word in _CONTEXT_WORDS):
            return ContextOverflowError(f"{self._where}: HTTP {status}: {text}", retries=retries)
        return ModelError("model-error", f"{self._where}: HTTP {status}: {text}", retries=retries)

    def _malformed(self, problem: str, retries: int) -> ModelError:
        return ModelError("model-malformed", f"{self._where}: {problem}", retries=retries)

    def _reply(self, status: int, raw: bytes, retries: int) -> ModelReply:
        if not 200 <= status < 300:
            raise self._refusal(status, raw, retries)
        try:
            data = parse_json(raw)
        except limits.LimitError as breach:
            raise self._malformed(str(breach), retries) from None
        except ValueError:
            raise self._malformed("the reply is not JSON", retries) from None
        if not isinstance(data, dict):
            raise self._malformed("the reply is not an object", retries)
        if data.get("type") == "error":
            raise self._refusal(status, raw, retries)
        content = data.get("content")
        if not isinstance(content, list):
            raise self._malformed("the reply has no content list", retries)
        usage = self._usage(data.get("usage"), retries)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for number, block in enumerate(content, start=1):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                if not isinstance(block.get("text"), str):
                    raise self._malformed(f"content block {number}'s text is not text", retries)
                texts.append(block["text"])
            elif kind == "tool_use":
                calls.append(self._tool_call(block, number, retries))
            elif not isinstance(kind, str):
                raise self._malformed(f"content block {number} has no type", retries)
            # Other blocks (thinking, redacted_thinking, server tools) carry no answer.
        raw_stop = data.get("stop_reason")
        if raw_stop is not None and not isinstance(raw_stop, str):
            raise self._malformed("the reply's stop_reason is not text", retries)
        finish = _STOP_REASONS.get(raw_stop or "", "tool_calls" if calls else "stop")
        extra: dict[str, Any] = {}
        if isinstance(data.get("model"), str):
            extra["served_model"] = data["model"]
        if raw_stop is not None and raw_stop not in _STOP_REASONS:
            extra["finish_reason_raw"] = raw_stop
        return ModelReply(
            text="".join(texts) if texts else None,
            tool_calls=tuple(calls),
            usage=usage,
            finish_reason=finish,
            retries=retries,
            extra=extra,
        )

    def _usage(self, usage: Any, retries: int) -> Usage:
        if not (
            isinstance(usage, dict)
            and is_count(usage.get("input_tokens"))
            and is_count(usage.get("output_tokens"))
        ):
            raise ModelError(
                "usage-missing",
                f"{self._where}: the reply reports no input/output token usage",
                retries=retries,
            )
        counts: dict[str, int | None] = {}
        for name in ("cache_creation_input_tokens", "cache_read_input_tokens"):
            value = usage.get(name)
            if value is not None and not is_token_count(value):
                raise self._malformed(f"the reply's usage.{name} is not a token count", retries)
            counts[name] = value
        writes, reads = counts["cache_creation_input_tokens"], counts["cache_read_input_tokens"]
        total = usage["input_tokens"] + (writes or 0) + (reads or 0)
        if not (is_token_count(total) and is_token_count(usage["output_tokens"])):
            raise self._malformed("out-of-range: the reply's token usage is beyond 2^53", retries)
        return Usage(
            input_tokens=total,
            output_tokens=usage["output_tokens"],
            cached_tokens=reads,
            cache_write_tokens=writes,
        )

    def _tool_call(self, block: dict[str, Any], number: int, retries: int) -> ToolCall:
        name, call_id, arguments = block.get("name"), block.get("id"), block.get("input")
        if not isinstance(name, str) or not name:
            raise self._malformed(f"tool_use block {number} has no name", retries)
        if not isinstance(arguments, dict):
            raise self._malformed(f"tool_use block {number}'s input is not an object", retries)
        return ToolCall(
            id=call_id if isinstance(call_id, str) and call_id else f"toolu_{number}",
            name=name,
            arguments=json.dumps(arguments, ensure_ascii=False),
        )
