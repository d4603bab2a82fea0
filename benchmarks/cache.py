"""What an unchanged-baseline iteration costs with the evidence cache.

    python benchmarks/cache.py                 # the quickstart (20 tasks x 3 seeds)
    python benchmarks/cache.py --tasks 1000    # a 1,000-task suite (the calculator workload)
    python benchmarks/cache.py --latency 0.2   # each model call takes 200 ms

The quickstart's config is run in process (``xaytune.run``, what ``python -m xaytune``
runs; each replicate timed through a run observer): a cold iteration (cache off:
both candidates' replicates), then, with a fresh cache, a first iteration (fills it)
and a second one with only candidate B changed (``terse`` for ``mental``), which
should pay only for B. Target (issue 17): second <= B's replicates in the cold
iteration + 10% of the cold iteration. Prints ``key=value``; ``second_a_reused_s`` is
what the reused baseline cost (link, verify, publish, cached evaluation),
``second_b_s`` the challenger run again with the cache on (it also stores its entry).
The ``*_cpu_s`` twins are the process's CPU seconds over the same spans (wall time on
a shared machine swings with what else runs; CPU time much less).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_line, make_suite
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import xaytune
from xaytune.experiment.results import SilentObserver


def _config(challenger: str, cache_dir: Path, mode: str, args, suite: Path | None) -> dict:
    """The quickstart's composed config (progress on: the clock below is told of every
    replicate), as the dict ``xaytune.run`` takes."""
    overrides = [
        "+experiment=quickstart",
        f"candidate@candidates.b={challenger}",
        f"cache.dir={cache_dir}",
        f"cache.mode={mode}",
        f"model.latency_s={args.latency}",
        "progress=true",
    ]
    tasks = args.tasks
    if suite is not None:
        overrides += ["suite.builtin=null", f"suite.path={suite}", f"sampling.count={tasks}"]
    with initialize_config_module("xaytune.conf", version_base="1.3"):
        raw = compose("config", overrides=overrides)
    config = OmegaConf.to_container(raw, resolve=True)
    assert isinstance(config, dict)
    return config


class _Clock(SilentObserver):
    """Seconds (wall and CPU) per candidate name, summed over its replicates (each
    timed around the whole replicate: set-up, run or reuse, publish, evaluation)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextmanager
    def replicate(self, title: str, *, total: int) -> Iterator[None]:
        name = title.rsplit(" seed ", 1)[0]
        started, cpu = time.perf_counter(), time.process_time()
        try:
            yield None
        finally:
            self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - started
            self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - cpu


def iteration(out: Path, config: dict) -> dict[str, float]:
    """Run the experiment ``config`` into ``out`` (``xaytune.run``: the replicates, then
    the comparison, untimed); replicate seconds per candidate label, and its CPU
    seconds under ``<label>_cpu``."""
    clock = _Clock()
    xaytune.run(config, out=out, observer=clock)
    labels = {label: c["name"] for label, c in config["candidates"].items()}
    return {label: clock.spent[name] for label, name in labels.items()} | {
        f"{label}_cpu": clock.cpu[name] for label, name in labels.items()
    }


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
        cold = iteration(root / "cold", _config("terse", cache, "off", args, suite))
        iteration(root / "first", _config("mental", cache, "read-write", args, suite))
        second = iteration(root / "second", _config("terse", cache, "read-write", args, suite))
    cold_total, second_total = cold["a"] + cold["b"], second["a"] + second["b"]
    bound = cold["b"] + 0.10 * cold_total
    cold_cpu, second_cpu = cold["a_cpu"] + cold["b_cpu"], second["a_cpu"] + second["b_cpu"]
    bound_cpu = cold["b_cpu"] + 0.10 * cold_cpu
    print(
        f"tasks={args.tasks or 20} latency_s={args.latency} "
        f"cold_s={cold_total:.3f} cold_b_s={cold['b']:.3f} "
        f"second_s={second_total:.3f} second_a_reused_s={second['a']:.3f} "
        f"second_b_s={second['b']:.3f} "
        f"bound_s={bound:.3f} second_over_cold={second_total / cold_total:.3f} "
        f"second_over_bound={second_total / bound:.3f} "
        f"cold_cpu_s={cold_cpu:.3f} cold_b_cpu_s={cold['b_cpu']:.3f} "
        f"second_cpu_s={second_cpu:.3f} second_a_reused_cpu_s={second['a_cpu']:.3f} "
        f"second_b_cpu_s={second['b_cpu']:.3f} "
        f"second_over_bound_cpu={second_cpu / bound_cpu:.3f} "
        f"met={str(second_total <= bound).lower()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
