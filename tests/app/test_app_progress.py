"""Progress without a terminal: log lines per replicate, a heartbeat, no HTTP noise."""

from __future__ import annotations

import logging
import time

import pytest

from xaytune.app import progress as progress_module
from xaytune.harness.evidence.store import Outcome, Spend
from xaytune.harness.runner import AttemptResult


def attempt(tokens: int, *, outcome: bool = True) -> AttemptResult:
    spend = Spend()
    spend.input_tokens = tokens
    return AttemptResult(
        spec_fingerprint="sha256:x",
        task_id="t",
        attempt=1,
        status="complete" if outcome else "partial",
        outcome=Outcome(terminal="answer", answer="1") if outcome else None,
        final_text=None,
        spend=spend,
        path=None,
        seal_digest=None,
    )


def test_without_a_terminal_progress_is_logged_with_a_heartbeat(monkeypatch, caplog):
    monkeypatch.setattr(progress_module, "HEARTBEAT_S", 0.05)
    caplog.set_level(logging.INFO, logger="xaytune.progress")
    with progress_module.replicate_progress("calc seed 1", total=3, enabled=True) as advance:
        advance(attempt(10))
        advance(attempt(5, outcome=False))
        time.sleep(0.2)
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0] == "replicate calc seed 1: started, 3 tasks"
    assert any(line.startswith("replicate calc seed 1: running 1/3 tasks, 1 errors, 15 tokens")
               for line in lines[1:-1])  # fmt: skip
    assert lines[-1].startswith("replicate calc seed 1: finished 1/3 tasks, 1 errors, 15 tokens")


@pytest.mark.slow
def test_the_quickstart_without_a_terminal_prints_per_replicate_lines(tmp_path, xaytune):
    result = xaytune(tmp_path, "+experiment=quickstart", "sampling.count=4")
    assert result.returncode == 0, result.describe()
    output = result.stdout + result.stderr
    for name in ("calculator", "mental"):
        for seed in (101, 102, 103):
            assert f"replicate {name} seed {seed}: started, 4 tasks" in output
            assert f"replicate {name} seed {seed}: finished 4/4 tasks" in output
