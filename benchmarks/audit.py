"""Audit benchmark: ``python -m xaytune.verify <tree>`` as a user runs it, two trees.

1. The quickstart tree: ``python -m xaytune +experiment=quickstart`` (cache off)
   writes it once; the audit is then timed as a subprocess, median of ``--repeat``
   (``audit_quickstart_s``, target <= 0.7 s, issue 33). ``verify_import_s`` is the part of that
   spent importing (``python -c "import xaytune.verify, xaytune.audit.verify"``, same
   median), so the audit's own work is the difference.
2. A large tree: the quickstart experiment (calculator vs mental, seeds 101, 102,
   103) on a generated suite of ``--tasks`` one-operation questions (default
   10,000; every task sampled): 2 candidates x 3 seeds x N attempt files, written by
   the app itself with ``durability=none`` (so the store's seal journal has a line
   per seal, the costlier case for reading it; building it takes a few minutes).
   The audit (``audit_10k_s``) is timed against the floor of the tree's bytes
   (``audit_10k_floor_s``: list every directory, open, read and sha256 every file,
   in this process): target ``audit_10k_ratio`` <= 3.

Each audit must print ``ok``: a timing of a failed audit is refused. Prints a human
summary and one machine-readable line::

    audit_quickstart_s=... verify_import_s=... audit_10k_s=... audit_10k_floor_s=...
    audit_10k_ratio=... audit_10k_files=... audit_10k_mb=...

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/audit.py --dir /dev/shm
    PYTHONPATH=. python benchmarks/audit.py --tasks 0            # the quickstart only
    PYTHONPATH=. python benchmarks/audit.py --dir /dev/shm --keep    # keep both trees
    PYTHONPATH=. python benchmarks/audit.py --big-tree <kept tree>   # audit it again
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import _common as common

QUICKSTART_TARGET_S = 0.7  # issue 33 (issue 22: 1.0)
RATIO_TARGET = 3.0


def _env() -> dict[str, str]:
    """This environment with the evidence cache off (every replicate is run)."""
    return {**os.environ, "XAYTUNE_CACHE_MODE": "off"}


def _run(args: list[str], what: str) -> float:
    """Run ``python <args>``; its wall time (refused unless it exits 0)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], env=_env(), capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{what} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return seconds


def _experiment(tree: Path, *overrides: str) -> float:
    return _run(
        [
            "-m",
            "xaytune",
            "+experiment=quickstart",
            "progress=false",
            f"hydra.run.dir={tree}",
            *overrides,
        ],
        f"the run into {tree}",
    )


def _audit(tree: Path, repeat: int) -> float:
    """Median wall time of ``python -m xaytune.verify <tree>``, which must say ok."""
    return statistics.median(
        _run(["-m", "xaytune.verify", str(tree)], f"the audit of {tree}") for _ in range(repeat)
    )


def tree_floor(root: Path) -> tuple[float, int, int]:
    """(seconds, files, bytes) to list every directory of the tree and open, read and
    sha256 every file in it: what any auditor of those bytes must do at least."""
    started = time.perf_counter()
    files = total = 0
    pending = [str(root)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            listed = sorted(entries, key=lambda entry: entry.name)
        for entry in listed:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
                continue
            with open(entry.path, "rb") as handle:
                data = handle.read()
            hashlib.sha256(data).digest()
            files += 1
            total += len(data)
    return time.perf_counter() - started, files, total


def build_big_tree(parent: Path, tasks: int) -> Path:
    """The quickstart experiment on a generated suite of ``tasks`` tasks, all sampled."""
    suite = parent / "suite"
    common.make_suite(suite, "single-turn", tasks)
    tree = parent / "tree"
    seconds = _experiment(
        tree,
        "suite.builtin=null",
        f"suite.path={suite}",
        "sampling=all",
        "durability=none",
        "concurrency=50",
    )
    print(f"# built the {tasks}-task tree (2 candidates x 3 seeds) in {seconds:.0f} s")
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10000, help="large tree's tasks (0: none)")
    parser.add_argument("--repeat", type=int, default=3, help="median of this many audits")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the trees (default: .)")
    parser.add_argument("--keep", action="store_true", help="keep the trees")
    parser.add_argument(
        "--big-tree", type=Path, default=None, help="audit this tree as the large one"
    )
    args = parser.parse_args(argv)
    with common.work_dir(args.dir, "xaytune-audit-", keep=args.keep) as parent:
        print(f"# {common.machine_line()}")
        print(f"# trees under {common.fs_line(parent)}")
        quickstart = parent / "quickstart"
        _experiment(quickstart)
        imports = statistics.median(
            _run(["-c", "import xaytune.verify, xaytune.audit.verify"], "the imports")
            for _ in range(args.repeat)
        )
        audit_quickstart = _audit(quickstart, args.repeat)
        met = audit_quickstart <= QUICKSTART_TARGET_S
        print(
            f"quickstart tree: audit {audit_quickstart:.2f} s (median of {args.repeat}; "
            f"of which importing {imports:.2f} s); target <= {QUICKSTART_TARGET_S} s: "
            f"{'met' if met else 'not met'}"
        )
        line = (
            f"audit_quickstart_s={audit_quickstart:.3f} verify_import_s={imports:.3f} "
            f"audit_quickstart_met={met}"
        )
        big = args.big_tree
        if big is None and args.tasks > 0:
            big = build_big_tree(parent / "big", args.tasks)
        if big is not None:
            floors = [tree_floor(big) for _ in range(args.repeat)]
            floor = statistics.median(seconds for seconds, _, _ in floors)
            _, files, total = floors[0]
            audit = _audit(big, args.repeat)
            ratio = audit / floor
            print(
                f"large tree ({files} files, {total / 1e6:.0f} MB): audit {audit:.2f} s, "
                f"floor (list+read+sha256) {floor:.2f} s: {ratio:.1f}x the floor "
                f"(target <= {RATIO_TARGET:.0f}x: {'met' if ratio <= RATIO_TARGET else 'not met'})"
            )
            line += (
                f" audit_10k_s={audit:.3f} audit_10k_floor_s={floor:.3f} "
                f"audit_10k_ratio={ratio:.2f} audit_10k_met={ratio <= RATIO_TARGET} "
                f"audit_10k_files={files} audit_10k_mb={total / 1e6:.0f}"
            )
        print(line, flush=True)
        if args.keep:
            print(f"# kept: {parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
