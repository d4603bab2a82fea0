"""Headless Chromium driven over the DevTools protocol, for tests that need a page
that lives: one whose script updates it, or a link clicked as a user clicks it.

``_browser.py`` dumps a page's DOM from the command line (one load, no input); here
Chromium runs with ``--remote-debugging-port=0`` on 127.0.0.1, the test connects to
its page over a WebSocket (aiohttp's client) and sends protocol commands:
``Page.navigate``, ``Runtime.evaluate``, and ``Input.dispatchMouseEvent`` at a link's
centre (a real click: the browser hit-tests it and follows the link).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from _browser import chromium

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-extensions",
    "--mute-audio",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1280,1600",
)


class ProtocolError(RuntimeError):
    """A DevTools command failed (e.g. evaluated while the page was reloading)."""


class Page:
    """The browser's one page, over its DevTools WebSocket."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.sent = 0

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.sent += 1
        number = self.sent
        await self.socket.send_json({"id": number, "method": method, "params": params})
        while True:  # events in between are not needed here
            message = await self.socket.receive_json()
            if message.get("id") == number:
                if "error" in message:
                    raise ProtocolError(f"{method}: {message['error']}")
                return message["result"]

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise ProtocolError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, *, timeout: float = 120) -> Any:
        """The first truthy value of ``expression``, evaluated every 0.2 s (a page
        reloading in between is evaluated again); AssertionError after ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            with contextlib.suppress(ProtocolError):
                value = await self.evaluate(expression)
                if value:
                    return value
            await asyncio.sleep(0.2)
        raise AssertionError(f"not true within {timeout} s: {expression}")

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", url=url)
        await self.wait_for(
            f"location.href === {json.dumps(url)} && document.readyState === 'complete'"
        )

    async def text(self, selector: str = "body") -> str | None:
        """The text of the first element ``selector`` finds (None: none, or the page
        is between two loads)."""
        try:
            return await self.evaluate(
                f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || null"
            )
        except ProtocolError:
            return None

    async def click(self, selector: str) -> None:
        """Press and release the mouse at the centre of the element ``selector``."""
        found = f"document.querySelector({json.dumps(selector)})"
        x, y = await self.evaluate(
            f"(() => {{ const e = {found}; e.scrollIntoView({{block: 'center'}});"
            " const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            await self.send(
                "Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1
            )


@contextlib.asynccontextmanager
async def open_browser(home: Path) -> AsyncIterator[Page]:
    """Chromium (profile under ``home``) and its page; stopped on exit."""
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=home))  # fresh: no old port
    process = await asyncio.create_subprocess_exec(
        chromium(),
        *_FLAGS,
        f"--user-data-dir={profile}",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "HOME": str(home)},
    )
    try:
        port_file = profile / "DevToolsActivePort"  # chromium writes its port here
        for _ in range(600):
            if port_file.is_file() and len(port_file.read_text().splitlines()) >= 2:
                break
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().splitlines()[0])
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as reply:
                targets = await reply.json()
            target = next(t for t in targets if t["type"] == "page")
            async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket:
                yield Page(socket)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        await process.wait()
