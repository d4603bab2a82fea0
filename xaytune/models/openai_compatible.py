"""A client for OpenAI-compatible chat-completions endpoints.

OpenAI, vLLM, Ollama, the llama.cpp server and LM Studio all speak this protocol.
Transport failures (429, 500, 502, 503, 504, timeouts, dropped connections) are
retried here with capped exponential backoff, honouring ``Retry-After``; every retry
is counted, and exhaustion raises :class:`TransientModelError` so the harness's own
retry policy decides what happens next. Everything else is a terminal
:class:`ModelError` with a stable reason. Spend is never silently zero: a reply
without token usage is refused (``usage-missing``); cached and reasoning tokens are
read when the reply gives them and None otherwise (:mod:`xaytune.models._usage`).

The HTTP client is aiohttp's, one session per event loop, with no connection cap of
its own: the caller bounds the requests in flight (``HarnessRunner.run_many``'s
``concurrency``, a judge's), and every connection is kept alive for the next request.
httpx was measured slower at the concurrency a run asks for (``benchmarks/server.py``):
its default pool caps requests in flight at 100 and keeps 20 connections alive, and
its pool's bookkeeping costs CPU per request that grows with the connections held
(with 200 held, more than the request itself).

A reply is read within :mod:`xaytune.core.limits` before it is parsed: a body over
``MAX_MODEL_REPLY_BYTES`` (read in chunks, never whole), nested deeper than
``MAX_JSON_DEPTH``, with an integer over ``MAX_INT_DIGITS`` digits, a number beyond a
double's range, a lone surrogate in any string, or a shape other than the protocol's
(a ``message`` that is not an object, a token count beyond 2^53) is a malformed reply:
``model-error``, definitive, with the limit's word in its message. Tool-call argument
strings are passed on as they are: the toolbox holds them to its own limits, and the
model sees ``bad-arguments``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import ssl
import time
import urllib.parse
import urllib.request
import weakref
from collections.abc import AsyncGenerator
from typing import Any

import aiohttp
import certifi

from xaytune.core import limits
from xaytune.core.canonical import MAX_SAFE_INTEGER
from xaytune.core.errors import ConfigError
from xaytune.models._protocol import (
    ContextOverflowError,
    FinishReason,
    Message,
    ModelError,
    ModelIdentity,
    ModelReply,
    ModelRequest,
    ToolCall,
    TransientModelError,
    Usage,
)
from xaytune.models._usage import MalformedUsage, usage_details

__all__ = ["OpenAICompatibleModel"]

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_BACKOFF_CAP_S = 30.0
_RETRY_AFTER_CAP_S = 60.0
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
_JSON_HEADERS = {"Content-Type": "application/json"}
# A connection that failed or broke mid-reply (or answered with something that is not
# HTTP): worth another try. Other client errors are definitive.
_CONNECTION_ERRORS = (
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    aiohttp.ClientResponseError,
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


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(_RETRY_AFTER_CAP_S, max(0.0, seconds))


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_token_count(value: Any) -> bool:
    return _is_count(value) and value <= MAX_SAFE_INTEGER


def _encode(body: dict[str, Any]) -> bytes:
    """The request body: compact UTF-8 JSON; NaN and infinities are refused (ValueError)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


async def _read_body(response: aiohttp.ClientResponse) -> bytes:
    """The body of ``response`` as it arrives, refused past ``MAX_MODEL_REPLY_BYTES``."""
    limit = limits.MAX_MODEL_REPLY_BYTES
    declared = response.content_length
    if declared is not None and declared > limit:
        raise _TooLarge(declared)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise _TooLarge(size)
        chunks.append(chunk)
    return b"".join(chunks)


def _environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``, ...),
    as httpx honoured them: read once per session, not per request (aiohttp's
    ``trust_env`` reads it, and ``~/.netrc``, in a worker thread for every request)."""
    host = urllib.parse.urlsplit(url).hostname
    if host is None or urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies().get(url.split("://", 1)[0])


def _tls_context() -> ssl.SSLContext:
    """certifi's CA bundle, as httpx used, unless ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``
    name others (OpenSSL's default paths read both)."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


async def _closed_at_loop_shutdown(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Parked at its ``yield`` for the life of the session; closing it closes the session.

    Its event loop closes every parked async generator when it shuts down
    (``asyncio.run`` does, as does every ``asyncio.Runner``), so a session whose
    owner never awaited :meth:`OpenAICompatibleModel.aclose` (``HarnessRunner.run``
    runs one task in a loop of its own) still closes its connections in its own loop,
    instead of leaking them and being reported unclosed at garbage collection.
    """
    try:
        yield
    finally:
        await session.close()


class _TooLarge(Exception):
    """A reply body passed ``MAX_MODEL_REPLY_BYTES`` (after ``size`` bytes)."""

    def __init__(self, size: int) -> None:
        self.size = size


class OpenAICompatibleModel:
    """A model served behind ``POST {base_url}/chat/completions``.

    ``parameters`` (temperature, top_p, max_tokens, seed, response_format, ...) are
    passed through in the request body and pinned in the identity; ``base_url`` is
    where the model is served, not what it is, so it is an attribute and not part of
    the identity. The API key is read from ``api_key_env`` once, at construction,
    and never appears in the identity, in messages or in a repr. One HTTP session is
    kept for the running event loop, created lazily; await :meth:`aclose` before that
    loop ends (a later loop gets a new session, so sequential loops work). The session
    opens as many connections as there are requests in flight and keeps them alive.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        revision: str = "unpinned",
        parameters: dict[str, Any] | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        where = f"model {model!r} at {base_url}"
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError("model-config", f"{where}: base_url must start with http(s)://")
        if not model:
            raise ConfigError("model-config", f"model at {base_url}: the model name is empty")
        if not (timeout_s > 0 and math.isfinite(timeout_s)):
            raise ConfigError("model-config", f"{where}: timeout_s {timeout_s!r} is not positive")
        if not _is_count(max_retries):
            raise ConfigError("model-config", f"{where}: max_retries {max_retries!r} is not >= 0")
        if not (backoff_s >= 0 and math.isfinite(backoff_s)):
            raise ConfigError("model-config", f"{where}: backoff_s {backoff_s!r} is negative")
        parameters = dict(parameters or {})
        clash = sorted(_RESERVED & parameters.keys())
        if clash:
            raise ConfigError("model-config", f"{where}: parameters may not set {clash}")
        api_key: str | None = None
        if api_key_env is not None:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise ModelError(
                    "model-auth", f"{where}: environment variable {api_key_env} is not set"
                )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._where = f"model {model!r} at {self.base_url}"
        self._url = f"{self.base_url}/chat/completions"
        self._api_key = api_key
        self._api_key_env = api_key_env
        self._parameters = parameters
        self._timeout_s = float(timeout_s)
        self._max_retries = max_retries
        self._backoff_s = float(backoff_s)
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._proxy: str | None = None
        self._identity = ModelIdentity(
            provider="openai-compatible", model=model, revision=revision, parameters=parameters
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def identity(self) -> ModelIdentity:
        """``openai-compatible / <model> / <revision>`` with the pinned parameters."""
        return self._identity

    async def aclose(self) -> None:
        """Close this event loop's HTTP session (a session of another loop is dropped)."""
        closer, self._closer = self._closer, None
        owner = self._session_loop() if self._session_loop is not None else None
        self._session = self._session_loop = None
        if closer is not None and owner is asyncio.get_running_loop():
            await closer.aclose()  # its ``finally`` closes the session

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One chat completion, with transport retries counted in ``reply.retries``."""
        body = _encode(self._body(request))
        session = await self._session_for_this_loop()
        retries = 0
        while True:
            delay: float | None = None
            try:
                async with session.post(
                    self._url,
                    data=body,
                    headers=_JSON_HEADERS,
                    proxy=self._proxy,
                    allow_redirects=False,  # a redirect is the endpoint's error, as before
                ) as response:
                    raw = await _read_body(response)
            except _TooLarge as error:
                raise ModelError(
                    "model-error",
                    f"{self._where}: too-large: the reply passes {error.size:,} bytes; the limit "
                    f"is {limits.MAX_MODEL_REPLY_BYTES:,} (MAX_MODEL_REPLY_BYTES)",
                    retries=retries,
                ) from None
            except TimeoutError as error:  # aiohttp's timeouts are TimeoutErrors too
                failure = f"no reply within {self._timeout_s:g}s ({type(error).__name__})"
            except _CONNECTION_ERRORS as error:
                failure = f"connection failed ({type(error).__name__})"
            except aiohttp.ClientError as error:
                raise ModelError(
                    "model-error",
                    f"{self._where}: request failed ({type(error).__name__})",
                    retries=retries,
                ) from None
            else:
                if response.status not in _RETRY_STATUSES:
                    return self._reply(response.status, raw, retries)
                failure = f"HTTP {response.status}"
                delay = _retry_after(response.headers.get("retry-after"))
            if retries >= self._max_retries:
                raise TransientModelError(
                    f"{self._where}: {failure}; gave up after {retries} retries", retries=retries
                )
            if delay is None:
                delay = min(_BACKOFF_CAP_S, self._backoff_s * 2**retries)
            await asyncio.sleep(delay)
            retries += 1

    # ------------------------------------------------------------ internals
    async def _session_for_this_loop(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        owner = self._session_loop() if self._session_loop is not None else None
        if self._session is None or owner is not loop:
            # A session is bound to the loop it was first used on; a new loop gets its own.
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            tls = _tls_context() if self._url.startswith("https://") else True
            self._proxy = _environment_proxy(self._url)
            self._session = aiohttp.ClientSession(
                # No cap of its own (aiohttp's default is 100): the caller bounds the
                # requests in flight, and a cap below that would queue them here.
                connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                # Each phase of a request (connecting, every read) within timeout_s.
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=self._timeout_s, sock_read=self._timeout_s
                ),
                headers=headers,
            )
            self._session_loop = weakref.ref(loop)
            self._closer = _closed_at_loop_shutdown(self._session)
            await anext(self._closer)  # parked until aclose() or the loop's shutdown
        return self._session

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
            body["max_tokens"] = min(limit, pinned) if _is_count(pinned) else limit
        return body

    def _error_text(self, raw: bytes) -> str:
        """A short, one-line, key-free excerpt of an error body."""
        try:
            data = self._parse(raw)
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
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return " ".join(text.split())[:200]

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

    def _parse(self, raw: bytes) -> Any:
        """The reply body as JSON within the limits (``LimitError``, ``ValueError``)."""
        return limits.loads(
            raw,
            what="the reply",
            max_size=limits.MAX_MODEL_REPLY_BYTES,
            size_name="MAX_MODEL_REPLY_BYTES",
        )

    def _malformed(self, problem: str, retries: int) -> ModelError:
        return ModelError("model-error", f"{self._where}: {problem}", retries=retries)

    def _reply(self, status: int, raw: bytes, retries: int) -> ModelReply:
        if not 200 <= status < 300:
            raise self._refusal(status, raw, retries)
        try:
            data = self._parse(raw)
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
            and _is_count(usage.get("prompt_tokens"))
            and _is_count(usage.get("completion_tokens"))
        ):
            raise ModelError(
                "usage-missing",
                f"{self._where}: the reply reports no prompt/completion token usage",
                retries=retries,
            )
        if not (
            _is_token_count(usage["prompt_tokens"]) and _is_token_count(usage["completion_tokens"])
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
        return ModelReply(
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
