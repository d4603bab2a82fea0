"""Every row of the performance table (issue 33), measured side by side in one run.

    PYTHONPATH=. python benchmarks/targets.py --inspect-python .venv-inspect/bin/python
    PYTHONPATH=. python benchmarks/targets.py --only startup,cache      # some rows
    PYTHONPATH=. python benchmarks/targets.py --big-tree <kept>/big/tree  # audit a kept tree

Runs each row's benchmark script one after the other, as a user runs it (a child
process of this interpreter, the repository on ``PYTHONPATH``, ``.pyc`` writing allowed so
start-up is measured with warm caches), echoes its output, takes the figures from its
``key=value`` lines, and ends with one ``key=value`` line per row::

    row=<name> figure=<measured> target=<op><value> met=<true|false>

and a summary line ``rows=N met=M``. The targets are the issue's; a script's own
``target_met`` may hold an older one and is not read. A row whose benchmark cannot run
(no ``--inspect-python`` for inspect_ai) is printed with ``figure=none met=false`` and the
reason, never skipped silently. Whole run: about 8 minutes on 2 cores with a kept
10,000-task tree (``--big-tree``, kept by ``audit.py --keep``); building one adds 2-4.

Plain script, not a test: the figures depend on the machine and on what else runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import _common as common

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

KeyValues = list[dict[str, str]]


def key_values(output: str) -> KeyValues:
    """Every line of ``output`` made only of ``key=value`` words, as dicts, in order."""
    found = []
    for line in output.splitlines():
        words = line.split()
        if words and not line.startswith("#") and all("=" in word for word in words):
            found.append(dict(word.split("=", 1) for word in words))
    return found


def pick(lines: KeyValues, key: str, **where: str) -> float | None:
    """``key`` of the last line that has it and matches ``where``; None when no line does."""
    for line in reversed(lines):
        if key in line and all(line.get(k) == v for k, v in where.items()):
            return float(line[key])
    return None


@dataclass(frozen=True)
class Row:
    """One target: its name, the figure read from the benchmark's lines, ``<=`` or ``>=``."""

    name: str
    figure: Callable[[KeyValues], float | None]
    op: str
    target: float

    def met(self, value: float | None) -> bool:
        if value is None:
            return False
        return value >= self.target if self.op == ">=" else value <= self.target


@dataclass(frozen=True)
class Bench:
    """One benchmark invocation and the rows it feeds."""

    key: str
    argv: Callable[[argparse.Namespace], list[str] | str]
    rows: tuple[Row, ...]


def _cache_bound(lines: KeyValues) -> float | None:
    """Second run over its bound (B's share + 10% of the cold run): <= 1 meets it."""
    second, bound = pick(lines, "second_s"), pick(lines, "bound_s")
    return None if second is None or not bound else second / bound


def _scale_flat(lines: KeyValues) -> float | None:
    """Largest stage cost per task at 100,000 over the same at 1,000 (flat: <= 1.5)."""
    small = [line for line in lines if line.get("tasks") == "1000" and "peak_rss_mib" in line]
    large = [line for line in lines if line.get("tasks") == "100000" and "peak_rss_mib" in line]
    if not small or not large:
        return None
    stages = [key for key in large[-1] if key.endswith("_ms_per_task")]
    return max(float(large[-1][k]) / max(float(small[-1][k]), 1e-9) for k in stages)


def _inspect(args: argparse.Namespace) -> list[str] | str:
    if args.inspect_python is None:
        return "no --inspect-python (inspect_ai runs in a venv of its own; see versus_inspect.py)"
    return ["versus_inspect.py", "--inspect-python", str(args.inspect_python)]


def _audit(args: argparse.Namespace) -> list[str]:
    argv = ["audit.py", "--dir", str(args.fast_dir)]
    return argv + (["--big-tree", str(args.big_tree)] if args.big_tree else [])


BENCHES = (
    Bench(
        "inspect",
        _inspect,
        (Row("end_to_end_vs_inspect_ai", lambda kv: pick(kv, "ratio"), ">=", 20.0),),
    ),
    Bench(
        "latency",
        lambda a: ["latency.py", "--concurrency", "200", "--repeat", "3"],
        (
            Row(
                "latency_c200_quiet",
                lambda kv: pick(kv, "efficiency", disk="quiet", concurrency="200"),
                ">=",
                0.9,
            ),
            Row(
                "latency_c200_busy_disk",
                lambda kv: pick(kv, "efficiency", disk="busy", concurrency="200"),
                ">=",
                0.9,
            ),
        ),
    ),
    Bench(
        "server",
        lambda a: ["server.py", "--endpoint", "stub", "--concurrency", "50,200"],
        (
            Row("server_200ms_c50", lambda kv: pick(kv, "ratio", concurrency="50"), ">=", 0.95),
            Row("server_200ms_c200", lambda kv: pick(kv, "ratio", concurrency="200"), ">=", 0.95),
        ),
    ),
    Bench(
        "verify",
        lambda a: ["verify.py", "--dir", str(a.fast_dir), "--reply-bytes", "0"],
        (Row("verify_vs_floor_3.6KB", lambda kv: pick(kv, "floor_ratio"), ">=", 0.6),),
    ),
    Bench(
        "audit",
        _audit,
        (
            Row("audit_10k_vs_floor", lambda kv: pick(kv, "audit_10k_ratio"), "<=", 3.0),
            Row("audit_quickstart_s", lambda kv: pick(kv, "audit_quickstart_s"), "<=", 0.7),
        ),
    ),
    Bench(
        "startup",
        lambda a: ["startup.py", "--repeat", "5"],
        (
            Row("quickstart_process_s", lambda kv: pick(kv, "quickstart_s"), "<=", 1.5),
            Row("help_s", lambda kv: pick(kv, "help_s"), "<=", 0.4),
        ),
    ),
    Bench(
        "cache",
        lambda a: ["cache.py"],
        (Row("second_run_quickstart_over_bound", _cache_bound, "<=", 1.0),),
    ),
    Bench(
        "cache1000",
        lambda a: ["cache.py", "--tasks", "1000"],
        (Row("second_run_1000_over_bound", _cache_bound, "<=", 1.0),),
    ),
    Bench(
        "scale",
        lambda a: ["scale.py", "--dir", str(a.fast_dir)],
        (
            Row(
                "peak_rss_100k_mib",
                lambda kv: pick(kv, "peak_rss_mib", tasks="100000"),
                "<=",
                1024.0,
            ),
            Row("per_task_cost_100k_over_1k", _scale_flat, "<=", 1.5),
        ),
    ),
)


def run_bench(argv: list[str]) -> KeyValues:
    """Run one benchmark script as a child, echo its output, return its key=value lines."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, str(HERE / argv[0]), *argv[1:]]
    print(f"# $ python benchmarks/{' '.join(argv)}", flush=True)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        sys.stdout.write(done.stderr[-2000:])
        print(f"# benchmarks/{argv[0]} exited with {done.returncode}", flush=True)
    return key_values(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspect-python", type=Path, default=None)
    parser.add_argument("--big-tree", type=Path, default=None, help="a kept 10,000-task tree")
    parser.add_argument(
        "--fast-dir", type=Path, default=Path("/dev/shm"), help="tmpfs for verify/audit/scale"
    )
    parser.add_argument(
        "--only", default=None, help="comma-separated: " + ",".join(b.key for b in BENCHES)
    )
    args = parser.parse_args(argv)
    chosen = BENCHES
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {b.key for b in BENCHES}
        if unknown:
            parser.error(f"--only: unknown benchmark(s) {', '.join(sorted(unknown))}")
        chosen = tuple(b for b in BENCHES if b.key in wanted)
    print(f"# {common.machine_line()}", flush=True)
    results: list[tuple[Row, float | None, str]] = []
    for bench in chosen:
        command = bench.argv(args)
        if isinstance(command, str):
            results += [(row, None, command) for row in bench.rows]
            continue
        lines = run_bench(command)
        results += [(row, row.figure(lines), "") for row in bench.rows]
    print(f"# {common.machine_line()}")
    met = 0
    for row, value, why in results:
        ok = row.met(value)
        met += ok
        figure = "none" if value is None else f"{value:.3f}"
        if why:
            print(f"# {row.name}: {why}")
        line = f"row={row.name} figure={figure} target={row.op}{row.target:g} met={str(ok).lower()}"
        print(line, flush=True)
    print(f"rows={len(results)} met={met}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
