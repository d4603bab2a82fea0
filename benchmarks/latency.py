"""Latency benchmark: how close ``run_many`` gets to ideal concurrency.

Runs ``--tasks`` arith-tools tasks (default 1,000) through ``HarnessRunner.run_many``
with a simulated model that sleeps ``--latency`` seconds per call (default 0.1 s),
a single-turn harness (no tools, the instructions ask for ``ANSWER:``), and the
store's durability on (``fsync``, the default), in a fresh directory under
``--dir`` (default: the current directory; the filesystem is printed).

For each concurrency ``c`` the ideal wall time is ``tasks * turns * latency / c``
(``turns`` is the mean turns per task, measured from the sealed spend), and the
efficiency is ``ideal / actual``. Each concurrency prints one human line and one
machine-readable line::

    disk=<quiet|busy> concurrency=<c> tasks_per_s=<x> efficiency=<ideal/actual>

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/latency.py
    PYTHONPATH=. python benchmarks/latency.py --tasks 1000 --concurrency 10,50,200
    PYTHONPATH=. python benchmarks/latency.py --disk busy     # beside a background writer
    PYTHONPATH=. python benchmarks/latency.py --profile 200   # cProfile one run

``--disk`` (default ``quiet,busy``) runs each level twice: on the disk as it is, and
beside a background writer the script starts and stops itself (a child process
appending and fsyncing 1 MiB blocks in the store's directory without pause, as a
neighbour's build or database would): the store's own fsyncs then wait for the
writer's data, and its file creations for the journal. The writer's MiB/s is printed.

This is a plain script, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import time
from pathlib import Path

import _common as common

from xaytune.core.domain.benchmark import SeededSample, record_assignment
from xaytune.core.harness_evaluation import bind_task
from xaytune.harness import (
    AgentExecutionSpec,
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
    HarnessRunner,
    Toolbox,
    TrajectoryRecordingSpec,
)
from xaytune.harness.evidence import HarnessEvidenceStore
from xaytune.harness.evidence.trajectory import WRITER
from xaytune.models import SimulatedModel
from xaytune.suites import build_suite
from xaytune.suites.arith_generator import generate_arith_tools

SEED = 101
HARNESS = Harness(
    name="single-turn",
    system_prompt=(
        "Solve the arithmetic problem in your head. End with one line of the form ANSWER: <number>."
    ),
    max_turns=1,
)


def _compile(suite, tasks: int, store: HarnessEvidenceStore) -> list[AgentExecutionSpec]:
    compiler = HarnessCompiler()
    assignment = record_assignment(suite, SeededSample(count=tasks), seed=SEED)
    specs = []
    for task_id in assignment.task_ids:
        task, binding = bind_task(suite, assignment, task_id)
        specs.append(
            compiler.compile(
                HARNESS,
                HarnessCompilationContext(
                    task=task,
                    seed=SEED,
                    replicate=0,
                    authorized_tools=frozenset(),
                    content=HarnessContent(),
                    output_uri=str(store.task_output(binding.position)),
                    trajectory=TrajectoryRecordingSpec(writer=WRITER),
                    task_binding=binding,
                    suite=suite,
                ),
            )
        )
    return specs


def run_once(
    suite,
    root: Path,
    *,
    tasks: int,
    concurrency: int,
    latency: float,
    durability: str,
    profiler: cProfile.Profile | None = None,
) -> dict[str, float]:
    """Compile and run ``tasks`` specs at ``concurrency``; return the measurements.

    Only ``run_many`` is timed (and profiled, with ``profiler``); compiling is not.
    """
    store = HarnessEvidenceStore(root)
    started = time.perf_counter()
    specs = _compile(suite, tasks, store)
    compile_s = time.perf_counter() - started
    runner = HarnessRunner(durability=durability)
    model = SimulatedModel(seed=SEED, latency_s=latency)
    if profiler is not None:
        profiler.enable()
    started = time.perf_counter()
    runs = asyncio.run(
        runner.run_many(
            specs,
            model=model,
            toolbox=Toolbox.default(),
            authorized_tools=frozenset(),
            concurrency=concurrency,
        )
    )
    wall = time.perf_counter() - started
    if profiler is not None:
        profiler.disable()
    attempts = [attempt for run in runs for attempt in run.attempts]
    incomplete = [a for a in attempts if a.status != "complete"]
    if len(attempts) != tasks or incomplete:
        raise SystemExit(f"expected {tasks} complete attempts, got {len(attempts)} / {incomplete}")
    turns = sum(a.spend.turns for a in attempts) / tasks
    ideal = tasks * turns * latency / concurrency
    return {
        "compile_s": compile_s,
        "wall_s": wall,
        "turns": turns,
        "ideal_s": ideal,
        "tasks_per_s": tasks / wall,
        "efficiency": ideal / wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--concurrency", default="10,50,200", help="comma-separated levels")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per model call")
    parser.add_argument("--durability", choices=("fsync", "none"), default="fsync")
    parser.add_argument(
        "--disk", default="quiet,busy", help="quiet, busy or both: without / beside a writer"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per level (median reported)")
    parser.add_argument(
        "--dir", type=Path, default=None, help="parent of the store (default: the current dir)"
    )
    parser.add_argument(
        "--profile", type=int, metavar="C", help="also cProfile one run at concurrency C"
    )
    args = parser.parse_args(argv)
    levels = [int(level) for level in args.concurrency.split(",") if level.strip()]
    if args.tasks < 1 or any(level < 1 for level in levels):
        parser.error("--tasks and every concurrency must be >= 1")
    disks = [disk.strip() for disk in args.disk.split(",") if disk.strip()]
    if not disks or any(disk not in ("quiet", "busy") for disk in disks):
        parser.error("--disk takes quiet, busy or quiet,busy")

    with common.work_dir(args.dir, "xaytune-latency-") as root:
        tasks, references = generate_arith_tools(count=max(args.tasks, 1))
        suite = build_suite(
            root / "suite", name="arith-tools", version="1", tasks=tasks, references=references
        ).suite
        print(f"# {common.machine_line()}")
        print(f"# store under {common.fs_line(root)}")
        print(
            f"# {args.tasks} tasks, {args.latency * 1000:.0f} ms per model call, "
            f"durability={args.durability}, {args.repeat} run(s) per level (median reported)"
        )
        for disk in disks:
            for level in levels:
                runs = []
                for i in range(args.repeat):
                    with common.busy_disk(root, enabled=disk == "busy") as writer:
                        m = run_once(
                            suite,
                            root / f"{disk}-c{level}-{i}",
                            tasks=args.tasks,
                            concurrency=level,
                            latency=args.latency,
                            durability=args.durability,
                        )
                    m["writer_mib_s"] = writer.mib_per_s
                    runs.append(m)
                    beside = f", writer {writer.mib_per_s:.0f} MiB/s" if disk == "busy" else ""
                    print(
                        f"{disk} disk, concurrency {level:>4}: {m['wall_s']:.2f} s wall vs "
                        f"{m['ideal_s']:.2f} s ideal ({m['turns']:.2f} turns/task), "
                        f"{m['tasks_per_s']:.1f} tasks/s, efficiency {m['efficiency']:.3f} "
                        f"(compile {m['compile_s']:.2f} s, untimed{beside})"
                    )
                runs.sort(key=lambda run: run["efficiency"])
                m = runs[len(runs) // 2]
                print(
                    f"disk={disk} concurrency={level} tasks_per_s={m['tasks_per_s']:.1f} "
                    f"efficiency={m['efficiency']:.3f} writer_mib_s={m['writer_mib_s']:.0f}",
                    flush=True,
                )
        if args.profile:
            profiler = cProfile.Profile()
            m = run_once(
                suite,
                root / "profile",
                tasks=args.tasks,
                concurrency=args.profile,
                latency=args.latency,
                durability=args.durability,
                profiler=profiler,
            )
            print(
                f"# cProfile of run_many at concurrency {args.profile}: {m['wall_s']:.2f} s "
                f"wall under the profiler (ideal {m['ideal_s']:.2f} s)"
            )
            for order in ("tottime", "cumulative"):
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(30)
                print(f"## by {order}")
                print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
