"""Pipeline benchmark: N tasks compiled, run, sealed, assembled, verified, evaluated.

The stages are the app's replicate pipeline (``xaytune/experiment/replicate.py``):

    compile    record_assignment + bind_task + HarnessCompiler.compile per task
    run        HarnessRunner.run_many (zero-latency simulated model), every attempt
               sealed durably (group commit) unless --durability none
    assemble   assemble_evidence: rebuild every fact from the store, then verify
    publish    publish_evidence: the in-toto statement, written durably
    evaluate   run_harness_evaluation (harness-outcome): load the published subject,
               re-verify it against suite and store, measure, write both reports

End to end is the sum of these five. ``verify`` (a standalone verify_run_evidence,
as an audit does) is timed after them and reported, but not counted: assembly and
evaluation already verify.

Workloads: ``single-turn`` (one-operation questions, one model turn, no tools,
every answer correct) and ``calculator`` (arith-tools, 1..6 operations, one
calculator call per operation: 2..7 model turns per task).

Prints one human table per (workload, N) and one machine-readable line::

    workload=single-turn tasks=1000 end_to_end_tasks_per_s=... cpu_ms_per_task=... ...

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/pipeline.py --tasks 1000
    PYTHONPATH=. python benchmarks/pipeline.py --tasks 100,1000,10000 --workload all
    PYTHONPATH=. python benchmarks/pipeline.py --tasks 1000 --profile run

Each (workload, N) runs in a fresh store under ``--dir`` (default: the current
directory); the filesystem used is printed.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import sys
import time
from pathlib import Path

import _common as common

from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.harness.evidence import (
    HarnessEvidenceStore,
    assemble_evidence,
    verify_run_evidence,
)

STAGES = ("compile", "run", "assemble", "publish", "evaluate")


def measure(
    root: Path,
    workload: str,
    n: int,
    *,
    durability: str,
    concurrency: int,
    profile: str | None,
) -> dict[str, float]:
    """Run the pipeline once on a fresh suite and store under ``root``."""
    source = common.make_suite(root / "suite", workload, n)
    harness = common.harness_of(workload)
    model = common.model_of(workload)
    store = HarnessEvidenceStore(root / "evidence", durability=durability)
    stages = common.Stages(profiler=cProfile.Profile() if profile else None, profile_stage=profile)
    gc.collect()
    sampling, assignment, specs = stages.time(
        "compile", lambda: common.compile_specs(source, harness, store)
    )
    runs = stages.time(
        "run",
        lambda: common.run_specs(
            specs, harness, model, durability=durability, concurrency=concurrency
        ),
    )
    evidence = stages.time(
        "assemble",
        lambda: assemble_evidence(specs, source.suite, sampling, assignment, source, store),
    )
    subject = stages.time("publish", lambda: publish_evidence(evidence, store))
    evaluator = HarnessOutcomeEvaluator(source)

    def evaluate():
        bound = bind_evaluation(
            evaluator,
            EvaluationSpec(
                evaluator=EvaluatorSpec(name="harness-outcome", config=outcome_config())
            ),
        )
        return run_harness_evaluation(
            evaluator,
            bound,
            subject,
            source=source,
            output_uri=str(root / "evaluation"),
            seed=common.SEED,
        )

    evaluation = stages.time("evaluate", evaluate)
    stages.time("verify", lambda: verify_run_evidence(evidence, source.suite, source, store))
    if stages.profiler is not None:
        common.print_profile(stages.profiler)

    attempts = [attempt for run in runs for attempt in run.attempts]
    if len(attempts) != n or any(a.status != "complete" for a in attempts):
        raise SystemExit(f"expected {n} complete attempts, got {len(attempts)}")
    success = evaluation.result.metric("task_success") if evaluation.result else None
    evidence_bytes, files = common.tree_bytes(root / "evidence")
    turns = sum(a.spend.turns for a in attempts) / n
    facts = {
        "end_to_end_s": sum(stages.wall[s] for s in STAGES),
        "cpu_s": sum(stages.cpu[s] for s in STAGES),
        "turns": turns,
        "task_success": float("nan") if success is None or success.value is None else success.value,
        "evidence_bytes_per_task": evidence_bytes / n,
        "files_per_task": files / n,
        "peak_rss_mib": common.peak_rss_mib(),
    }
    for name, seconds in stages.wall.items():
        facts[f"{name}_s"] = seconds
        facts[f"{name}_cpu_s"] = stages.cpu[name]
    return facts


def report(workload: str, n: int, facts: dict[str, float], best: dict[str, float]) -> None:
    print(
        f"## {workload}, {n} tasks ({facts['turns']:.2f} model turns/task, "
        f"task_success {facts['task_success']:.3f})"
    )
    print(f"{'stage':<10} {'wall s':>8} {'tasks/s':>10} {'cpu ms/task':>12}")
    for name in (*STAGES, "verify"):
        wall, cpu = facts[f"{name}_s"], facts[f"{name}_cpu_s"]
        note = "  (not in end to end)" if name == "verify" else ""
        print(f"{name:<10} {wall:>8.3f} {n / wall:>10.0f} {1000 * cpu / n:>12.3f}{note}")
    e2e, cpu = facts["end_to_end_s"], facts["cpu_s"]
    print(f"{'end2end':<10} {e2e:>8.3f} {n / e2e:>10.0f} {1000 * cpu / n:>12.3f}")
    print(
        f"evidence {facts['evidence_bytes_per_task']:.0f} bytes/task "
        f"({facts['files_per_task']:.1f} files/task), peak RSS {facts['peak_rss_mib']:.0f} MiB"
    )
    pairs = {
        "workload": workload,
        "tasks": n,
        "end_to_end_tasks_per_s": f"{n / e2e:.1f}",
        "end_to_end_best_tasks_per_s": f"{n / best['end_to_end_s']:.1f}",
        "cpu_ms_per_task": f"{1000 * cpu / n:.3f}",
        **{f"{name}_tasks_per_s": f"{n / facts[f'{name}_s']:.1f}" for name in (*STAGES, "verify")},
        "evidence_bytes_per_task": f"{facts['evidence_bytes_per_task']:.0f}",
        "peak_rss_mib": f"{facts['peak_rss_mib']:.0f}",
    }
    print(" ".join(f"{key}={value}" for key, value in pairs.items()), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="1000", help="comma-separated N (e.g. 100,1000,10000)")
    parser.add_argument("--workload", choices=(*common.WORKLOADS, "all"), default="single-turn")
    parser.add_argument("--durability", choices=("fsync", "none"), default="fsync")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=None, help="parent of the store (default: .)")
    parser.add_argument("--keep", action="store_true", help="keep the store afterwards")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per (workload, N); the median is reported"
    )
    parser.add_argument(
        "--profile", choices=(*STAGES, "verify", "all"), help="cProfile one stage (or all)"
    )
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.tasks.split(",") if size.strip()]
    if not sizes or any(size < 1 for size in sizes):
        parser.error("--tasks: every N must be >= 1")
    workloads = common.WORKLOADS if args.workload == "all" else (args.workload,)
    with common.work_dir(args.dir, "xaytune-pipeline-", keep=args.keep) as parent:
        print(f"# {common.machine_line()}")
        print(f"# store under {common.fs_line(parent)}")
        print(f"# durability={args.durability}, concurrency={args.concurrency}")
        for workload in workloads:
            for n in sizes:
                started = time.perf_counter()
                runs = [
                    measure(
                        parent / f"{workload}-{n}-{i}",
                        workload,
                        n,
                        durability=args.durability,
                        concurrency=args.concurrency,
                        profile=args.profile,
                    )
                    for i in range(args.repeat)
                ]
                runs.sort(key=lambda facts: facts["end_to_end_s"])
                if len(runs) > 1:
                    rates = ", ".join(f"{n / facts['end_to_end_s']:.0f}" for facts in runs)
                    print(f"# {len(runs)} runs, end-to-end tasks/s: {rates} (median shown)")
                report(workload, n, runs[len(runs) // 2], best=runs[0])
                print(f"# ({time.perf_counter() - started:.1f} s including suite setup)")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
