"""Scale benchmark: peak RSS and cost per task of assemble + evaluate up to 100,000 tasks.

For each N (default 1,000, 10,000 and 100,000) a single-turn suite of N tasks is
built and run (``run_many``, zero-latency simulated model) in one process; then a
*fresh* process does what the app does after the run, and only that is measured:

    compile    the N task-bound specs again (assemble_evidence takes them)
    assemble   assemble_evidence (rebuild from the store, verify)
    publish    publish_evidence
    evaluate   run_harness_evaluation (load, re-verify, measure, write reports)

Its peak RSS (``ru_maxrss`` of that process) is the figure for the target; the run
phase's own peak RSS is printed too. Each N prints one machine-readable line::

    tasks=100000 peak_rss_mib=... assemble_ms_per_task=... evaluate_ms_per_task=...

Usage (from the repository root; 100,000 tasks take several minutes)::

    PYTHONPATH=. python benchmarks/scale.py
    PYTHONPATH=. python benchmarks/scale.py --tasks 1000,10000 --dir /dev/shm
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import _common as common

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.harness.evidence import HarnessEvidenceStore, assemble_evidence

PHASES = ("compile", "assemble", "publish", "evaluate")


def run_phase(root: Path, n: int, durability: str, concurrency: int) -> dict[str, float]:
    """Build the suite and run every task; the store is left under ``root``."""
    source = common.make_suite(root / "suite", "single-turn", n)
    store = HarnessEvidenceStore(root / "evidence", durability=durability)
    _, _, specs = common.compile_specs(source, common.SINGLE_TURN, store)
    started = time.perf_counter()
    runs = common.run_specs(
        specs,
        common.SINGLE_TURN,
        common.model_of("single-turn"),
        durability=durability,
        concurrency=concurrency,
    )
    wall = time.perf_counter() - started
    if sum(len(run.attempts) for run in runs) != n:
        raise SystemExit("a task did not run exactly once")
    return {"run_s": wall, "run_peak_rss_mib": common.peak_rss_mib()}


def evaluate_phase(root: Path, durability: str) -> dict[str, float]:
    """Compile, assemble, publish, evaluate a store that has been run (fresh process)."""
    source = SuiteSource(root / "suite")
    store = HarnessEvidenceStore(root / "evidence", durability=durability)
    stages = common.Stages()
    sampling, assignment, specs = stages.time(
        "compile", lambda: common.compile_specs(source, common.SINGLE_TURN, store)
    )
    evidence = stages.time(
        "assemble",
        lambda: assemble_evidence(specs, source.suite, sampling, assignment, source, store),
    )
    # The app (xaytune/experiment/replicate.py) holds the specs and the assembled evidence
    # until the evaluation is written: so does this.
    subject = stages.time("publish", lambda: publish_evidence(evidence, store))
    evaluator = HarnessOutcomeEvaluator(source)
    bound = bind_evaluation(
        evaluator,
        EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=outcome_config())),
    )
    evaluation = stages.time(
        "evaluate",
        lambda: run_harness_evaluation(
            evaluator,
            bound,
            subject,
            source=source,
            output_uri=str(root / "evaluation"),
            seed=common.SEED,
        ),
    )
    assert evaluation.result is not None
    facts: dict[str, float] = {"peak_rss_mib": common.peak_rss_mib()}
    for name in PHASES:
        facts[f"{name}_s"] = stages.wall[name]
        facts[f"{name}_cpu_s"] = stages.cpu[name]
    return facts


def _child(phase: str, root: Path, n: int, durability: str, concurrency: int) -> dict[str, float]:
    """Run one phase in a fresh interpreter; return its facts."""
    command = [
        sys.executable,
        __file__,
        "--phase",
        phase,
        "--root",
        str(root),
        "--tasks",
        str(n),
        "--durability",
        durability,
        "--concurrency",
        str(concurrency),
    ]
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=os.environ)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="1000,10000,100000")
    parser.add_argument("--durability", choices=("fsync", "none"), default="fsync")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=None, help="parent of the stores (default: .)")
    parser.add_argument("--phase", choices=("run", "evaluate"), help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase is not None:  # a child: one phase, facts as JSON on the last line
        if args.phase == "run":
            facts = run_phase(args.root, int(args.tasks), args.durability, args.concurrency)
        else:
            facts = evaluate_phase(args.root, args.durability)
        print(json.dumps(facts))
        return 0

    sizes = [int(size) for size in args.tasks.split(",") if size.strip()]
    with common.work_dir(args.dir, "xaytune-scale-") as parent:
        print(f"# {common.machine_line()}")
        print(f"# stores under {common.fs_line(parent)}")
        print(f"# durability={args.durability}")
        print(
            f"{'tasks':>8} {'run s':>8} {'compile':>8} {'assemble':>9} {'publish':>8} "
            f"{'evaluate':>9}   (ms/task)  {'peak RSS':>9}"
        )
        for n in sizes:
            root = parent / f"n{n}"
            ran = _child("run", root, n, args.durability, args.concurrency)
            facts = _child("evaluate", root, n, args.durability, args.concurrency)
            per_task = {name: 1000 * facts[f"{name}_s"] / n for name in PHASES}
            print(
                f"{n:>8} {ran['run_s']:>8.1f} {per_task['compile']:>8.3f} "
                f"{per_task['assemble']:>9.3f} {per_task['publish']:>8.3f} "
                f"{per_task['evaluate']:>9.3f}              {facts['peak_rss_mib']:>6.0f} MiB"
                f"  (run phase {ran['run_peak_rss_mib']:.0f} MiB)"
            )
            pairs = {
                "tasks": n,
                "peak_rss_mib": f"{facts['peak_rss_mib']:.0f}",
                **{f"{name}_ms_per_task": f"{per_task[name]:.4f}" for name in PHASES},
                "run_s": f"{ran['run_s']:.1f}",
                "run_peak_rss_mib": f"{ran['run_peak_rss_mib']:.0f}",
            }
            print(" ".join(f"{key}={value}" for key, value in pairs.items()), flush=True)
            subprocess.run(["rm", "-rf", str(root)], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
