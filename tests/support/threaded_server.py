"""A real HTTP server on 127.0.0.1 in a thread of its own, for tests that run a whole
experiment against an endpoint (the run's own event loop stays in the test's thread).

A subclass sets its state, then calls ``super().__init__()`` and answers in ``_handle``
(every method, every path); ``url`` is ``http://127.0.0.1:<port>/v1``; ``close()`` stops
it.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod

from aiohttp import web

__all__ = ["ThreadedServer"]


class ThreadedServer(ABC):
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        assert ready.wait(10), "the test server did not start"
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        self._loop.run_forever()

    @abstractmethod
    async def _handle(self, request: web.Request) -> web.Response:
        """The answer to every request (every method, every path)."""

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
