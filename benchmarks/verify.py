"""Verify benchmark: ``verify_run_evidence`` attempts/s against its floor, same files.

Runs ``--tasks`` tasks (default 5,000; single-turn, zero-latency simulated model),
assembles their evidence, then times, side by side in each of ``--repeat`` rounds
(medians reported):

    verify   verify_run_evidence over the store: per task it lists the task's
             directory and reads and checks each attempt file (its spec line hashed,
             its record line compared, every event line hashed and chained, its end
             event and seal line compared with the claimed attempt, its seal digest
             with the store's journal)
    floor    what any verifier must do at least, and nothing more: list each task
             directory (as verification must), open, read and sha256 each attempt
             file in it, no parsing
    raw      sha256 of each file's bytes already in memory (context only)

The target (issue 33; issue 22's was 50%): verify attempts/s >= 60% of the floor's, at the default
attempt size (the bare simulated run, ~3.6 KB) and at ~64 KB per attempt.
``--reply-bytes K`` pads every model reply with K bytes of text before its answer
line (a wrapper around the simulated model), for trajectories of a realistic size.

Prints a human summary and one machine-readable line per size::

    tasks=5000 reply_bytes=0 attempts=5000 bytes_per_attempt=... verify_attempts_s=...
    floor_attempts_s=... floor_ratio=... target_met=... verify_mb_s=... floor_mb_s=...
    raw_sha256_mb_s=... verify_cpu_us=... floor_cpu_us=... cpu_ratio=...

``floor_ratio`` (the target's figure) is of wall times; ``cpu_ratio`` is the same
ratio of CPU times (``time.process_time``, medians), which other jobs on a shared
machine disturb less.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/verify.py --dir /dev/shm
    PYTHONPATH=. python benchmarks/verify.py --reply-bytes 0,16384,65536,262144
    PYTHONPATH=. python benchmarks/verify.py --tasks 2000 --reply-bytes 0 --profile

The whole-tree audit (``python -m xaytune.verify``) is measured by
``benchmarks/audit.py``.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

import _common as common

from xaytune.harness.evidence import (
    HarnessEvidenceStore,
    assemble_evidence,
    verify_run_evidence,
)
from xaytune.models import SimulatedModel
from xaytune.models.protocol import ModelIdentity, ModelReply, ModelRequest

TARGET = 0.6  # issue 33 (issue 22: 0.5): verification >= 60% of the floor's attempts/s

_FILLER = (
    "Let me restate the problem, then work through each step carefully, checking the "
    "intermediate value after every operation before moving on to the next one. "
)


class PaddedModel:
    """The simulated model with ``pad`` bytes of reasoning text before each reply."""

    def __init__(self, inner: SimulatedModel, pad: int) -> None:
        self.inner = inner
        self.text = (_FILLER * (pad // len(_FILLER) + 1))[:pad]
        base = inner.identity
        self._identity = ModelIdentity(
            provider=base.provider,
            model=base.model,
            revision=base.revision,
            parameters={**base.parameters, "benchmark_padding": pad},
        )

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    async def complete(self, request: ModelRequest) -> ModelReply:
        reply = await self.inner.complete(request)
        if not self.text:
            return reply
        return replace(reply, text=self.text + "\n" + (reply.text or ""))


def floor(tasks_dir: str) -> int:
    """The floor of any verifier: list each task directory, then open, read and
    sha256 each attempt file in it; returns the files read."""
    files = 0
    for name in sorted(os.listdir(tasks_dir)):
        directory = os.path.join(tasks_dir, name)
        for file in sorted(os.listdir(directory)):
            with open(os.path.join(directory, file), "rb") as handle:
                hashlib.sha256(handle.read()).digest()
            files += 1
    return files


def _timed(action, cpu: list[float]) -> float:
    """Wall seconds of ``action()``; its CPU seconds (``time.process_time``: what a
    busy machine's other jobs do not add) appended to ``cpu``."""
    started, cpu_started = time.perf_counter(), time.process_time()
    action()
    cpu.append(time.process_time() - cpu_started)
    return time.perf_counter() - started


def measure(root: Path, n: int, pad: int, repeat: int, profile: bool) -> dict[str, float]:
    source = common.make_suite(root / "suite", "single-turn", n)
    store = HarnessEvidenceStore(root / "evidence")
    sampling, assignment, specs = common.compile_specs(source, common.SINGLE_TURN, store)
    model = PaddedModel(common.model_of("single-turn"), pad)
    common.run_specs(specs, common.SINGLE_TURN, model, durability="fsync", concurrency=50)
    evidence = assemble_evidence(specs, source.suite, sampling, assignment, source, store)
    del specs
    tasks_dir = str(store.root / "tasks")
    attempts = floor(tasks_dir)  # also warms the page cache
    blobs = [
        Path(directory, name).read_bytes()
        for directory, _, names in os.walk(tasks_dir)
        for name in names
    ]

    def verify() -> None:
        verify_run_evidence(evidence, source.suite, source, store)

    def raw() -> None:
        for blob in blobs:
            hashlib.sha256(blob).digest()

    verify()  # once untimed, as the floor was
    rounds: dict[str, list[float]] = {"verify": [], "floor": [], "raw": []}
    cpu: dict[str, list[float]] = {name: [] for name in rounds}
    for _ in range(repeat):  # side by side, so a busy moment hits all three
        rounds["verify"].append(_timed(verify, cpu["verify"]))
        rounds["floor"].append(_timed(lambda: floor(tasks_dir), cpu["floor"]))
        rounds["raw"].append(_timed(raw, cpu["raw"]))
    if profile:  # one more, untimed
        profiler = cProfile.Profile()
        profiler.enable()
        verify()
        profiler.disable()
        common.print_profile(profiler)
    return {
        "attempts": attempts,
        "bytes": sum(len(blob) for blob in blobs),
        **{f"{name}_s": statistics.median(times) for name, times in rounds.items()},
        **{f"{name}_cpu_s": statistics.median(times) for name, times in cpu.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--reply-bytes", default="0,65536", help="comma-separated padding sizes")
    parser.add_argument("--repeat", type=int, default=3, help="median of this many rounds")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the store (default: .)")
    parser.add_argument("--profile", action="store_true", help="cProfile one more verification")
    args = parser.parse_args(argv)
    pads = [int(pad) for pad in args.reply_bytes.split(",") if pad.strip()]
    with common.work_dir(args.dir, "xaytune-verify-") as parent:
        print(f"# {common.machine_line()}")
        print(f"# store under {common.fs_line(parent)}")
        print(f"# medians of {args.repeat} rounds; each round times verify, floor, raw in turn")
        for pad in pads:
            m = measure(parent / f"pad{pad}", args.tasks, pad, args.repeat, args.profile)
            attempts, mb = m["attempts"], m["bytes"] / 1e6
            per_attempt = m["bytes"] / attempts
            verify, floor_rate = attempts / m["verify_s"], attempts / m["floor_s"]
            ratio = verify / floor_rate
            met = ratio >= TARGET
            print(
                f"## {args.tasks} tasks, replies padded by {pad} bytes: {attempts} attempt "
                f"files, {mb:.1f} MB ({per_attempt:.0f} bytes/attempt)"
            )
            for label, key in (
                ("verify_run_evidence", "verify_s"),
                ("floor: list+read+sha256", "floor_s"),
                ("raw sha256 (in memory)", "raw_s"),
            ):
                seconds = m[key]
                print(
                    f"{label:24s} {seconds:7.3f} s  {attempts / seconds:9.0f} attempts/s  "
                    f"{mb / seconds:8.1f} MB/s  {1e6 * seconds / attempts:6.1f} us/attempt"
                )
            print(
                f"verify / floor: {ratio:.2f} of the floor's attempts/s "
                f"(target {TARGET:.0%}: {'met' if met else 'not met'})"
            )
            print(
                f"tasks={args.tasks} reply_bytes={pad} attempts={attempts} "
                f"bytes_per_attempt={per_attempt:.0f} verify_attempts_s={verify:.0f} "
                f"floor_attempts_s={floor_rate:.0f} floor_ratio={ratio:.3f} target_met={met} "
                f"verify_mb_s={mb / m['verify_s']:.1f} floor_mb_s={mb / m['floor_s']:.1f} "
                f"raw_sha256_mb_s={mb / m['raw_s']:.1f} "
                f"verify_cpu_us={1e6 * m['verify_cpu_s'] / attempts:.1f} "
                f"floor_cpu_us={1e6 * m['floor_cpu_s'] / attempts:.1f} "
                f"cpu_ratio={m['floor_cpu_s'] / m['verify_cpu_s']:.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
