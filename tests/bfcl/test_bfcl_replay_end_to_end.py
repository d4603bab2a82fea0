"""A single-call category and ``miss_func`` end to end: ``python -m xaytune`` with the
scripted model replaying BFCL's ground truth, then ``python -m xaytune.verify``.

``+experiment=bfcl_single_call suite=bfcl_parallel`` (every expected call in one
reply, listed in reverse: BFCL accepts any order) and ``+experiment=bfcl_multi_turn
suite=bfcl_multi_turn_miss_func`` (the held-out function called on the turn that
reveals it), 3 tasks x 3 seeds each, both candidates on the tool loop (a replayed
script cannot follow a planning turn). Every task scores 1, and each tree verifies
(the scorers re-run on the recorded answers give the same scores) without a warning.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _bfcl_support import ground_truth_calls, truth_calls

from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
SEEDS = (101, 102, 103)
COUNT = 3


def _python(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)  # XAYTUNE_SUITE_CACHE: the session's suites
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["XAYTUNE_CACHE_MODE"] = "off"
    env.pop("HYDRA_FULL_ERROR", None)
    env["COLUMNS"] = "160"
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _sampled(source: SuiteSource) -> set[str]:
    return {
        task_id
        for seed in SEEDS
        for task_id in record_assignment(
            source.suite, SeededSample(count=COUNT), seed=seed
        ).task_ids
    }


def _parallel_script(source: SuiteSource) -> dict[str, list[Any]]:
    script = {}
    for task_id in sorted(_sampled(source)):
        task = source.suite.task(task_id)
        calls = truth_calls(source.reference(task_id).answer["ground_truth"], "python")
        script[task.input["question"]] = [{"tool_calls": calls[::-1]}, "Done."]
    return script


def _multi_turn_script(source: SuiteSource) -> dict[str, list[Any]]:
    script = {}
    for task_id in sorted(_sampled(source)):
        task = source.suite.task(task_id)
        replies: list[Any] = []
        for calls in ground_truth_calls(task, source.reference(task_id)):
            if calls:
                replies.append({"tool_calls": calls})
            replies.append("Done.")
        script[task.input["question"]] = replies
    return script


def _scores(tree: Path, candidate: str, seed: int) -> list[float]:
    path = tree / "candidates" / candidate / f"seed-{seed}" / "evaluation" / "outcome"
    report = json.loads((path / "restricted" / "evaluation.restricted.json").read_text())
    (column,) = [c for c in report["task_columns"] if c["metric"] == "task_success"]
    return column["values"]


@pytest.mark.parametrize(
    ("experiment", "suite", "scripted"),
    [
        ("bfcl_single_call", "bfcl-parallel", _parallel_script),
        ("bfcl_multi_turn", "bfcl-multi-turn-miss-func", _multi_turn_script),
    ],
)
def test_replayed_ground_truth_scores_1_and_the_tree_verifies(
    bfcl_source, tmp_path: Path, experiment, suite, scripted
):
    source = bfcl_source(suite)
    (tmp_path / "script.json").write_text(json.dumps(scripted(source)))
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "replay.yaml").write_text(
        f"_target_: scripted\npath: {tmp_path / 'script.json'}\n"
    )
    run = _python(
        tmp_path,
        "xaytune",
        "--config-dir",
        "conf",
        f"+experiment={experiment}",
        f"suite={suite.replace('-', '_')}",
        "model=replay",
        f"sampling.count={COUNT}",
        "candidates.b.loop=tool-loop",
        "concurrency=4",
        "progress=false",
        "hydra.run.dir=tree",
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    tree = tmp_path / "tree"
    for candidate in ("bfcl-tool-loop", "bfcl-plan-then-act"):
        for seed in SEEDS:
            assert _scores(tree, candidate, seed) == [1.0] * COUNT, (candidate, seed)
    verified = _python(tmp_path, "xaytune.verify", str(tree))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "warning" not in verified.stdout + verified.stderr
