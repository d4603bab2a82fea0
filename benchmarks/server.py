"""Server benchmark: how much of a model server's throughput xaytune's run leaves unused.

The quickstart's two candidates (``calculator``, ``mental``) run one replicate each
(seed 101, durability ``fsync``) as the app runs them: ``prepare_replicate`` (the model
the app builds, the specs it compiles: untimed), then ``run_attempts`` at the level's
concurrency, sealing and the client's close included (timed). Every request body the adapter
POSTs is recorded as it is sent (aiohttp's ``ClientSession.post`` is wrapped; the
adapter's session is used unchanged). A bare client then replays those exact bytes,
replicate by replicate, in the order they were sent, from ``c`` concurrent workers,
and reads each reply whole; it is the session the adapter makes, so it has the same
connection settings (no cap, keep-alive, the same timeouts). Metric: requests/s of
xaytune over the bare client's, target >= 0.95; medians of ``--repeat`` pairs, each
pair run back to back (xaytune, then the replay of what it sent).

Endpoints:

``llama.cpp``
    The ``model=llama_cpp_local`` server (SmolLM2-135M-Instruct Q4_1, installed by
    ``scripts/setup-local-model.sh``) with ``--llama-parallel`` slots (also the
    concurrency), ``--llama-threads`` threads, ``--llama-tasks`` tasks per
    candidate, replies capped at ``--max-tokens`` (in the bodies: the same for both
    clients). One untimed run first warms the slots' prompt caches. Output tokens
    are printed for both clients: the server is not bit-for-bit deterministic
    across batches, so a replay may generate a little more or less.
``stub``
    ``_chat_stub.py`` (aiohttp) in a child process on 127.0.0.1: every completion
    takes ``--latency`` s and returns a fixed reply with usage, so each task is one
    request. ``--tasks`` per candidate at each of ``--concurrency``. The stub
    reports the most requests it had in flight at once (``*_peak_in_flight``).

One machine-readable line per endpoint and level (medians), e.g.::

    endpoint=stub-200ms concurrency=200 requests=2000 xaytune_rps=... bare_rps=...
    ratio=... target_met=... xaytune_cpu=... bare_cpu=... server_cpu=...

``ratio`` is the median of the pairs' ratios. ``*_cpu`` is CPU seconds per wall
second (1.0 = one core busy): this process's during each timed run, the server
process's over both runs of a pair. On 2 cores, a busy machine shows up there.

Usage (from the repository root, with the local model set up)::

    python benchmarks/server.py                      # both endpoints, ~3 minutes
    python benchmarks/server.py --endpoint stub --concurrency 50,200 --repeat 3
    python benchmarks/server.py --endpoint stub --concurrency 200 --profile
    python benchmarks/server.py --dir /dev/shm       # stores on tmpfs: no disk

This is a plain script, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common as common
import aiohttp
import httpx
from hydra import compose, initialize_config_module

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.experiment.api import resolve_config
from xaytune.experiment.model_adapters import build_model
from xaytune.experiment.parts import experiment_toolbox
from xaytune.experiment.replicate import prepare_replicate, run_attempts
from xaytune.models import OpenAICompatibleModel
from xaytune.models.llama_cpp_local import stop_shared_servers
from xaytune.suites import build_suite

SEED = 101  # the quickstart's first seed
TARGET = 0.95
JSON = {"Content-Type": "application/json"}
STUB = Path(__file__).with_name("_chat_stub.py")


@dataclass
class Endpoint:
    """Where the requests go, and the Hydra overrides that point the app's model there."""

    name: str
    overrides: list[str]
    server_pid: int
    stats_url: str | None = None

    def server_cpu_s(self) -> float:
        """CPU seconds the server process has used so far (all its threads)."""
        with open(f"/proc/{self.server_pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_in_flight(self) -> int | None:
        """The stub's most requests in flight since the last call (None: not a stub)."""
        if self.stats_url is None:
            return None
        return int(httpx.get(self.stats_url).json()["max_in_flight"])


@dataclass
class Replicate:
    """One candidate's replicate: what xaytune sent, where, and what that run did."""

    url: str
    timeout_s: float
    bodies: list[bytes]
    output_tokens: int


@dataclass
class Timed:
    """One client's timed run: wall and CPU seconds, the server's CPU, what was done."""

    wall_s: float
    cpu_s: float
    server_cpu_s: float
    requests: int
    tokens: int
    peak: int | None


# ------------------------------------------------------------------ recording
@contextlib.contextmanager
def recording(bodies: list[bytes]) -> Iterator[None]:
    """Append the body of every POST any ``aiohttp.ClientSession`` sends to ``bodies``
    (the adapters send through ``ClientSession.request``)."""
    request = aiohttp.ClientSession.request

    def recorded(self: aiohttp.ClientSession, method: str, url: Any, **options: Any):
        if method == "POST":
            bodies.append(options["data"])
        return request(self, method, url, **options)

    aiohttp.ClientSession.request = recorded  # type: ignore[method-assign]
    try:
        yield
    finally:
        aiohttp.ClientSession.request = request  # type: ignore[method-assign]


# ------------------------------------------------------------------ the two clients
def run_xaytune(
    cfg, source: SuiteSource, root: Path, endpoint: Endpoint, profiler=None
) -> tuple[Timed, list[Replicate]]:
    """Each candidate's replicate as the app runs it: ``prepare_replicate`` (the model
    built, the specs compiled: untimed), then ``run_attempts`` timed (every task at the
    config's concurrency, sealing included, and the client's close at its end)."""
    toolbox = experiment_toolbox(cfg)
    replicates, wall, cpu = [], 0.0, 0.0
    server_cpu = endpoint.server_cpu_s()
    endpoint.peak_in_flight()
    for label in sorted(cfg.candidates):
        prepared = prepare_replicate(
            cfg, label=label, seed=SEED, out=root, source=source, toolbox=toolbox
        )
        bodies: list[bytes] = []
        with recording(bodies):
            if profiler is not None:
                profiler.enable()
            started = (time.perf_counter(), time.process_time())
            runs = run_attempts(prepared)
            seconds, cpu_s = time.perf_counter() - started[0], time.process_time() - started[1]
            if profiler is not None:
                profiler.disable()
        wall, cpu = wall + seconds, cpu + cpu_s
        attempts = [attempt for run in runs for attempt in run.attempts]
        if len(attempts) != len(prepared.specs) or any(a.status != "complete" for a in attempts):
            raise SystemExit(f"{label}: not every task ran to a complete attempt")
        replicates.append(
            Replicate(
                url=f"{prepared.model.base_url}/chat/completions",
                timeout_s=cfg.model.timeout_s,
                bodies=bodies,
                output_tokens=sum(a.spend.output_tokens for a in attempts),
            )
        )
    timed = Timed(
        wall_s=wall,
        cpu_s=cpu,
        server_cpu_s=endpoint.server_cpu_s() - server_cpu,
        requests=sum(len(r.bodies) for r in replicates),
        tokens=sum(r.output_tokens for r in replicates),
        peak=endpoint.peak_in_flight(),
    )
    return timed, replicates


async def _replay(replicate: Replicate, concurrency: int) -> tuple[float, float, list[bytes]]:
    # The session the adapter makes: the same connection settings, nothing else.
    base = replicate.url.removesuffix("/chat/completions")
    adapter = OpenAICompatibleModel(base, "bare", timeout_s=replicate.timeout_s)
    session = await adapter._http._session_for_this_loop()  # the session the adapter uses
    replies: list[bytes] = [b""] * len(replicate.bodies)
    pending = iter(enumerate(replicate.bodies))

    async def worker() -> None:
        for i, body in pending:  # the recorded order: the next body goes next
            async with session.post(replicate.url, data=body, headers=JSON) as response:
                replies[i] = await response.read()
                if response.status != 200:
                    raise SystemExit(f"bare client: HTTP {response.status} from the server")

    try:
        started = (time.perf_counter(), time.process_time())
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(replies)))))
        return time.perf_counter() - started[0], time.process_time() - started[1], replies
    finally:
        await adapter.aclose()


def run_bare(replicates: list[Replicate], concurrency: int, endpoint: Endpoint) -> Timed:
    """The recorded bodies again, replicate by replicate, from a bare client."""
    wall = cpu = 0.0
    tokens = 0
    server_cpu = endpoint.server_cpu_s()
    endpoint.peak_in_flight()
    for replicate in replicates:
        seconds, cpu_s, replies = asyncio.run(_replay(replicate, concurrency))
        wall, cpu = wall + seconds, cpu + cpu_s
        tokens += sum(json.loads(reply)["usage"]["completion_tokens"] for reply in replies)
    return Timed(
        wall_s=wall,
        cpu_s=cpu,
        server_cpu_s=endpoint.server_cpu_s() - server_cpu,
        requests=sum(len(r.bodies) for r in replicates),
        tokens=tokens,
        peak=endpoint.peak_in_flight(),
    )


# ------------------------------------------------------------------ endpoints
def quickstart(overrides: list[str]):
    """The quickstart's config with ``overrides``, validated as the app does."""
    with initialize_config_module("xaytune.conf", version_base="1.3"):
        raw = compose("config", overrides=["+experiment=quickstart", *overrides])
    return resolve_config(raw)[0]


@contextlib.contextmanager
def stub_endpoint(latency_s: float) -> Iterator[Endpoint]:
    child = subprocess.Popen(
        [sys.executable, str(STUB), "--latency", str(latency_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        port = json.loads(child.stdout.readline())["port"]
        base = f"http://127.0.0.1:{port}"
        yield Endpoint(
            name=f"stub-{latency_s * 1000:.0f}ms",
            overrides=["model=openai_compatible", f"model.base_url={base}/v1", "model.name=stub"],
            server_pid=child.pid,
            stats_url=f"{base}/stats",
        )
    finally:
        with contextlib.suppress(OSError):
            child.stdin.close()  # type: ignore[union-attr]
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@contextlib.contextmanager
def llama_endpoint(args: argparse.Namespace) -> Iterator[Endpoint]:
    overrides = [
        "model=llama_cpp_local",
        f"model.parallel={args.llama_parallel}",
        f"model.threads={args.llama_threads}",
        f"model.context={args.llama_context}",
        f"model.parameters.max_tokens={args.max_tokens}",
    ]
    try:
        model = build_model(quickstart(overrides).model, seed=SEED)  # starts the server
        assert model.server is not None and model.server.pid is not None
        yield Endpoint(name="llama.cpp", overrides=overrides, server_pid=model.server.pid)
    finally:
        stop_shared_servers()


def measure(args, endpoint: Endpoint, root: Path, concurrency: int, tasks: int) -> None:
    """``--repeat`` pairs (xaytune, then the bare replay of its bodies); the medians."""
    cfg = quickstart([*endpoint.overrides, f"concurrency={concurrency}", f"sampling.count={tasks}"])
    suite_dir = root / f"suite-{tasks}"
    if suite_dir.exists():
        source = SuiteSource(suite_dir)
    else:
        task_list, references = common.calculator_tasks(tasks)
        source = build_suite(
            suite_dir, name="arith-tools", version="1", tasks=task_list, references=references
        )
    if endpoint.stats_url is None:
        # A model server caches each slot's last prompt: one untimed run first, so that
        # the first timed run does not pay for a cold cache that its replay then reuses.
        warm, _ = run_xaytune(cfg, source, root / f"{endpoint.name}-warm-up", endpoint)
        print(f"{endpoint.name} c={concurrency} warm-up (untimed): {_human(warm)}", flush=True)
    pairs = []
    for i in range(args.repeat):
        where = root / f"{endpoint.name}-c{concurrency}-{i}"
        mine, replicates = run_xaytune(cfg, source, where, endpoint)
        bare = run_bare(replicates, concurrency, endpoint)
        pairs.append((mine, bare))
        print(f"{endpoint.name} c={concurrency} run {i + 1}: {mine.requests} requests; "
              f"xaytune {_human(mine)}; bare {_human(bare)}", flush=True)  # fmt: skip
    ratio = _median(b.wall_s / m.wall_s for m, b in pairs)
    fields: dict[str, Any] = {
        "endpoint": endpoint.name,
        "concurrency": concurrency,
        "requests": _median(m.requests for m, _ in pairs),
        "xaytune_rps": f"{_median(m.requests / m.wall_s for m, _ in pairs):.2f}",
        "bare_rps": f"{_median(b.requests / b.wall_s for _, b in pairs):.2f}",
        "ratio": f"{ratio:.3f}",
        "target_met": str(ratio >= TARGET).lower(),
        "xaytune_cpu": f"{_median(m.cpu_s / m.wall_s for m, _ in pairs):.2f}",
        "bare_cpu": f"{_median(b.cpu_s / b.wall_s for _, b in pairs):.2f}",
        "server_cpu": f"{_median(_server_load(m, b) for m, b in pairs):.2f}",
    }
    if endpoint.stats_url is not None:
        fields["xaytune_peak_in_flight"] = _median(m.peak for m, _ in pairs)
        fields["bare_peak_in_flight"] = _median(b.peak for _, b in pairs)
    else:
        fields["xaytune_tokens"] = _median(m.tokens for m, _ in pairs)
        fields["bare_tokens"] = _median(b.tokens for _, b in pairs)
    print(" ".join(f"{key}={value}" for key, value in fields.items()), flush=True)
    if args.profile:
        profiler = cProfile.Profile()
        where = root / f"{endpoint.name}-c{concurrency}-profile"
        mine, _ = run_xaytune(cfg, source, where, endpoint, profiler)
        print(f"# cProfile of xaytune's run at concurrency {concurrency}: {_human(mine)}")
        common.print_profile(profiler)


def _median(values) -> Any:
    return statistics.median(list(values))


def _server_load(mine: Timed, bare: Timed) -> float:
    return (mine.server_cpu_s + bare.server_cpu_s) / (mine.wall_s + bare.wall_s)


def _human(timed: Timed) -> str:
    peak = "" if timed.peak is None else f", at most {timed.peak} in flight"
    return (
        f"{timed.wall_s:.2f} s, {timed.requests / timed.wall_s:.1f} requests/s, "
        f"cpu {timed.cpu_s / timed.wall_s:.2f}, {timed.tokens} output tokens{peak}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", choices=("all", "llama", "stub"), default="all")
    parser.add_argument("--repeat", type=int, default=3, help="pairs per level (medians)")
    parser.add_argument("--tasks", type=int, default=1000, help="stub: tasks per candidate")
    parser.add_argument("--concurrency", default="50,200", help="stub: comma-separated levels")
    parser.add_argument("--latency", type=float, default=0.2, help="stub: seconds per request")
    parser.add_argument("--llama-tasks", type=int, default=12, help="llama: tasks per candidate")
    parser.add_argument("--llama-parallel", type=int, default=4, help="llama: slots = concurrency")
    parser.add_argument("--llama-threads", type=int, default=1, help="llama: CPU threads")
    parser.add_argument("--llama-context", type=int, default=4096, help="llama: shared by slots")
    parser.add_argument("--max-tokens", type=int, default=32, help="llama: cap on every reply")
    parser.add_argument(
        "--dir", type=Path, default=None, help="parent of the stores (default: the current dir)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="also cProfile one xaytune run per level"
    )
    args = parser.parse_args(argv)
    levels = [int(level) for level in args.concurrency.split(",") if level.strip()]
    if min([args.repeat, args.tasks, args.llama_tasks, *levels]) < 1:
        parser.error("--repeat, --tasks, --llama-tasks and every concurrency must be >= 1")

    with common.work_dir(args.dir, "xaytune-server-") as root:
        print(f"# {common.machine_line()}")
        print(f"# stores under {common.fs_line(root)}")
        print(
            f"# the quickstart's candidates (calculator, mental), seed {SEED}, durability fsync;"
            f" {args.repeat} pair(s) per level, xaytune then the bare replay (medians reported)"
        )
        if args.endpoint in ("all", "llama"):
            print(
                f"# llama.cpp: {args.llama_tasks} tasks per candidate, {args.llama_parallel} "
                f"slots (= concurrency), {args.llama_threads} thread(s), context "
                f"{args.llama_context}, max_tokens {args.max_tokens}",
                flush=True,
            )
            with llama_endpoint(args) as endpoint:
                measure(args, endpoint, root, args.llama_parallel, args.llama_tasks)
        if args.endpoint in ("all", "stub"):
            print(
                f"# stub: {args.tasks} tasks per candidate, {args.latency * 1000:.0f} ms per "
                "request, one request per task",
                flush=True,
            )
            with stub_endpoint(args.latency) as endpoint:
                for level in levels:
                    measure(args, endpoint, root, level, args.tasks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
