"""SIGKILL mid-run: every seal verifies, every other attempt is open, nothing is torn."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _fixtures_run import read_attempt

from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence.attempt_file import (
    SEAL_PREFIX,
    AttemptParts,
    attempt_name,
    split_attempt,
)
from xaytune.harness.evidence.trajectory import verify_chain
from xaytune.harness.spec import AgentExecutionSpec

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


def _sealed_count(store: Path) -> int:
    """How many attempt files under ``store`` end with a whole seal line."""
    count = 0
    for path in store.glob("tasks/*/*.jsonl"):
        with contextlib.suppress(EvidenceError):  # claimed, its record not yet written
            count += split_attempt(path.read_bytes(), str(path)).sealed
    return count


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
        while _sealed_count(store) < SEALS_BEFORE_KILL and time.monotonic() < deadline:
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

    # no temporary or staged file anywhere: a seal is a line appended to its attempt
    assert not [p for p in store.rglob("*") if p.name.startswith(".")]
    sealed, opened, empty, waiting = [], [], [], []
    for task_dir in sorted((store / "tasks").iterdir()):
        names = sorted(path.name for path in task_dir.iterdir())
        # nothing but attempt files, numbered from 001 (nothing else is ever created)
        assert names == [attempt_name(n) for n in range(1, len(names) + 1)], names
        for name in names:
            attempt = task_dir / name
            data = attempt.read_bytes()
            try:
                layout = split_attempt(data, str(attempt))
            except EvidenceError as error:
                # killed between claiming the file and writing its record: nothing
                # was spent or recorded, and nothing can be sealed
                assert error.reason == "bad-record"
                if b"\n" in data:  # its spec line, if whole, is a spec
                    AgentExecutionSpec.model_validate_json(data[: data.index(b"\n")])
                empty.append(attempt)
                continue
            parts = AttemptParts.of(data, str(attempt))
            # the spec line is whole and is the fingerprint its record names
            spec = AgentExecutionSpec.model_validate_json(parts.spec)
            assert spec.fingerprint == sha256_digest(parts.spec[:-1])
            record = json.loads(parts.record)  # whole: written before any event
            assert record["attempt"] == int(name[:3])
            assert record["attribution"]["spec_fingerprint"] == spec.fingerprint
            genesis = sha256_digest(parts.record)
            if layout.sealed:
                # sealed: the seal line is whole and every byte before it verifies
                seal, events = read_attempt(attempt)
                assert seal["recovered"] is False  # so no torn tail was tolerated
                assert seal["status"] == "complete" and events[-1]["type"] == "end"
                sealed.append(attempt)
            else:
                # open: no seal line; its whole lines chain from its record, and a
                # torn last line is left out
                assert parts.seal is None
                assert not any(line.startswith(SEAL_PREFIX) for line in parts.events)
                facts = verify_chain(
                    data,
                    genesis=genesis,
                    where=str(attempt),
                    start=layout.record_end,
                    allow_torn_tail=True,
                )
                ended = facts.last_event is not None and facts.last_event["type"] == "end"
                # an attempt that ended waits for its group commit outside its slot
                (waiting if ended else opened).append(attempt)
    assert len(sealed) >= SEALS_BEFORE_KILL
    assert opened or empty or waiting, "no attempt was in flight when the child was killed"
    assert len(opened) + len(empty) <= 8  # at most the concurrency limit is in its loop


def test_resume_after_a_kill_between_end_event_and_seal(tmp_path: Path) -> None:
    import asyncio
    from dataclasses import replace

    from _fixtures_run import Bench, ScriptedModel, make_source, reply

    from xaytune.harness import Harness, HarnessRunner, Toolbox
    from xaytune.harness.evidence import assemble_evidence

    bench = Bench(make_source(tmp_path / "suite", count=4), tmp_path / "store", count=1)
    harness = Harness(name="plain", system_prompt="End with ANSWER: <n>.")
    spec = bench.spec(harness, tools=())
    runner = HarnessRunner()
    kwargs = {"toolbox": Toolbox.default(), "authorized_tools": frozenset()}
    first = runner.run(spec, model=ScriptedModel([reply("ANSWER: 1")]), **kwargs)
    parts = AttemptParts.of(first.path.read_bytes(), str(first.path))
    assert parts.seal is not None
    # the state SIGKILL leaves in that window: the seal line is not there
    first.path.write_bytes(replace(parts, seal=None).join())
    asyncio.run(
        runner.run_many([spec], model=ScriptedModel([reply("ANSWER: 1")]), resume=True, **kwargs)
    )
    assemble_evidence(
        [spec], bench.suite, bench.sampling, bench.assignment, bench.source, bench.store
    )
