"""Compare benchmark: ``compare`` over 2 candidates x 10 seeds x 10,000 tasks.

Running 200,000 tasks only to feed ``compare`` would time the pipeline (see
``pipeline.py``), so the replicates are built the way the app builds them from
evaluations, from synthetic per-task measurements: for each (candidate, seed) the
outcome evaluator's columns (task_success 0/1 at a candidate's success rate, and
its token, turn and time metrics), their run results and successful-tasks slices
(``run_result``, ``slice_result``), an ``EvaluationResult``, and the per-task
observations of the objectives (``Column.observations``) in a ``ReplicateRuns``.

Timed separately: building the 20 replicates (``inputs``), ``summarize`` of both
candidates, and ``compare`` (the objectives of conf/comparison/default.yaml:
task_success maximize 0.05, total_tokens minimize 50), whose task-level view,
pass^k, Wilson intervals and task changes read every per-task observation.

Prints a human summary and one machine-readable line::

    tasks=10000 seeds=10 compare_s=... summarize_s=... inputs_s=... relation=...

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/compare.py
    PYTHONPATH=. python benchmarks/compare.py --tasks 10000 --seeds 10 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import time

import _common as common
import numpy as np

from xaytune.core.domain.measurement import EvaluationResult
from xaytune.core.harness_comparison import (
    CandidateRuns,
    ComparisonSpec,
    ObjectiveMetric,
    ReplicateRuns,
    compare,
    summarize,
)
from xaytune.evaluation.metrics import CATALOG_ID, Column, run_result, slice_result

SUITE_DIGEST = "sha256:" + "5" * 64
SPEC = ComparisonSpec(
    objectives=(
        ObjectiveMetric(metric="task_success", direction="maximize", min_effect=0.05),
        ObjectiveMetric(metric="total_tokens", direction="minimize", min_effect=50),
    ),
    k=2.0,
)
OBSERVED = ("task_success", "total_tokens")


class _Suite:
    name = "synthetic"
    digest = SUITE_DIGEST


def _replicate(
    candidate: int, seed: int, task_ids: tuple[str, ...], success_rate: float, tokens: float
) -> ReplicateRuns:
    """One replicate as the app records it: an evaluation result plus observations."""
    n = len(task_ids)
    rng = np.random.default_rng([candidate, seed])
    present = [0] * n
    columns = [
        Column.build("task_success", (rng.random(n) < success_rate).astype(float).tolist(), present)
    ]
    inputs = rng.integers(40, 200, n).astype(float)
    outputs = rng.integers(10, 2 * int(tokens), n).astype(float)
    for key, values in (
        ("input_tokens", inputs),
        ("output_tokens", outputs),
        ("total_tokens", inputs + outputs),
        ("turns", rng.integers(1, 7, n).astype(float)),
        ("tool_calls", rng.integers(0, 6, n).astype(float)),
        ("model_time", rng.random(n) * 1e-4),
    ):
        columns.append(Column.build(key, values.tolist(), present))
    by_key = {column.metric: column for column in columns}
    results = [run_result(column) for column in columns]
    results += [slice_result(column, by_key["task_success"]) for column in columns[1:]]
    assignment = f"sha256:{seed:064d}"
    evaluation = EvaluationResult(
        evaluator="harness-outcome",
        evaluator_fingerprint="sha256:" + "e" * 64,
        determinism="DETERMINISTIC",
        catalog=CATALOG_ID,
        subject_digest=f"sha256:{candidate}{seed:063d}",
        suite_digest=SUITE_DIGEST,
        assignment_digest=assignment,
        seed=seed,
        metrics=tuple(results),
    )
    return ReplicateRuns(
        seed=seed,
        suite_digest=SUITE_DIGEST,
        assignment_digest=assignment,
        evaluations=(evaluation,),
        facets={"model": {"provider": "xaytune-sim"}, "runtime": "xaytune-local/v1"},
        timing_environment="benchmark",
        task_observations={key: by_key[key].observations(task_ids) for key in OBSERVED},
    )


def build(tasks: int, seeds: int) -> tuple[CandidateRuns, CandidateRuns]:
    task_ids = tuple(f"t{i:06d}" for i in range(tasks))
    sides = []
    for candidate, (name, rate, tokens) in enumerate((("a", 0.82, 60), ("b", 0.74, 90))):
        replicates = tuple(
            _replicate(candidate, 101 + s, task_ids, rate, tokens) for s in range(seeds)
        )
        sides.append(
            CandidateRuns(
                name=name,
                harness_fingerprint=f"sha256:{candidate:064d}",
                harness_config={"name": name, "max_turns": 8 + candidate},
                replicates=replicates,
            )
        )
    return sides[0], sides[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="cProfile compare()")
    args = parser.parse_args(argv)
    print(f"# {common.machine_line()}")
    print(f"# 2 candidates x {args.seeds} seeds x {args.tasks} tasks")

    started = time.perf_counter()
    a, b = build(args.tasks, args.seeds)
    inputs_s = time.perf_counter() - started

    started = time.perf_counter()
    summarize(a), summarize(b)
    summarize_s = time.perf_counter() - started

    profiler = cProfile.Profile() if args.profile else None
    started, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    report = compare(a, b, SPEC, _Suite())
    if profiler is not None:
        profiler.disable()
    compare_s, compare_cpu = time.perf_counter() - started, time.process_time() - cpu

    observations = 2 * args.seeds * args.tasks * len(OBSERVED)
    print(f"inputs     {inputs_s:8.3f} s  (20 ReplicateRuns, {observations:,} task observations)")
    print(f"summarize  {summarize_s:8.3f} s  (both candidates)")
    print(
        f"compare    {compare_s:8.3f} s  ({compare_cpu:.3f} s CPU; relation {report.relation}, "
        f"{len(report.metrics)} metrics)"
    )
    print(f"peak RSS {common.peak_rss_mib():.0f} MiB")
    print(
        f"tasks={args.tasks} seeds={args.seeds} compare_s={compare_s:.3f} "
        f"summarize_s={summarize_s:.3f} inputs_s={inputs_s:.3f} relation={report.relation} "
        f"peak_rss_mib={common.peak_rss_mib():.0f}",
        flush=True,
    )
    if profiler is not None:
        common.print_profile(profiler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
