"""Verify benchmark: ``verify_run_evidence`` MB/s against raw sha256 MB/s, same bytes.

Runs ``--tasks`` tasks (default 5,000; single-turn, zero-latency simulated model),
assembles their evidence, then times ``verify_run_evidence`` (best of ``--repeat``)
over the store: per task it lists the task's directory and reads and checks each
attempt file (its spec line hashed, its record line compared with the record the
facts give, every event line hashed and chained, its seal line and end event parsed
and compared with the claim). The bytes are those files' sizes. Against the same
bytes it times:

    raw_sha256     sha256 of each file's bytes, already in memory (the issue's figure)
    read_sha256    open, read and sha256 each file from the page cache: the floor of
                   any verifier that reads one file per attempt, whatever its language

``--reply-bytes K`` pads every model reply with K bytes of text before its answer
line (a wrapper around the simulated model), for trajectories of a realistic size:
a real agent's replies and tool outputs run to kilobytes. The default runs three
sizes: the bare simulated run (3.6 KB per task), 69 KB and 266 KB per task.

Prints a human summary and one machine-readable line per size::

    tasks=5000 reply_bytes=0 verify_mb_s=... raw_sha256_mb_s=... ratio=... target_met=...

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/verify.py --dir /dev/shm
    PYTHONPATH=. python benchmarks/verify.py --reply-bytes 0,16384,65536,131072,262144
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
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
from xaytune.models._protocol import ModelIdentity, ModelReply, ModelRequest

TARGET = 0.5  # issue 4: verification >= 50% of raw sha256 MB/s

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


def _store_files(store: HarnessEvidenceStore) -> list[str]:
    """Every file verification reads: each attempt file under tasks/."""
    found = []
    for directory, _, names in os.walk(store.root / "tasks"):
        found.extend(os.path.join(directory, name) for name in sorted(names))
    return found


def _raw_sha256(blobs: list[bytes], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for blob in blobs:
            hashlib.sha256(blob).digest()
        best = min(best, time.perf_counter() - started)
    return best


def _read_sha256(paths: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for path in paths:
            with open(path, "rb") as handle:
                hashlib.sha256(handle.read()).digest()
        best = min(best, time.perf_counter() - started)
    return best


def measure(root: Path, n: int, pad: int, repeat: int, profile: bool) -> dict[str, float]:
    source = common.make_suite(root / "suite", "single-turn", n)
    store = HarnessEvidenceStore(root / "evidence")
    sampling, assignment, specs = common.compile_specs(source, common.SINGLE_TURN, store)
    model = PaddedModel(common.model_of("single-turn"), pad)
    common.run_specs(specs, common.SINGLE_TURN, model, durability="fsync", concurrency=50)
    evidence = assemble_evidence(specs, source.suite, sampling, assignment, source, store)
    del specs
    paths = _store_files(store)
    blobs = [Path(path).read_bytes() for path in paths]
    total = sum(len(blob) for blob in blobs)
    profiler = cProfile.Profile() if profile else None
    verify_s = float("inf")
    for _ in range(repeat):
        if profiler is not None:
            profiler.enable()
        started = time.perf_counter()
        verify_run_evidence(evidence, source.suite, source, store)
        verify_s = min(verify_s, time.perf_counter() - started)
        if profiler is not None:
            profiler.disable()
    if profiler is not None:
        common.print_profile(profiler)
    return {
        "bytes": total,
        "files": len(paths),
        "verify_s": verify_s,
        "raw_s": _raw_sha256(blobs, repeat),
        "read_s": _read_sha256(paths, repeat),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument(
        "--reply-bytes", default="0,65536,262144", help="comma-separated padding sizes"
    )
    parser.add_argument("--repeat", type=int, default=3, help="best of this many timings")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the store (default: .)")
    parser.add_argument("--profile", action="store_true", help="cProfile verify_run_evidence")
    args = parser.parse_args(argv)
    pads = [int(pad) for pad in args.reply_bytes.split(",") if pad.strip()]
    with common.work_dir(args.dir, "xaytune-verify-") as parent:
        print(f"# {common.machine_line()}")
        print(f"# store under {common.fs_line(parent)}")
        for pad in pads:
            m = measure(parent / f"pad{pad}", args.tasks, pad, args.repeat, args.profile)
            mb = m["bytes"] / 1e6
            verify, raw, read = mb / m["verify_s"], mb / m["raw_s"], mb / m["read_s"]
            print(
                f"## {args.tasks} tasks, replies padded by {pad} bytes: {mb:.1f} MB in "
                f"{m['files']} files ({m['bytes'] / args.tasks:.0f} bytes/task)"
            )
            print(f"verify_run_evidence {m['verify_s']:7.3f} s  {verify:8.1f} MB/s")
            print(f"raw sha256          {m['raw_s']:7.3f} s  {raw:8.1f} MB/s  (in memory)")
            print(f"read + sha256       {m['read_s']:7.3f} s  {read:8.1f} MB/s  (page cache)")
            met = verify / raw >= TARGET
            print(
                f"share of raw sha256: verify {verify / raw:.0%} (target {TARGET:.0%}: "
                f"{'met' if met else 'not met'}); read + sha256 alone {read / raw:.0%}, "
                f"the floor of any verifier that reads one file per attempt"
            )
            print(
                f"tasks={args.tasks} reply_bytes={pad} verify_mb_s={verify:.1f} "
                f"raw_sha256_mb_s={raw:.1f} read_sha256_mb_s={read:.1f} "
                f"ratio={verify / raw:.3f} read_ratio={verify / read:.3f} "
                f"floor_ratio={read / raw:.3f} target_met={met} "
                f"bytes_per_task={m['bytes'] / args.tasks:.0f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
