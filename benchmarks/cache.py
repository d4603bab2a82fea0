"""What an unchanged-baseline iteration costs with the evidence cache.

    python benchmarks/cache.py                 # the quickstart (20 tasks x 3 seeds)
    python benchmarks/cache.py --tasks 1000    # a 1,000-task suite (the calculator workload)
    python benchmarks/cache.py --latency 0.2   # each model call takes 200 ms

Each replicate of the quickstart's config is run in process (``run_replicate``, what
``python -m xaytune`` calls per candidate and seed): a cold iteration (cache off:
both candidates' replicates), then, with a fresh cache, a first iteration (fills it)
and a second one with only candidate B changed (``terse`` for ``mental``), which
should pay only for B. Target (issue 17): second <= B's replicates in the cold
iteration + 10% of the cold iteration. Prints ``key=value``; ``second_a_reused_s`` is
what the reused baseline cost (link, verify, publish, cached evaluation),
``second_b_s`` the challenger run again with the cache on (it also stores its entry).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_line, make_suite
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from xaytune.experiment.config import validate_config
from xaytune.experiment.parts import experiment_toolbox, resolve_candidates
from xaytune.experiment.replicate import load_source, run_replicate
from xaytune.experiment.tree.intent import intent_of, write_intent
from xaytune.experiment.tree.manifest import what_is_run


def _config(challenger: str, cache_dir: Path, mode: str, args, suite: Path | None):
    overrides = [
        "+experiment=quickstart",
        f"candidate@candidates.b={challenger}",
        f"cache.dir={cache_dir}",
        f"cache.mode={mode}",
        f"model.latency_s={args.latency}",
        "progress=false",
    ]
    tasks = args.tasks
    if suite is not None:
        overrides += ["suite.builtin=null", f"suite.path={suite}", f"sampling.count={tasks}"]
    with initialize_config_module("xaytune.conf", version_base="1.3"):
        raw = compose("config", overrides=overrides)
    plain = OmegaConf.to_container(raw, resolve=True)
    return resolve_candidates(validate_config(plain)), plain


def iteration(out: Path, cfg, plain) -> dict[str, float]:
    """Run every replicate of ``cfg`` into ``out``; seconds per candidate label."""
    source = load_source(cfg)
    out.mkdir(parents=True)
    intent = write_intent(out, intent_of(cfg, what_is_run(plain), source), resume=False)
    toolbox = experiment_toolbox(cfg)
    spent = {label: 0.0 for label in cfg.candidates}
    for seed in cfg.seeds:
        for label, harness in cfg.candidates.items():
            started = time.perf_counter()
            run_replicate(
                cfg, label=label, harness=harness, seed=seed, source=source, out=out,
                toolbox=toolbox, intent=intent,
            )  # fmt: skip
            spent[label] += time.perf_counter() - started
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=None)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per model call")
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="xaytune-cache-bench-") as tmp:
        root = Path(tmp)
        suite = None
        if args.tasks is not None:
            suite = make_suite(root / "suite", "calculator", args.tasks).path
        cache = root / "cache"
        cold = iteration(root / "cold", *_config("terse", cache, "off", args, suite))
        iteration(root / "first", *_config("mental", cache, "read-write", args, suite))
        second = iteration(root / "second", *_config("terse", cache, "read-write", args, suite))
    cold_total, second_total = sum(cold.values()), sum(second.values())
    bound = cold["b"] + 0.10 * cold_total
    print(
        f"tasks={args.tasks or 20} latency_s={args.latency} "
        f"cold_s={cold_total:.3f} cold_b_s={cold['b']:.3f} "
        f"second_s={second_total:.3f} second_a_reused_s={second['a']:.3f} "
        f"second_b_s={second['b']:.3f} "
        f"bound_s={bound:.3f} second_over_cold={second_total / cold_total:.3f} "
        f"met={str(second_total <= bound).lower()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
