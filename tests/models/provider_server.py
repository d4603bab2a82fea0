"""A real aiohttp.web server on 127.0.0.1 that answers like a provider, for adapter tests.

Every request (any method, any path) takes the next scripted answer, in order; an
exhausted script answers 500. An answer can also hang (never reply until the server
closes) or trickle (send its body one byte at a time, forever) or drop (promise 500 bytes, send the
body, close the connection). The server records each
request it received: method, path, headers and JSON body.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web


@dataclass(frozen=True)
class Answer:
    """One scripted answer. A str or bytes body is sent as it is, anything else as JSON."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    mode: Literal["reply", "hang", "trickle", "drop"] = "reply"
    content_type: str = "application/json"


@dataclass(frozen=True)
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class ProviderServer:
    """Serves scripted answers on 127.0.0.1 (port chosen by the OS) from its own thread."""

    def __init__(self) -> None:
        self.script: deque[Answer] = deque()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._stopping: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)
        self.root = f"http://127.0.0.1:{self.port}"

    def answer(self, status: int = 200, body: Any = None, *, times: int = 1, **options: Any):
        """Append an answer (``times`` times) to the script."""
        with self._lock:
            self.script.extend([Answer(status, body, **options)] * times)

    def paths(self) -> list[str]:
        """The method and path of every request received, in order."""
        return [f"{seen.method} {seen.path}" for seen in self.seen]

    def close(self) -> None:
        """Release every hanging answer, stop serving and free the port."""

        async def stop() -> None:
            assert self._stopping is not None and self._runner is not None
            self._stopping.set()
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    # ------------------------------------------------------------ internals
    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._stopping = asyncio.Event()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        self._loop.run_forever()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        with self._lock:
            self.seen.append(Seen(request.method, request.path, dict(request.headers), body))
            answer = self.script.popleft() if self.script else Answer(500, {})
        payload = (
            answer.body
            if isinstance(answer.body, bytes)
            else answer.body.encode()
            if isinstance(answer.body, str)
            else json.dumps(answer.body).encode()
        )
        assert self._stopping is not None
        if answer.mode == "hang":
            await self._stopping.wait()
            return web.Response(status=503)
        if answer.mode == "trickle":
            response = web.StreamResponse(status=answer.status, headers=answer.headers)
            response.content_type = answer.content_type
            await response.prepare(request)
            while not self._stopping.is_set():
                await response.write(b" ")
                await asyncio.sleep(0.02)
            return response
        if answer.mode == "drop":
            response = web.StreamResponse(status=answer.status)
            response.content_length = 500
            await response.prepare(request)
            await response.write(payload)
            assert request.transport is not None
            request.transport.close()
            return response
        return web.Response(
            status=answer.status,
            body=payload,
            headers={"Content-Type": answer.content_type, **answer.headers},
        )
