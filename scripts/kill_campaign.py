"""SIGKILL campaign: kill the quickstart at random points of run, resume and report;
resume until it finishes; the tree must verify and say what an uninterrupted run says.

    python scripts/kill_campaign.py --kills 30 --dir /tmp/campaign

Kill points are drawn from a seeded RNG over the uninterrupted run's wall time (so
every phase is hit: start-up, replicates, evaluation, comparison, reports). After
each kill, every file in the tree is checked whole: each JSON file parses and each
attempt file is sealed or open with a chain that verifies (a torn sealed attempt or a
half-written JSON file counts as torn). A kill before the run recorded anything (no
manifest yet) starts the run again in a fresh directory, as a user would. Prints one
line of ``key=value`` pairs; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence.attempt_file import split_attempt
from xaytune.harness.evidence.trajectory import verify_chain

EXPERIMENT = ("+experiment=quickstart", "progress=false")


def _start(tree: Path, *, resume: bool) -> subprocess.Popen:
    where = f"resume={tree}" if resume else f"hydra.run.dir={tree}"
    return subprocess.Popen(
        [sys.executable, "-m", "xaytune", *EXPERIMENT, where],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen, timeout: float) -> tuple[int, str]:
    _, err = process.communicate(timeout=timeout)
    return process.returncode, err


def torn_files(tree: Path) -> list[str]:
    """Files a kill left half-written: JSON that does not parse, attempt files whose
    seal or chain does not hold."""
    torn = []
    for path in sorted(tree.rglob("*")):
        if not path.is_file() or path.name.startswith("."):
            continue
        data = path.read_bytes()
        if path.suffix == ".json":
            try:
                json.loads(data)
            except ValueError:
                torn.append(f"{path}: not whole JSON")
        elif path.suffix == ".jsonl" and path.parent.parent.name == "tasks":
            problem = _attempt_problem(path, data)
            if problem is not None:
                torn.append(f"{path}: {problem}")
    return torn


def _attempt_problem(path: Path, data: bytes) -> str | None:
    try:
        layout = split_attempt(data, str(path))
    except EvidenceError:
        return None  # a claim killed before its record: nothing recorded (removed on resume)
    genesis = sha256_digest(data[layout.spec_end : layout.record_end])
    try:
        verify_chain(
            data,
            genesis=genesis,
            where=str(path),
            start=layout.record_end,
            end=layout.events_end,
            allow_torn_tail=not layout.sealed,
        )
        if layout.sealed:
            json.loads(data[layout.events_end :])
    except (EvidenceError, ValueError) as error:
        return str(error)
    return None


def _verdicts(tree: Path) -> tuple[str, dict[str, str]]:
    report = json.loads((tree / "comparison" / "report.json").read_bytes())
    return report["relation"], {name: m["verdict"] for name, m in report["metrics"].items()}


def _verify(tree: Path) -> bool:
    result = subprocess.run(
        [sys.executable, "-m", "xaytune.verify", str(tree)], capture_output=True, text=True
    )
    return result.returncode == 0


def campaign(*, kills: int, directory: Path, seed: int, timeout: float = 300) -> dict[str, object]:
    reference = directory / "uninterrupted"
    started = time.monotonic()
    code, err = _finish(_start(reference, resume=False), timeout)
    wall = time.monotonic() - started
    if code not in (0, 1):
        raise SystemExit(f"the uninterrupted run failed ({code}): {err.strip()}")
    expected = _verdicts(reference)

    rng = random.Random(seed)
    tree, attempt = directory / "killed", 0
    done, torn, restarts, resumes = 0, [], 0, 0
    while True:
        resume = (tree / "manifest.json").exists()
        if not resume and tree.exists():
            shutil.rmtree(tree)  # killed before it recorded anything: start again
            restarts += 1
        process = _start(tree, resume=resume)
        resumes += resume
        if done < kills:
            time.sleep(rng.uniform(0.05, wall))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()
                done += 1
                torn += torn_files(tree) if tree.exists() else []
                continue
        code, err = _finish(process, timeout)
        if code not in (0, 1):
            raise SystemExit(f"run {attempt} failed ({code}): {err.strip()}")
        if done >= kills:
            break
        attempt += 1
        shutil.rmtree(tree)  # it finished before the kill: kill a new run
    verified = _verify(tree)
    equal = _verdicts(tree) == expected
    return {
        "kills": done,
        "torn": len(torn),
        "restarts": restarts,
        "resumes": resumes,
        "verified": verified,
        "verdicts_equal": equal,
        "uninterrupted_wall_s": round(wall, 2),
        "torn_files": torn,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="kill-campaign-", dir=args.dir))
    result = campaign(kills=args.kills, directory=directory, seed=args.seed)
    for line in result.pop("torn_files"):
        print(f"torn: {line}")
    print(" ".join(f"{key}={str(value).lower()}" for key, value in result.items()))
    print(f"trees under {directory}")
    ok = result["torn"] == 0 and result["verified"] and result["verdicts_equal"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
