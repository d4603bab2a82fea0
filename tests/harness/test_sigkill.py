"""SIGKILL mid-run: every seal verifies, every other attempt is open, nothing is torn."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xaytune.core.canonical import sha256_digest
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.harness.trajectory import verify_chain

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHILD = HERE / "_sigkill_child.py"
SEALS_BEFORE_KILL = 12


def _wait_for_line(process: subprocess.Popen, expected: str, deadline: float) -> None:
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline:
            if selector.select(timeout=0.05):
                line = process.stdout.readline()
                if line.strip() == expected:
                    return
                if not line:  # the child died
                    break
        raise AssertionError(f"child never printed {expected!r}: {process.stderr.read()!r}")
    finally:
        selector.close()


@pytest.mark.slow
def test_sigkill_leaves_only_sealed_or_open_attempts(tmp_path: Path) -> None:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    process = subprocess.Popen(
        [sys.executable, str(CHILD), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 8.0
        _wait_for_line(process, "started", deadline)
        store = tmp_path / "store"
        while (
            len(list(store.glob("tasks/*/attempts/*/seal.json"))) < SEALS_BEFORE_KILL
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        assert process.poll() is None, "the child finished before it could be killed"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL

    task_dirs = sorted((store / "tasks").iterdir())
    for task_dir in task_dirs:  # every stored spec is whole and is its fingerprint's
        if (task_dir / "spec.json").exists():
            AgentExecutionSpec.model_validate_json((task_dir / "spec.json").read_bytes())
    sealed, opened, empty = [], [], []
    for attempt in sorted(store.glob("tasks/*/attempts/*")):
        names = {path.name for path in attempt.iterdir()}
        temporaries = {name for name in names if name.startswith(".") and name.endswith(".tmp")}
        assert names - temporaries <= {"attempt.json", "trajectory.jsonl", "seal.json"}, names
        assert "seal.json" not in temporaries
        if "attempt.json" not in names:
            # killed between claiming the directory and writing its record: nothing
            # was spent or recorded, and nothing can be sealed
            assert names - temporaries == set(), names
            empty.append(attempt)
            continue
        record = (attempt / "attempt.json").read_bytes()
        json.loads(record)  # whole: written aside and renamed
        genesis = sha256_digest(record)
        data = (attempt / "trajectory.jsonl").read_bytes() if "trajectory.jsonl" in names else b""
        if "seal.json" in names:
            seal = json.loads((attempt / "seal.json").read_bytes())
            facts = verify_chain(data, genesis=genesis, where=str(attempt))
            chain = seal["trajectory"]
            assert (facts.head, facts.count, facts.bytes) == (
                chain["head"],
                chain["events"],
                chain["bytes"],
            )
            assert seal["attempt_record"] == genesis
            assert seal["status"] == "complete" and facts.last_event["type"] == "end"
            sealed.append(attempt)
        else:
            # open: its whole lines chain from its record; a torn last line is left out
            verify_chain(data, genesis=genesis, where=str(attempt), allow_torn_tail=True)
            opened.append(attempt)
    assert len(sealed) >= SEALS_BEFORE_KILL
    assert opened or empty, "no attempt was in flight when the child was killed"
    assert len(opened) + len(empty) <= 8  # at most the concurrency limit is in flight


def test_resume_after_a_kill_between_end_event_and_seal(tmp_path: Path) -> None:
    import asyncio

    from _fixtures_run import Bench, ScriptedModel, make_source, reply

    from xaytune.harness import Harness, HarnessRunner, Toolbox
    from xaytune.harness.evidence import assemble_evidence

    bench = Bench(make_source(tmp_path / "suite", count=4), tmp_path / "store", count=1)
    harness = Harness(name="plain", system_prompt="End with ANSWER: <n>.")
    spec = bench.spec(harness, tools=())
    runner = HarnessRunner()
    kwargs = {"toolbox": Toolbox.default(), "authorized_tools": frozenset()}
    first = runner.run(spec, model=ScriptedModel([reply("ANSWER: 1")]), **kwargs)
    (first.path / "seal.json").unlink()  # the state SIGKILL leaves in that window
    asyncio.run(
        runner.run_many([spec], model=ScriptedModel([reply("ANSWER: 1")]), resume=True, **kwargs)
    )
    assemble_evidence(
        [spec], bench.suite, bench.sampling, bench.assignment, bench.source, bench.store
    )
