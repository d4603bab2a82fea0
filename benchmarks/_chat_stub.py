"""A simulated OpenAI-compatible endpoint for ``server.py``: every chat completion
takes ``--latency`` seconds and returns one fixed, valid reply with token usage.

Not a benchmark itself. ``server.py`` starts it as a child process, so that its CPU
is not the benchmark's event loop; it is an aiohttp server (aiohttp is a dependency:
the adapter's HTTP client). It listens on
127.0.0.1 on a port the OS picks, prints ``{"port": N}`` once listening, and serves
until its stdin closes (the parent stopped it, or died). ``GET /stats`` returns the
requests served and the most that were in flight at once since the last
``GET /stats``, and starts counting afresh::

    python benchmarks/_chat_stub.py --latency 0.2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys

from aiohttp import web

# A fixed reply: the answer is not checked here, only the traffic is measured.
REPLY = json.dumps(
    {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ANSWER: 42"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 60, "completion_tokens": 4, "total_tokens": 64},
    }
).encode()


class Counters:
    """Requests served and the peak of requests in flight (one event loop: no lock)."""

    def __init__(self) -> None:
        self.served = 0
        self.in_flight = 0
        self.peak = 0


def application(latency_s: float) -> web.Application:
    counters = Counters()

    async def completion(request: web.Request) -> web.Response:
        counters.in_flight += 1
        counters.peak = max(counters.peak, counters.in_flight)
        try:
            await request.read()  # the whole body, as a real server would
            await asyncio.sleep(latency_s)
            return web.Response(body=REPLY, content_type="application/json")
        finally:
            counters.in_flight -= 1
            counters.served += 1

    async def stats(request: web.Request) -> web.Response:
        reply = {"requests": counters.served, "max_in_flight": counters.peak}
        counters.served, counters.peak = 0, counters.in_flight
        return web.json_response(reply)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completion)
    app.router.add_get("/stats", stats)
    return app


async def serve(latency_s: float) -> None:
    runner = web.AppRunner(application(latency_s), access_log=None)
    await runner.setup()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    # A large backlog: 200 clients connecting at once must not be dropped and retried.
    listener.listen(2048)
    await web.SockSite(runner, listener, backlog=2048).start()
    print(json.dumps({"port": listener.getsockname()[1]}), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes stdin
    await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per completion")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.latency))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
