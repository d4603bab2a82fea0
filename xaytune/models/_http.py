"""HTTP machinery shared by the model adapters that talk to an endpoint.

One retry loop (:meth:`HttpEndpoint.send`) serves every adapter, so a 429 is handled
the same way whichever protocol asked:

* retried: the statuses an adapter declares transient (429, 500, 502, 503, 504, and
  Anthropic's 529 ``overloaded``), timeouts and dropped connections;
* a ``Retry-After`` (seconds or an HTTP date) is honoured, capped at
  ``retry_after_cap_s``; otherwise the wait is a capped exponential backoff with
  *deterministic* jitter (:func:`backoff_delay`): the fraction comes from sha256 of the
  request's sampling key and the retry number, so a rerun waits the same, and requests
  of different tasks that failed together do not retry together;
* each retry is counted; exhaustion raises :class:`TransientModelError` with the count
  (the runner adds it to the attempt's spend);
* every request is bounded: ``timeout_s`` for connecting and for each read, and
  ``total_timeout_s`` for the whole request, so a server that trickles bytes cannot
  hold a call forever; a body is read in chunks within ``MAX_MODEL_REPLY_BYTES``
  (a larger one is ``model-malformed``), and a redirect is not followed.

The HTTP client is aiohttp's, one session per event loop, with no connection cap of
its own: the caller bounds the requests in flight, and every connection is kept alive.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import math
import os
import ssl
import time
import urllib.parse
import urllib.request
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import certifi

from xaytune.core import limits
from xaytune.core.canonical import MAX_SAFE_INTEGER
from xaytune.core.errors import ConfigError
from xaytune.models.protocol import ModelError, ModelIdentity, TransientModelError

__all__ = [
    "Answer",
    "Exhausted",
    "HttpEndpoint",
    "HttpModel",
    "RetryPolicy",
    "backoff_delay",
    "encode_json",
    "entry_identity",
    "is_count",
    "is_token_count",
    "jitter_fraction",
    "parse_json",
    "retry_after",
    "scrub",
    "unreachable",
]

# A connection that failed or broke mid-reply (or answered with something that is not
# HTTP): worth another try. Other client errors are definitive.
_CONNECTION_ERRORS = (
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    aiohttp.ClientResponseError,
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How an adapter retries: at most ``max_retries`` retries of a request; the n-th
    (from 0) waits ``backoff_delay`` unless the server said how long (``Retry-After``,
    at most ``retry_after_cap_s``)."""

    max_retries: int = 3
    backoff_s: float = 0.5
    backoff_cap_s: float = 30.0
    retry_after_cap_s: float = 60.0
    statuses: frozenset[int] = frozenset({429, 500, 502, 503, 504})

    def check(self, where: str) -> None:
        """Refuse (``model-config``) a policy that is not bounded and non-negative."""
        if not (is_count(self.max_retries) and self.max_retries <= limits.MAX_RETRIES):
            raise ConfigError(
                "model-config",
                f"{where}: max_retries {self.max_retries!r} is not within 0..{limits.MAX_RETRIES}",
            )
        for name in ("backoff_s", "backoff_cap_s", "retry_after_cap_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 <= value <= limits.MAX_TIMEOUT_S):
                raise ConfigError("model-config", f"{where}: {name} {value!r} is not a delay")


@dataclass(frozen=True, slots=True)
class Answer:
    """A response that is not retried: status, headers, body and the retries spent."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    retries: int


class Exhausted(TransientModelError):
    """The retries are spent; ``cause`` is the last failure (``HTTP 503``, a timeout)."""

    def __init__(self, where: str, cause: str, *, retries: int) -> None:
        super().__init__(f"{where}: {cause}; gave up after {retries} retries", retries=retries)
        self.cause = cause


def is_count(value: object) -> bool:
    """A non-negative int (a bool is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_token_count(value: object) -> bool:
    """A count a canonical record can hold (at most 2^53 - 1)."""
    return is_count(value) and value <= MAX_SAFE_INTEGER  # type: ignore[operator]


def encode_json(body: dict[str, Any]) -> bytes:
    """A request body: compact UTF-8 JSON; NaN and infinities are refused (ValueError)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def parse_json(raw: bytes) -> Any:
    """A reply body as JSON within the limits (``LimitError``, ``ValueError``)."""
    return limits.loads(
        raw,
        what="the reply",
        max_size=limits.MAX_MODEL_REPLY_BYTES,
        size_name="MAX_MODEL_REPLY_BYTES",
    )


def scrub(text: str, secret: str | None) -> str:
    """``text`` on one line, at most 200 characters, with ``secret`` masked."""
    if secret:
        text = text.replace(secret, "***")
    return " ".join(text.split())[:200]


def entry_identity(entry: Any) -> dict[str, str | int | bool] | None:
    """The identity-bearing part of a models-list entry: its top-level text, integer and
    boolean fields, without ``created`` (vLLM stamps it with the time of the request, so
    it would change on every call); None when ``entry`` is not an object."""
    if not isinstance(entry, dict):
        return None
    kept: dict[str, str | int | bool] = {}
    for name, value in entry.items():
        if name == "created" or not isinstance(name, str):
            continue
        text = isinstance(value, str) and len(value) <= 1000
        number = isinstance(value, int) and abs(value) <= MAX_SAFE_INTEGER  # bools too
        if text or number:
            kept[name] = value
    return kept


def unreachable(where: str, error: TransientModelError) -> ModelError:
    """A preflight's verdict on an endpoint that did not answer within the retries."""
    cause = error.cause if isinstance(error, Exhausted) else str(error)
    return ModelError(
        "model-unreachable",
        f"{where}: unreachable: {cause} (after {error.retries} retries)",
        retries=error.retries,
    )


def jitter_fraction(key: str, retry: int) -> float:
    """A fraction in [0, 1) derived from sha256 of ``key`` and ``retry``: no randomness."""
    digest = hashlib.sha256(f"xaytune.retry/v1\0{key}\0{retry}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def backoff_delay(key: str, retry: int, *, base_s: float, cap_s: float) -> float:
    """The wait before retry number ``retry`` (0 for the first): the capped exponential
    ``min(cap_s, base_s * 2**retry)`` scaled into its upper half by the jitter fraction,
    so it lies in [half, all] of that value, never above ``cap_s``."""
    ceiling = min(cap_s, base_s * 2.0 ** min(retry, 64))
    return ceiling * (0.5 + 0.5 * jitter_fraction(key, retry))


def retry_after(value: str | None, *, cap_s: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date), at most
    ``cap_s``; None when there is no usable header."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT; a naive one is read as such
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(cap_s, max(0.0, seconds))


class _TooLarge(Exception):
    """A reply body passed ``MAX_MODEL_REPLY_BYTES`` (after ``size`` bytes)."""

    def __init__(self, size: int) -> None:
        self.size = size


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
    read once per session, not per request (aiohttp's ``trust_env`` reads it, and
    ``~/.netrc``, in a worker thread for every request)."""
    host = urllib.parse.urlsplit(url).hostname
    if host is None or urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies().get(url.split("://", 1)[0])


def _tls_context() -> ssl.SSLContext:
    """certifi's CA bundle unless ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` name others
    (OpenSSL's default paths read both)."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


async def _closed_at_loop_shutdown(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Parked at its ``yield`` for the life of the session; closing it closes the session.

    Its event loop closes every parked async generator when it shuts down
    (``asyncio.run`` does, as does every ``asyncio.Runner``), so a session whose owner
    never awaited :meth:`HttpEndpoint.aclose` still closes its connections in its own
    loop, instead of leaking them and being reported unclosed at garbage collection.
    """
    try:
        yield
    finally:
        await session.close()


class HttpEndpoint:
    """One endpoint's HTTP sessions (one per event loop) and its retry loop.

    ``where`` names the endpoint in every error (``model 'x' at https://...``);
    ``headers`` are sent with every request and never appear in an error.
    """

    def __init__(
        self,
        base_url: str,
        *,
        where: str,
        headers: Mapping[str, str],
        policy: RetryPolicy,
        timeout_s: float,
        total_timeout_s: float,
    ) -> None:
        for name, value in (("timeout_s", timeout_s), ("total_timeout_s", total_timeout_s)):
            if not (
                isinstance(value, int | float) and 0 < value <= limits.MAX_TIMEOUT_S
            ) or isinstance(value, bool):
                raise ConfigError("model-config", f"{where}: {name} {value!r} is not positive")
        policy.check(where)
        self.base_url = base_url
        self.where = where
        self.policy = policy
        self.timeout_s = float(timeout_s)
        self.total_timeout_s = float(total_timeout_s)
        self._headers = dict(headers)
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._proxy: str | None = None

    async def aclose(self) -> None:
        """Close this event loop's HTTP session (a session of another loop is dropped)."""
        closer, self._closer = self._closer, None
        owner = self._session_loop() if self._session_loop is not None else None
        self._session = self._session_loop = None
        if closer is not None and owner is asyncio.get_running_loop():
            await closer.aclose()  # its ``finally`` closes the session

    async def send(self, method: str, url: str, *, body: bytes | None, key: str) -> Answer:
        """``method url`` with ``body``, retried under the policy (``key`` seeds the
        jitter); the first answer whose status is not retried is returned.

        Raises :class:`TransientModelError` when the retries are spent, ``model-malformed``
        for a body over ``MAX_MODEL_REPLY_BYTES``, ``model-error`` for a request that
        cannot be made at all (an invalid URL).
        """
        session = await self._session_for_this_loop()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        policy = self.policy
        retries = 0
        while True:
            delay: float | None = None
            try:
                async with session.request(
                    method,
                    url,
                    data=body,
                    headers=headers,
                    proxy=self._proxy,
                    allow_redirects=False,  # a redirect is the endpoint's error
                ) as response:
                    raw = await _read_body(response)
            except _TooLarge as error:
                raise ModelError(
                    "model-malformed",
                    f"{self.where}: too-large: the reply passes {error.size:,} bytes; the limit "
                    f"is {limits.MAX_MODEL_REPLY_BYTES:,} (MAX_MODEL_REPLY_BYTES)",
                    retries=retries,
                ) from None
            except TimeoutError as error:  # aiohttp's timeouts are TimeoutErrors too
                failure = (
                    f"no reply within {self.timeout_s:g}s per read / {self.total_timeout_s:g}s "
                    f"in all ({type(error).__name__})"
                )
            except _CONNECTION_ERRORS as error:
                failure = f"connection failed ({type(error).__name__})"
            except aiohttp.ClientError as error:
                raise ModelError(
                    "model-error",
                    f"{self.where}: request failed ({type(error).__name__})",
                    retries=retries,
                ) from None
            else:
                if response.status not in policy.statuses:
                    return Answer(response.status, response.headers, raw, retries)
                failure = f"HTTP {response.status}"
                delay = retry_after(
                    response.headers.get("retry-after"), cap_s=policy.retry_after_cap_s
                )
            if retries >= policy.max_retries:
                raise Exhausted(self.where, failure, retries=retries)
            if delay is None:
                delay = backoff_delay(
                    key, retries, base_s=policy.backoff_s, cap_s=policy.backoff_cap_s
                )
            await asyncio.sleep(delay)
            retries += 1

    async def _session_for_this_loop(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        owner = self._session_loop() if self._session_loop is not None else None
        if self._session is None or owner is not loop:
            # A session is bound to the loop it was first used on; a new loop gets its own.
            tls = _tls_context() if self.base_url.startswith("https://") else True
            self._proxy = _environment_proxy(self.base_url)
            self._session = aiohttp.ClientSession(
                # No cap of its own (aiohttp's default is 100): the caller bounds the
                # requests in flight, and a cap below that would queue them here.
                connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                # Each phase (connecting, every read) within timeout_s, and the whole
                # request within total_timeout_s: a trickling server is cut off too.
                timeout=aiohttp.ClientTimeout(
                    total=self.total_timeout_s,
                    connect=self.timeout_s,
                    sock_read=self.timeout_s,
                ),
                headers=self._headers,
            )
            self._session_loop = weakref.ref(loop)
            self._closer = _closed_at_loop_shutdown(self._session)
            await anext(self._closer)  # parked until aclose() or the loop's shutdown
        return self._session


class HttpModel:
    """What the HTTP model adapters share: the checked settings, the API key read from
    the environment (never kept in messages or a repr), the endpoint with its retry
    policy, and the identity. A subclass sets ``provider`` and calls :meth:`_open`."""

    provider: str

    def _open(
        self,
        base_url: str,
        model: str,
        *,
        route: str,
        reserved: frozenset[str],
        api_key_env: str | None,
        headers: Mapping[str, str],
        auth: Callable[[str], Mapping[str, str]],
        revision: str,
        parameters: dict[str, Any] | None,
        timeout_s: float,
        total_timeout_s: float,
        retry: Mapping[str, Any],
    ) -> None:
        """Check and keep the settings (``model-config``; an unset key variable is
        ``model-auth``). ``route`` is appended to the base URL for a completion;
        ``headers`` go on every request, ``auth(key)`` too when a key is set;
        ``retry`` holds :class:`RetryPolicy`'s fields."""
        where = f"model {model!r} at {base_url}"
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError("model-config", f"{where}: base_url must start with http(s)://")
        if not model:
            raise ConfigError("model-config", f"model at {base_url}: the model name is empty")
        parameters = dict(parameters or {})
        clash = sorted(reserved & parameters.keys())
        if clash:
            raise ConfigError("model-config", f"{where}: parameters may not set {clash}")
        policy = RetryPolicy(**retry)
        policy.check(where)
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
        self._url = f"{self.base_url}{route}"
        self._api_key = api_key
        self._api_key_env = api_key_env
        self._parameters = parameters
        self._http = HttpEndpoint(
            self.base_url,
            where=self._where,
            headers={**headers, **(auth(api_key) if api_key else {})},
            policy=policy,
            timeout_s=timeout_s,
            total_timeout_s=total_timeout_s,
        )
        self._identity = ModelIdentity(
            provider=self.provider, model=model, revision=revision, parameters=parameters
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def identity(self) -> ModelIdentity:
        """``<provider> / <model> / <revision>`` with the pinned parameters."""
        return self._identity

    async def aclose(self) -> None:
        """Close this event loop's HTTP session (a session of another loop is dropped)."""
        await self._http.aclose()
