"""Child process of test_sigkill: runs many tasks durably until it is killed.

Usage: ``python tests/harness/_sigkill_child.py <dir> [tasks]``. Builds an arith-tools
suite under ``<dir>/suite``, then runs ``tasks`` calculator tasks (default 240)
through ``run_many`` (SimulatedModel latency 0.05 s, concurrency 8, durability fsync)
into the store ``<dir>/store``. Prints ``started`` after the first attempt is sealed
and ``finished`` if it is never killed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from _fixtures_run import Bench, make_source

from xaytune.harness import Harness, HarnessRunner, Toolbox
from xaytune.models import SimulatedModel

HARNESS = Harness(
    name="calc",
    system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)


def main(root: Path, count: int) -> None:
    bench = Bench(make_source(root / "suite", count=count), root / "store", count=count)
    specs = bench.specs(HARNESS)
    started = False

    def progress(attempt) -> None:
        nonlocal started
        if not started:
            started = True
            print("started", flush=True)

    asyncio.run(
        HarnessRunner(durability="fsync").run_many(
            specs,
            model=SimulatedModel(seed=101, latency_s=0.05),
            toolbox=Toolbox.default(),
            authorized_tools=frozenset({"calculator"}),
            concurrency=8,
            progress=progress,
        )
    )
    print("finished", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 240)
