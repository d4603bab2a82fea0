"""Several identical challengers, and planning at R = 3, through the library's own code.

Simulated replicates are decided by ``compare()`` (the spec's rule, as a run decides
them) and summarised by ``xaytune.experiment.summary.family_rate`` (what summary.json,
summary.md, report.html and the terminal state). Data are generated vectorised, from
generators seeded by sha256 of a recorded key (no unseeded randomness):

- each run (one candidate, one seed): task_success = Binomial(20, 0.7)/20 (20 tasks,
  the app's default sampling) and total_tokens = Normal(1000, 50²); objectives as
  conf/comparison/default.yaml (task_success ≥ 0.05, total_tokens ≥ 50, k = 2).

Cells (key=value, each rate with its Monte Carlo standard error):

1. ``family``: m = 2, 3, 5 identical challengers sharing one identical baseline at
   R = 3 and 5. ``measured`` = the share of trials in which at least one challenger's
   relation is not inconclusive (compare() on every challenger); ``disclosed`` = the
   mean of the summary's family-wise figure over every ``--disclose-every``-th trial
   (each computed from that trial's own reports, as a run would), and its range.
   Target: |disclosed − measured| ≤ 2 points.
2. ``planning``: R = 3 (and 4, 5), one objective total_tokens (normal, true σ of the
   per-seed difference 50·√2). For every report: is the stated "80% power at ≥ X"
   really ≥ 80% power at X (exact power at the TRUE σ,
   ``_comparison_power.rule_power``)? Is the stated replicate count enough for 80% at
   2·min_effect? Target: ≥ 75% of reports at R = 3 (issue 30: 35% before).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/iteration.py --trials 2000
    PYTHONPATH=. python benchmarks/iteration.py --trials 500 --only planning
"""

from __future__ import annotations

import argparse
import hashlib
import math
import time
from types import SimpleNamespace

import numpy as np

from xaytune.comparison.power import rule_power
from xaytune.core.domain.measurement import EvaluationResult, MetricResult
from xaytune.core.harness_comparison import (
    CandidateRuns,
    ComparisonSpec,
    ObjectiveMetric,
    ReplicateRuns,
    compare,
)
from xaytune.experiment.summary import family_rate

N_TASKS, SUCCESS, TOKENS, TOKENS_SD, K = 20, 0.7, 1000.0, 50.0, 2.0
SUITE = SimpleNamespace(name="bench", digest="sha256:" + "b" * 64)
SPEC = ComparisonSpec(
    objectives=(
        ObjectiveMetric(metric="task_success", direction="maximize", min_effect=0.05),
        ObjectiveMetric(metric="total_tokens", direction="minimize", min_effect=50.0),
    ),
    k=K,
)
TOKENS_ONLY = ComparisonSpec(
    objectives=(ObjectiveMetric(metric="total_tokens", direction="minimize", min_effect=50.0),),
    k=K,
)
UNITS = {"task_success": ("proportion", True), "total_tokens": ("tokens", False)}


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def _se(rate: float, n: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 1e-12) / n)


def _candidate(name: str, values: dict[str, np.ndarray], seeds: range) -> CandidateRuns:
    """A candidate whose metric ``m`` is ``values[m][i]`` on seed ``seeds[i]``."""
    replicates = []
    for i, seed in enumerate(seeds):
        common = {
            "subject_digest": f"sha256:{name}-{seed}",
            "suite_digest": SUITE.digest,
            "assignment_digest": f"sha256:assignment-{seed}",
            "seed": seed,
        }
        metrics = tuple(
            MetricResult(
                metric=metric,
                unit=UNITS[metric][0],
                reference_derived=UNITS[metric][1],
                slice="all-tasks",
                n_tasks=N_TASKS,
                value=float(column[i]),
                absent_reasons={},
            )
            for metric, column in values.items()
        )
        evaluation = EvaluationResult(
            evaluator="harness-outcome",
            evaluator_fingerprint="sha256:outcome-v1",
            determinism="DETERMINISTIC",
            metrics=metrics,
            **common,
        )
        replicates.append(
            ReplicateRuns(
                seed=seed,
                suite_digest=SUITE.digest,
                assignment_digest=common["assignment_digest"],
                evaluations=(evaluation,),
                facets={"model": {"id": "sim", "temperature": 0.0}},
                timing_environment="bench",
            )
        )
    return CandidateRuns(
        name=name,
        harness_fingerprint=f"sha256:harness-{name}",
        harness_config={"name": name},
        replicates=tuple(replicates),
    )


def family(trials: int, every: int) -> None:
    for r in (3, 5):
        for m in (2, 3, 5):
            rng = _rng(f"iteration/family/R={r}/m={m}")
            seeds = range(1, r + 1)
            successes = rng.binomial(N_TASKS, SUCCESS, (trials, 1 + m, r)) / N_TASKS
            tokens = rng.normal(TOKENS, TOKENS_SD, (trials, 1 + m, r))
            started = time.perf_counter()
            named, disclosed = 0, []
            for t in range(trials):
                runs = [
                    _candidate(
                        f"c{j}",
                        {"task_success": successes[t, j], "total_tokens": tokens[t, j]},
                        seeds,
                    )
                    for j in range(1 + m)
                ]
                reports = [
                    (f"c{j}", compare(runs[0], runs[j], SPEC, SUITE).released())
                    for j in range(1, 1 + m)
                ]
                named += any(report.relation != "inconclusive" for _, report in reports)
                if t % every == 0:
                    disclosed.append(family_rate(reports).any_objective)
            measured = named / trials
            mean_disclosed = float(np.mean(disclosed))
            print(
                f"cell=family R={r} challengers={m} trials={trials} "
                f"measured={measured:.4f} measured_se={_se(measured, trials):.4f} "
                f"disclosed={mean_disclosed:.4f} "
                f"disclosed_se={float(np.std(disclosed, ddof=1)) / math.sqrt(len(disclosed)):.4f} "
                f"disclosed_min={min(disclosed):.4f} disclosed_max={max(disclosed):.4f} "
                f"disclosures={len(disclosed)} "
                f"gap_points={100 * (mean_disclosed - measured):+.2f} "
                f"seconds={time.perf_counter() - started:.1f}",
                flush=True,
            )


def planning(trials: int) -> None:
    sigma = TOKENS_SD * math.sqrt(2.0)  # sd of the per-seed difference of two runs
    min_effect = 50.0
    for r in (3, 4, 5):
        rng = _rng(f"iteration/planning/R={r}")
        seeds = range(1, r + 1)
        tokens = rng.normal(TOKENS, TOKENS_SD, (trials, 2, r))
        held = enough = rough = 0
        started = time.perf_counter()
        for t in range(trials):
            a = _candidate("a", {"total_tokens": tokens[t, 0]}, seeds)
            b = _candidate("b", {"total_tokens": tokens[t, 1]}, seeds)
            power = compare(a, b, TOKENS_ONLY, SUITE).metrics["total_tokens"].descriptive.power
            rough += power.rough
            stated = power.difference_for_power
            held += rule_power(stated, sigma, r, K, min_effect) >= 0.8 - 1e-9
            needed = power.replicates_for_power
            enough += (
                needed is not None
                and rule_power(2 * min_effect, sigma, needed, K, min_effect) >= 0.8 - 1e-9
            )
        print(
            f"cell=planning R={r} trials={trials} "
            f"stated_difference_holds={held / trials:.4f} se={_se(held / trials, trials):.4f} "
            f"replicates_enough={enough / trials:.4f} se={_se(enough / trials, trials):.4f} "
            f"labelled_rough={rough / trials:.4f} seconds={time.perf_counter() - started:.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--disclose-every", type=int, default=20)
    parser.add_argument("--only", choices=("family", "planning"))
    args = parser.parse_args()
    if args.only in (None, "planning"):
        planning(args.trials)
    if args.only in (None, "family"):
        family(args.trials, args.disclose_every)


if __name__ == "__main__":
    main()
