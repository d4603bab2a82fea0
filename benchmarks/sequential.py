"""Sequential and task-level methods: A/A false-favor, power and seeds to a verdict.

Simulated data, generated vectorised and decided by the library's own rules
(``task_paired_decision``, ``sequential_decision`` as ``compare()`` calls them, and
the spec's ``paired_rule`` on the per-seed means):

- a suite of 100 tasks; task j succeeds with probability p_j (uniform on [0.2, 0.8])
  and costs t_j tokens (uniform on [400, 2000]); each seed samples 20 tasks without
  replacement; an attempt's tokens are t_j plus uniform noise on [−600, 600];
- A/A: both sides draw from the same p_j, t_j; power: A's success probability is
  p_j + 0.1 and B spends 100 more tokens per task, a true 2·min_effect for the
  objectives of conf/comparison/default.yaml (task_success 0.05, total_tokens 50);
  20 tasks per seed is the app's default sampling (conf/sampling/twenty.yaml);
- the sequential method declares bounds task_success 1 and total_tokens 3000 (the
  largest per-task difference this generator can produce is 1600 + 1200 + 100).

Cells (printed as key=value with Monte Carlo standard errors):

1. task-level at R = 3: A/A rate of task-paired/v1 (alpha 0.05) per objective, and
   its power at 2·min_effect next to the seed-level rule whose k is set so that its
   A/A rate on the same A/A draws equals the task-level one (``k_matched``).
2. sequential over 10 looks (a look after each of seeds 1..10): the share of A/A
   trials in which some look names a side, per objective and for the relation
   (either objective), at alpha 0.05 split over the two objectives.
3. sequential at 2·min_effect, up to ``--max-seeds`` seeds: power (a verdict by the
   cap), mean seeds to a verdict (a trial without one counts the cap), and the
   smallest R at which a fixed design reaches that power, for two fixed designs:
   paired-difference/v1 at k = 2 (the issue's comparison: one look, about 5-6%
   A/A per objective) and paired-difference/v1 held to the sequential method's own
   error rate (``k = t_{R−1}(1 − α/(2m))``, m objectives: α/m per objective, two
   sided, for its one look), with both ratios. Beside it, a floor no valid method
   reaches: an oracle that bets the one constant fraction best in hindsight on these
   power draws (``λ* = argmax mean log(1 + λx)``, it knows the effect) under the
   same threshold and gate: the fewest seeds any e-process of this form could need.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/sequential.py --trials 2000
    PYTHONPATH=. python benchmarks/sequential.py --trials 2000 --only sequential-power --alpha 0.1
"""

from __future__ import annotations

import argparse
import hashlib
import math
import time
from fractions import Fraction

import numpy as np

from xaytune.comparison.stats import exact, paired_rule
from xaytune.core.harness_comparison import sequential_decision, task_paired_decision

N_SUITE, N_TASKS, ALPHA = 100, 20, 0.05
MIN_EFFECT = {"task_success": 0.05, "total_tokens": 50.0}
BOUND = {"task_success": 1.0, "total_tokens": 3000.0}


def _rng(key: str) -> np.random.Generator:
    """A generator seeded from sha256 of a recorded key (no unseeded randomness)."""
    return np.random.default_rng(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def simulate(key: str, trials: int, seeds: int, shift: bool) -> dict[str, np.ndarray]:
    """Oriented per-(trial, seed, task) differences (positive favours A) and task ids."""
    rng = _rng(key)
    p = rng.uniform(0.2, 0.8, N_SUITE)
    cost = rng.uniform(400, 2000, N_SUITE)
    tasks = np.argsort(rng.random((trials, seeds, N_SUITE)), axis=2)[:, :, :N_TASKS]
    tasks = np.sort(tasks, axis=2)
    pa = p[tasks] + (0.1 if shift else 0.0)
    success_a = rng.random(tasks.shape) < pa
    success_b = rng.random(tasks.shape) < p[tasks]
    tokens_a = cost[tasks] + rng.uniform(-600, 600, tasks.shape)
    tokens_b = cost[tasks] + rng.uniform(-600, 600, tasks.shape) + (100.0 if shift else 0.0)
    return {
        "tasks": tasks,
        "task_success": success_a.astype(float) - success_b.astype(float),
        "total_tokens": tokens_b - tokens_a,  # minimize: b − a favours A when positive
    }


def _se(rate: float, n: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 1e-12) / n)


def _seed_rule(means: np.ndarray, metric: str, k: float) -> bool:
    outcome = paired_rule([exact(v) for v in means], exact(MIN_EFFECT[metric]), Fraction(repr(k)))
    return outcome in ("favors-a", "favors-b")


def _task_rule(data: dict[str, np.ndarray], metric: str, trial: int, seeds: int) -> str:
    rows = [
        (s, f"t{data['tasks'][trial, s, j]}", float(data[metric][trial, s, j]))
        for s in range(seeds)
        for j in range(N_TASKS)
    ]
    return task_paired_decision(rows, min_effect=MIN_EFFECT[metric], alpha=ALPHA).verdict


def _matched_k(means: np.ndarray, metric: str, target: float) -> tuple[float, float]:
    """The smallest seed-level k (to 0.01) whose A/A rate on these draws, decided by
    the library's rule, is at most ``target``; and that rate (bisection: the rate
    falls as k grows)."""
    low, high = 0.5, 50.0
    rate_high = 0.0
    while high - low > 0.01:
        k = round((low + high) / 2, 3)
        rate = float(np.mean([_seed_rule(m, metric, k) for m in means]))
        if rate > target:
            low = k
        else:
            high, rate_high = k, rate
    return high, rate_high


def task_level(trials: int) -> None:
    aa = simulate("task-level/aa", trials, 3, shift=False)
    power = simulate("task-level/power", trials, 3, shift=True)
    for metric in MIN_EFFECT:
        aa_rate = np.mean([_task_rule(aa, metric, t, 3) != "inconclusive" for t in range(trials)])
        task_power = np.mean([_task_rule(power, metric, t, 3) == "favors-a" for t in range(trials)])
        k, seed_aa = _matched_k(aa[metric].mean(axis=2), metric, aa_rate)
        seed_power = np.mean([_seed_rule(m, metric, k) for m in power[metric].mean(axis=2)])
        print(
            f"cell=task-level R=3 metric={metric} trials={trials} "
            f"task_aa={aa_rate:.4f} task_aa_se={_se(aa_rate, trials):.4f} "
            f"task_power={task_power:.4f} task_power_se={_se(task_power, trials):.4f} "
            f"k_matched={k:.3f} seed_aa={seed_aa:.4f} seed_power={seed_power:.4f} "
            f"seed_power_se={_se(seed_power, trials):.4f} "
            f"power_ratio={task_power / max(seed_power, 1e-9):.2f}"
        )


def _sequential_calls(data, metric: str, trial: int, looks: int, level: float) -> list[str]:
    """The verdict at each look 1..looks (seeds so far), as compare() decides it."""
    per_seed = [list(map(float, data[metric][trial, s])) for s in range(looks)]
    return [
        sequential_decision(
            per_seed[:look], bound=BOUND[metric], min_effect=MIN_EFFECT[metric], alpha=level
        ).verdict
        for look in range(1, looks + 1)
    ]


def sequential_aa(trials: int, looks: int = 10) -> None:
    data = simulate("sequential/aa", trials, looks, shift=False)
    level = ALPHA / len(MIN_EFFECT)
    named = {metric: np.zeros(trials, bool) for metric in MIN_EFFECT}
    for metric in MIN_EFFECT:
        for t in range(trials):
            calls = _sequential_calls(data, metric, t, looks, level)
            named[metric][t] = any(call != "inconclusive" for call in calls)
    relation = named["task_success"] | named["total_tokens"]
    fields = " ".join(
        f"aa_{m}={named[m].mean():.4f} aa_{m}_se={_se(named[m].mean(), trials):.4f}"
        for m in MIN_EFFECT
    )
    print(
        f"cell=sequential-aa looks={looks} trials={trials} alpha={ALPHA} {fields} "
        f"aa_relation={relation.mean():.4f} aa_relation_se={_se(relation.mean(), trials):.4f}"
    )


def sequential_power(trials: int, max_seeds: int) -> None:
    data = simulate("sequential/power", trials, max_seeds, shift=True)
    level = ALPHA / len(MIN_EFFECT)
    for metric in MIN_EFFECT:
        used = np.full(trials, max_seeds)
        decided = np.zeros(trials, bool)
        for t in range(trials):
            per_seed = [list(map(float, data[metric][t, s])) for s in range(max_seeds)]
            outcome = sequential_decision(
                per_seed, bound=BOUND[metric], min_effect=MIN_EFFECT[metric], alpha=level
            )
            # The first look at which the verdict names A (the e-process crossed and
            # the mean then exceeded min_effect): checked look by look from the crossing.
            if outcome.crossed_a is not None:
                for look in range(outcome.crossed_a, max_seeds + 1):
                    if sum(map(sum, per_seed[:look])) / (look * N_TASKS) > MIN_EFFECT[metric]:
                        used[t], decided[t] = look, True
                        break
        power = decided.mean()
        means = data[metric].mean(axis=2)
        k2_r, k2_power = _fixed_r(means, metric, power, lambda r: 2.0)
        # The fixed rule held to the sequential method's per-objective rate alpha/m
        # (two-sided, one look): the Student t quantile on R − 1 df.
        eq_r, eq_power = _fixed_r(means, metric, power, lambda r: _t_quantile(1 - level / 2, r - 1))
        ratio = used.mean() / k2_r if k2_r else float("nan")
        ratio_eq = used.mean() / eq_r if eq_r else float("nan")
        oracle_bet, oracle_power, oracle_seeds = _oracle(data, metric, max_seeds, level)
        oracle_r, _ = _fixed_r(means, metric, oracle_power, lambda r: 2.0)
        oracle_eq_r, _ = _fixed_r(
            means, metric, oracle_power, lambda r: _t_quantile(1 - level / 2, r - 1)
        )
        print(
            f"cell=sequential-power metric={metric} max_seeds={max_seeds} trials={trials} "
            f"alpha={ALPHA} "
            f"power={power:.4f} power_se={_se(power, trials):.4f} "
            f"mean_seeds={used.mean():.2f} "
            f"mean_seeds_se={used.std(ddof=1) / math.sqrt(trials):.2f} "
            f"fixed_r_same_power={k2_r} fixed_power={k2_power:.4f} seeds_ratio={ratio:.2f} "
            f"fixed_eq_k_at_r={_t_quantile(1 - level / 2, (eq_r or max_seeds) - 1):.3f} "
            f"fixed_eq_r_same_power={eq_r} fixed_eq_power={eq_power:.4f} "
            f"seeds_ratio_same_error={ratio_eq:.2f}"
        )
        print(
            f"cell=sequential-oracle metric={metric} max_seeds={max_seeds} trials={trials} "
            f"alpha={ALPHA} oracle_bet={oracle_bet:.3f} power={oracle_power:.4f} "
            f"power_se={_se(oracle_power, trials):.4f} mean_seeds={oracle_seeds.mean():.2f} "
            f"mean_seeds_se={oracle_seeds.std(ddof=1) / math.sqrt(trials):.2f} "
            f"fixed_r_same_power={oracle_r} "
            f"seeds_ratio={oracle_seeds.mean() / oracle_r if oracle_r else float('nan'):.2f} "
            f"fixed_eq_r_same_power={oracle_eq_r} seeds_ratio_same_error="
            f"{oracle_seeds.mean() / oracle_eq_r if oracle_eq_r else float('nan'):.2f}"
        )


def _fixed_r(means: np.ndarray, metric: str, power: float, k_of_r) -> tuple[int | None, float]:
    """The smallest R (3 ..) at which paired-difference/v1 with ``k_of_r(R)`` favours
    A in at least ``power`` of the trials (decided by the library's exact rule), and
    its power there (the cap's power when none does)."""
    fixed_power = 0.0
    for r in range(3, means.shape[1] + 1):
        k = Fraction(repr(round(float(k_of_r(r)), 6)))
        fixed_power = float(np.mean([paired_rule_favors_a(m[:r], metric, k) for m in means]))
        if fixed_power >= power:
            return r, fixed_power
    return None, fixed_power


def _t_quantile(level: float, df: int) -> float:
    from scipy import special

    return float(special.stdtrit(df, level))


def _oracle(data, metric: str, max_seeds: int, level: float) -> tuple[float, float, np.ndarray]:
    """The hindsight-best constant bet on these draws (not a valid method: it knows
    the effect), crossing ``2/level`` and gated by min_effect as the library's rule:
    its bet, power and seeds to a verdict (the cap when none)."""
    x = data[metric].reshape(data[metric].shape[0], -1) / BOUND[metric]
    grid = np.linspace(0.005, 0.95, 190)
    bet = float(grid[np.argmax([np.log1p(b * x).mean() for b in grid])])
    peak = np.maximum.accumulate(np.cumsum(np.log1p(bet * x), axis=1), axis=1)
    crossed = peak[:, N_TASKS - 1 :: N_TASKS] >= math.log(2.0 / level)
    looks = np.arange(1, max_seeds + 1)
    mean_now = np.cumsum(data[metric].sum(axis=2), axis=1) / (looks * N_TASKS)
    called = crossed & (mean_now > MIN_EFFECT[metric])
    decided = called.any(axis=1)
    return bet, float(decided.mean()), np.where(decided, called.argmax(axis=1) + 1, max_seeds)


def paired_rule_favors_a(means: np.ndarray, metric: str, k: Fraction = Fraction(2)) -> bool:
    outcome = paired_rule([exact(v) for v in means], exact(MIN_EFFECT[metric]), k)
    return outcome == "favors-a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--max-seeds", type=int, default=40)
    parser.add_argument("--only", choices=("task-level", "sequential-aa", "sequential-power"))
    parser.add_argument("--alpha", type=float, default=ALPHA, help="the methods' alpha")
    args = parser.parse_args()
    globals()["ALPHA"] = args.alpha  # read by every cell
    started = time.perf_counter()
    if args.only in (None, "task-level"):
        task_level(args.trials)
    if args.only in (None, "sequential-aa"):
        sequential_aa(args.trials)
    if args.only in (None, "sequential-power"):
        sequential_power(args.trials, args.max_seeds)
    print(f"elapsed_s={time.perf_counter() - started:.1f}")


if __name__ == "__main__":
    main()
