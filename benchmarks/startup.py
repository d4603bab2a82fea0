"""Startup benchmark: ``import xaytune`` + quickstart config composition, fresh process.

Each repeat starts a fresh interpreter that times, from its first line:

    import      ``import xaytune``
    compose     ``hydra.initialize_config_module("xaytune.conf", version_base="1.3")``
                and ``compose("config", overrides=["+experiment=quickstart"])``
    pipeline    importing what a run then needs (``xaytune.harness``,
                ``xaytune.evaluation``, ``xaytune.models``, ``xaytune.app``):
                reported, not part of the target

and the whole interpreter's wall time (``python -c ...`` from exec to exit) is
measured from outside. Prints the median and minimum over ``--repeat`` runs and one
machine-readable line::

    startup_s=... import_s=... compose_s=... pipeline_import_s=... process_s=...

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/startup.py
    PYTHONPATH=. python benchmarks/startup.py --repeat 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import _common as common

CHILD = """
import json, time
started = time.perf_counter()
import xaytune
imported = time.perf_counter()
from hydra import compose, initialize_config_module
with initialize_config_module("xaytune.conf", version_base="1.3"):
    cfg = compose("config", overrides=["+experiment=quickstart"])
composed = time.perf_counter()
assert cfg.experiment.name == "quickstart"
import xaytune.harness, xaytune.evaluation, xaytune.models, xaytune.app
pipeline = time.perf_counter()
print(json.dumps({
    "import_s": imported - started,
    "compose_s": composed - imported,
    "startup_s": composed - started,
    "pipeline_import_s": pipeline - composed,
}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"# {common.machine_line()}")
    runs = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", CHILD],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ,
        )
        facts = json.loads(done.stdout.strip().splitlines()[-1])
        facts["process_s"] = time.perf_counter() - started
        runs.append(facts)
    keys = ("startup_s", "import_s", "compose_s", "pipeline_import_s", "process_s")
    median = {key: statistics.median(run[key] for run in runs) for key in keys}
    low = {key: min(run[key] for run in runs) for key in keys}
    for key in keys:
        print(f"{key:<18} median {median[key]:6.3f} s   min {low[key]:6.3f} s")
    print(" ".join(f"{key}={median[key]:.3f}" for key in keys), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
