"""What the benchmark scripts share: workloads, the machine line, RSS, profiles.

Not a benchmark itself. The scripts import it as ``_common`` (they run as
``python benchmarks/<name>.py``, so this directory is on ``sys.path``).
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import platform
import pstats
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xaytune.core.domain.benchmark import (
    SeededSample,
    SuiteSource,
    TaskAssignment,
    record_assignment,
)
from xaytune.harness import AgentExecutionSpec, Harness, HarnessRunner, Toolbox
from xaytune.harness.evidence import HarnessEvidenceStore
from xaytune.harness.replicate import compile_replicate
from xaytune.models import SimulatedModel
from xaytune.suites import build_suite
from xaytune.suites.arith_generator import generate_arith_tools

SEED = 101

# One model turn, no tools: the instructions ask for the answer format, and a
# simulated model without mental slips (``mental_error_base=0``) answers every
# one-operation question correctly.
SINGLE_TURN = Harness(
    name="single-turn",
    system_prompt=(
        "Solve the arithmetic problem in your head. End with one line of the form ANSWER: <number>."
    ),
    max_turns=1,
)
# The conf/candidate/calculator.yaml harness: one calculator call per step, so an
# arith-tools task of k operations takes k + 1 model turns and k tool calls.
CALCULATOR = Harness(
    name="calculator",
    system_prompt=(
        "Solve the problem step by step. Use the calculator tool for every arithmetic "
        "step. End with a final line of the form ANSWER: <number>."
    ),
    tools=("calculator",),
    max_turns=10,
    token_budget=20000,
    tool_call_budget=12,
    max_output_tokens=512,
)
WORKLOADS = ("single-turn", "calculator")


def machine_line() -> str:
    """Python, CPUs and load average, for the header of every benchmark."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"python {sys.version.split()[0]} ({platform.machine()}), {os.cpu_count()} CPUs, "
        f"load average {load}"
    )


def filesystem(path: Path) -> str:
    """``<mount point> (<fs type>, <device>)`` of the filesystem holding ``path``."""
    path = path.resolve()
    best = ("?", "?", "?")
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                device, mount, kind = line.split()[:3]
                inside = path == Path(mount) or Path(mount) in path.parents
                if inside and len(mount) >= len(best[1]):
                    best = (device, mount, kind)
    except OSError:
        return "unknown filesystem"
    return f"{best[1]} ({best[2]}, {best[0]})"


def fs_probe(parent: Path, files: int = 200, dirs: int = 100) -> tuple[float, float]:
    """Microseconds per file creation (write + close) and per mkdir under ``parent``,
    measured now: on a shared disk, what other processes' fsyncs cost this run."""
    with tempfile.TemporaryDirectory(prefix="fs-probe-", dir=parent) as tmp:
        started = time.perf_counter()
        for i in range(files):
            with open(os.path.join(tmp, f"f{i}"), "wb") as handle:
                handle.write(b"x" * 512)
        created = time.perf_counter()
        for i in range(dirs):
            os.mkdir(os.path.join(tmp, f"d{i}"))
        done = time.perf_counter()
    return 1e6 * (created - started) / files, 1e6 * (done - created) / dirs


def fs_line(parent: Path) -> str:
    create, mkdir = fs_probe(parent)
    return (
        f"{parent} on {filesystem(parent)}; probe: {create:.0f} us per file created, "
        f"{mkdir:.0f} us per mkdir"
    )


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tree_bytes(root: Path) -> tuple[int, int]:
    """(total bytes, file count) of the regular files under ``root``."""
    total = files = 0
    for directory, _, names in os.walk(root):
        for name in names:
            total += os.stat(os.path.join(directory, name)).st_size
            files += 1
    return total, files


# The background writer of ``busy_disk``: a child process that writes 256 KiB blocks
# to one file and fsyncs after each (wrapping at 256 MiB) until its stdin closes, then
# prints the MiB it wrote, its wall and its CPU seconds. Each fsync commits the
# filesystem's journal, so the store's file creations and syncs queue behind it; its
# small blocks keep it waiting on the disk rather than copying (a neighbour's database
# or build, not a second CPU-bound process on a 2-core machine).
_WRITER = r"""
import os, sys, threading, time
path = sys.argv[1]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
block = os.urandom(256 << 10)
written = 0
started, cpu = time.perf_counter(), time.process_time()
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
try:
    while not stop.is_set():
        if written and written % 1024 == 0:
            os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, block)
        os.fsync(fd)
        written += 1
finally:
    os.close(fd)
    os.unlink(path)
wall = time.perf_counter() - started
print(f"{written / 4:.2f} {wall:.3f} {time.process_time() - cpu:.3f}", flush=True)
"""


@dataclass
class BusyDisk:
    """What the background writer did: MiB written and fsynced, over how long."""

    mib: float = 0.0
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def mib_per_s(self) -> float:
        return self.mib / self.seconds if self.seconds else 0.0

    @property
    def cpu_share(self) -> float:
        """The share of one CPU the writer used (its syscalls' kernel time included)."""
        return self.cpu_seconds / self.seconds if self.seconds else 0.0


@contextmanager
def busy_disk(directory: Path, *, enabled: bool = True) -> Iterator[BusyDisk]:
    """Keep the disk under ``directory`` busy while the block runs (when ``enabled``).

    A child process writes and fsyncs 256 KiB blocks into ``directory`` (the filesystem
    under test) without pause; it is stopped, and its file removed, when the block
    ends, even on an error. The yielded record is filled in after the block.
    """
    record = BusyDisk()
    if not enabled:
        yield record
        return
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(directory / "busy-writer.bin")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.5)  # let it reach a steady state before anything is timed
        yield record
    finally:
        out, _ = child.communicate(input="", timeout=60)
        mib, seconds, cpu = out.split()
        record.mib, record.seconds, record.cpu_seconds = float(mib), float(seconds), float(cpu)


@contextmanager
def work_dir(parent: Path | None, prefix: str, keep: bool = False) -> Iterator[Path]:
    """A fresh directory under ``parent`` (default: the current directory)."""
    base = Path.cwd() if parent is None else parent
    base.mkdir(parents=True, exist_ok=True)
    if keep:
        yield Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        return
    with tempfile.TemporaryDirectory(prefix=prefix, dir=base) as tmp:
        yield Path(tmp)


def single_turn_tasks(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``n`` one-operation arith-tools questions and their references."""
    tasks, references = [], []
    for i in range(n):
        a, b = 1000 + (i * 7919) % 9000, 1 + (i * 104729) % 997
        task_id = f"t{i:06d}"
        question = f"Start with {a}. Add {b}. What is the result?"
        tasks.append({"id": task_id, "input": {"question": question}, "attachments": []})
        references.append({"id": task_id, "answer": str(a + b)})
    return tasks, references


def calculator_tasks(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``n`` arith-tools tasks (1..6 operations; the built-in generator's, cycled
    with fresh ids beyond its 9,999)."""
    base_tasks, base_refs = generate_arith_tools(count=min(n, 9999))
    tasks, references = [], []
    for i in range(n):
        task, ref = base_tasks[i % len(base_tasks)], base_refs[i % len(base_refs)]
        task_id = f"arith-{i + 1:06d}"
        tasks.append({**task, "id": task_id})
        references.append({**ref, "id": task_id})
    return tasks, references


def make_suite(root: Path, workload: str, n: int) -> SuiteSource:
    """Build the ``workload`` suite of ``n`` tasks under ``root`` (setup, untimed)."""
    tasks, references = (single_turn_tasks if workload == "single-turn" else calculator_tasks)(n)
    return build_suite(root, name=workload, version="1", tasks=tasks, references=references)


def harness_of(workload: str) -> Harness:
    return SINGLE_TURN if workload == "single-turn" else CALCULATOR


def model_of(workload: str, *, latency_s: float = 0.0) -> SimulatedModel:
    """The simulated model: no mental slips, so single-turn answers are all correct."""
    return SimulatedModel(seed=SEED, latency_s=latency_s, mental_error_base=0.0)


def compile_specs(
    source: SuiteSource, harness: Harness, store: HarnessEvidenceStore, count: int | None = None
) -> tuple[SeededSample, TaskAssignment, list[AgentExecutionSpec]]:
    """The assignment and one task-bound spec per assigned task, as the app compiles them."""
    suite = source.suite
    sampling = SeededSample(count=count)
    assignment = record_assignment(suite, sampling, seed=SEED)
    specs = compile_replicate(
        harness,
        suite=suite,
        assignment=assignment,
        store=store,
        authorized_tools=harness.tools,
    )
    return sampling, assignment, specs


def run_specs(
    specs: list[AgentExecutionSpec],
    harness: Harness,
    model: SimulatedModel,
    *,
    durability: str,
    concurrency: int,
) -> list[Any]:
    runner = HarnessRunner(durability=durability)
    return asyncio.run(
        runner.run_many(
            specs,
            model=model,
            toolbox=Toolbox.default(),
            authorized_tools=frozenset(harness.tools),
            concurrency=concurrency,
        )
    )


@dataclass
class Stages:
    """Wall and CPU time per named stage, in order."""

    wall: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    profiler: cProfile.Profile | None = None
    profile_stage: str | None = None

    def time(self, name: str, action: Callable[[], Any]) -> Any:
        profiling = self.profiler is not None and self.profile_stage in (name, "all")
        if profiling:
            assert self.profiler is not None
            self.profiler.enable()
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return action()
        finally:
            self.wall[name] = time.perf_counter() - wall
            self.cpu[name] = time.process_time() - cpu
            if profiling:
                assert self.profiler is not None
                self.profiler.disable()


def print_profile(profiler: cProfile.Profile, limit: int = 25) -> None:
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(limit)
        print(f"## cProfile by {order}")
        print(out.getvalue())
