"""``python -m xaytune.view <tree> --serve``: the viewer of a tree, live, on 127.0.0.1.

The tree may be being written by a run. The server polls it every ``interval``
seconds (:class:`~xaytune.viewer._live_status.TreeScan`: sizes and mtimes, the
attempts' last lines, the landed comparisons) and, when anything changed, rebuilds the
site with the viewer's own builder into a fresh directory of a temporary directory it
owns (outside the tree; removed when it stops). After a build it waits as long as the
build took before the next one, so following a large tree never takes more than half
a core from the run. Requests are served from the newest build that succeeded; a
build that fails (a tree not yet viewable) leaves the previous one served and its
one-line reason in the status.

Every HTML page is served with a small panel and script added (the files on disk stay
the static site): the script polls ``/_live/status.json`` every second, shows the
running counts (attempts sealed complete or partial, and open, per candidate and seed),
whether a run is writing the tree, and the relation and each objective's verdict once
the comparison lands. When a newer build is served it asks ``/_live/digest/<page>``
for the digest of its page there, and reloads (keeping its scroll position) only when
the page's bytes changed: a task page being read stays put while other tasks seal.

It never writes into the tree and never takes its lock, not even a shared one for a
moment: the writer is found in ``/proc/locks`` by the lock file's inode.

aiohttp.web (a dependency already) serves: the poller, the builds' bookkeeping and the
requests share one event loop (builds run in a worker thread), and SIGINT/SIGTERM are
loop signal handlers, so stopping is one path: finish the build in progress, close the
server, remove the temporary directory, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path

from aiohttp import web

from xaytune.core.errors import XaytuneError
from xaytune.viewer._live_status import TreeScan

__all__ = ["LiveSite", "serve_live"]

STATUS_PATH = "/_live/status.json"
SCRIPT_PATH = "/_live/live.js"
DIGEST_PATH = "/_live/digest/"
_BODY = re.compile(rb"<body[^>]*>", re.IGNORECASE)


def _build(root: Path, suites: tuple[Path, ...], out: Path) -> str:
    """Write the viewer's site for ``root`` (a run, finished or not, or a models run's
    root) and its report pages into ``out``; a one-line summary."""
    from xaytune.viewer._build import build_site
    from xaytune.viewer._report_pages import write_report_pages

    site = build_site(root, out, suites=suites)
    pages = write_report_pages(root, out)
    return f"{site.tasks} tasks" + (f", {len(pages)} report pages" if pages else "")


def _writer(root: Path) -> str | None:
    # Read from /proc/locks: a probe with a lock of its own, even a shared one, could
    # make a resume starting that instant fail ``tree-locked``.
    from xaytune.viewer._tree import tree_writer_pid

    return tree_writer_pid(root)


@dataclass
class LiveSite:
    """The builds of one tree in ``work`` (a directory this object owns) and what the
    status endpoint says. ``build`` writes a site into an empty directory (raising on
    failure); ``writer`` names the live process writing the tree, or None."""

    root: Path
    work: Path
    build: Callable[[Path], str]
    writer: Callable[[], str | None]
    generation: int = 0
    current: Path | None = None
    summary: str = ""
    problem: str | None = None
    writing: str | None = None

    def __post_init__(self) -> None:
        self.scan = TreeScan(self.root)

    def poll(self) -> bool:
        """Scan the tree; True when it changed since the last scan."""
        self.writing = self.writer()
        return self.scan.poll()

    def rebuild(self) -> None:
        """Build the site once more; on success it is the one served (the build
        before it is kept for requests in flight, older ones are removed)."""
        target = self.work / f"build-{self.generation + 1}"
        try:
            summary = self.build(target)
        except Exception as error:  # a tree mid-write may fail anywhere: keep the last build
            shutil.rmtree(target, ignore_errors=True)
            line = (str(error).splitlines() or [""])[0]
            known = isinstance(error, XaytuneError | OSError)
            self.problem = line if known and line else f"{type(error).__name__}: {line}"
            return
        self.generation += 1
        previous, self.current = self.current, target
        self.summary, self.problem = summary, None
        for old in self.work.glob("build-*"):
            if old not in (previous, target):
                shutil.rmtree(old, ignore_errors=True)

    def status(self) -> dict:
        return {
            "tree": self.root.name,
            "generation": self.generation,
            "site": self.summary if self.current is not None else None,
            "problem": self.problem,
            "writer": self.writing,
            **self.scan.status(),
        }


def _script() -> bytes:
    return resources.files("xaytune.report").joinpath("templates/_live.js").read_bytes()


def _with_panel(page: bytes, generation: int) -> bytes:
    """``page`` with the live panel first in its body (the build it came from and the
    digest of its bytes there), and the script after it."""
    panel = (
        f'<div id="xaytune-live" data-generation="{generation}" data-digest="{_digest(page)}">'
        f'</div><script src="{SCRIPT_PATH}"></script>'
    ).encode()
    found = _BODY.search(page)
    at = found.end() if found else 0
    return page[:at] + panel + page[at:]


def _digest(page: bytes) -> str:
    return hashlib.sha256(page).hexdigest()


def _site_file(live: LiveSite, name: str) -> Path | None:
    """The file ``name`` (a path under the site) of the build served now, or None: no
    build yet, no such file, or a name reaching outside it or at a hidden file."""
    parts = (name or "index.html").split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        return None
    base = live.current
    path = None if base is None else base.joinpath(*parts)
    return path if path is not None and path.is_file() else None


def _waiting_page(live: LiveSite) -> bytes:
    why = escape(live.problem or "the first build has not finished")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{escape(live.root.name)} · live viewer</title></head><body>"
        f"<h1>{escape(live.root.name)}</h1>"
        f"<p class='waiting'>The per-task site is not built yet: {why}. It appears here "
        "as soon as the tree can be read; the counts above follow the attempt files.</p>"
        "</body></html>"
    ).encode()


def _application(live: LiveSite) -> web.Application:
    script = _script()

    async def status(request: web.Request) -> web.Response:
        return web.json_response(live.status(), headers={"Cache-Control": "no-store"})

    async def live_js(request: web.Request) -> web.Response:
        return web.Response(
            body=script, content_type="text/javascript", headers={"Cache-Control": "no-store"}
        )

    async def digest(request: web.Request) -> web.Response:
        # A page reloads on a newer build only when its own bytes changed in it.
        path = _site_file(live, request.match_info["name"])
        found = None if path is None else _digest(path.read_bytes())
        return web.json_response(
            {"generation": live.generation, "digest": found}, headers={"Cache-Control": "no-store"}
        )

    async def page(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if live.current is None and name in ("", "index.html"):
            body = _with_panel(_waiting_page(live), 0)
            return web.Response(body=body, content_type="text/html", charset="utf-8")
        path = _site_file(live, name)
        if path is None:
            raise web.HTTPNotFound()
        if path.suffix != ".html":
            return web.FileResponse(path)
        body = _with_panel(path.read_bytes(), live.generation)
        return web.Response(
            body=body,
            content_type="text/html",
            charset="utf-8",
            headers={"Cache-Control": "no-store"},
        )

    app = web.Application()
    app.router.add_get(STATUS_PATH, status)
    app.router.add_get(SCRIPT_PATH, live_js)
    app.router.add_get(DIGEST_PATH + "{name:.*}", digest)
    app.router.add_get("/{name:.*}", page)
    return app


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    """Sleep ``seconds``, or less when ``stop`` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def _poll(
    live: LiveSite, stop: asyncio.Event, changed: asyncio.Event, interval: float
) -> None:
    """Scan the tree every ``interval`` (the counts stay current during a long build)."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        if await loop.run_in_executor(None, live.poll):
            changed.set()
        await _pause(stop, interval)


async def _rebuild(
    live: LiveSite, stop: asyncio.Event, changed: asyncio.Event, interval: float
) -> None:
    """Rebuild after each change, one build at a time in a thread; after a build, wait
    as long as it took (at least ``interval``): on a large tree the viewer then takes
    at most half a core from the run it watches."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        waiting = [asyncio.ensure_future(changed.wait()), asyncio.ensure_future(stop.wait())]
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        for future in waiting:
            future.cancel()
        if stop.is_set():
            return
        changed.clear()
        started = loop.time()
        await loop.run_in_executor(None, live.rebuild)
        await _pause(stop, max(interval, loop.time() - started))


async def _serve(live: LiveSite, sock: socket.socket, interval: float) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    # The first build before the first request (stoppable like the rest).
    await loop.run_in_executor(None, live.poll)
    await loop.run_in_executor(None, live.rebuild)
    if stop.is_set():
        return
    runner = web.AppRunner(_application(live), access_log=None, handle_signals=False)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    host, port = sock.getsockname()[:2]
    print(f"serving http://{host}:{port}/index.html (Ctrl-C to stop)", flush=True)
    print(
        f"live: following {live.root} (polled every {interval:g} s; the site is rebuilt "
        f"into {live.work}, removed on exit)",
        flush=True,
    )
    changed = asyncio.Event()
    try:
        await asyncio.gather(
            _poll(live, stop, changed, interval), _rebuild(live, stop, changed, interval)
        )
    finally:
        await runner.cleanup()


def serve_live(
    root: Path,
    *,
    suites: tuple[Path, ...] = (),
    port: int = 0,
    interval: float = 1.0,
) -> int:
    """Serve ``root``'s viewer live on 127.0.0.1:``port`` (0: any free port) until
    SIGINT or SIGTERM; 0 then. ``port-unavailable`` when the port cannot be bound.
    Prints ``serving http://127.0.0.1:<port>/index.html (Ctrl-C to stop)`` first."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as error:
        sock.close()
        raise XaytuneError(
            "port-unavailable", f"127.0.0.1:{port}: cannot serve there ({error.strerror})"
        ) from None
    work = Path(tempfile.mkdtemp(prefix="xaytune-live-"))
    try:
        live = LiveSite(
            root,
            work,
            build=lambda out: _build(root, suites, out),
            writer=lambda: _writer(root),
        )
        asyncio.run(_serve(live, sock, interval))
    finally:
        sock.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"stopped; removed {work}", flush=True)
    return 0
