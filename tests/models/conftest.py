"""A real HTTP server on 127.0.0.1 with scripted responses, for the model adapters."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Scripted:
    """One scripted response: status, JSON body (or raw text), headers, delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any


class _Listener(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # many clients connecting at once are not dropped


class ScriptedServer:
    """Serves scripted responses in order; an exhausted script answers 500.

    It counts the connections it accepted and the most requests it held at once."""

    def __init__(self) -> None:
        self.script: deque[Scripted] = deque()
        self.received: list[Received] = []
        self.connections = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server.connections += 1

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                with server._lock:
                    server.received.append(
                        Received(self.path, dict(self.headers.items()), json.loads(raw or b"null"))
                    )
                    reply = server.script.popleft() if server.script else Scripted(500, {})
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    time.sleep(reply.delay_s)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                payload = (
                    reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                # The client may have given up already (timeout test): nothing to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return  # keep test output clean

        self._httpd = _Listener(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def respond(
        self,
        status: int = 200,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
        times: int = 1,
    ) -> None:
        """Append a reply (``times`` times) to the script; a str body is sent raw."""
        self.script.extend([Scripted(status, body, headers or {}, delay_s)] * times)

    def close(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def chat_server():
    """A scripted OpenAI-compatible server on 127.0.0.1 (port chosen by the OS)."""
    server = ScriptedServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def provider():
    """A scripted aiohttp.web server on 127.0.0.1 answering like a provider (any path)."""
    from provider_server import ProviderServer

    server = ProviderServer()
    try:
        yield server
    finally:
        server.close()
