"""``python -m xaytune +experiment=bfcl_multi_turn`` end to end, with the scripted model.

The scripted model (``model: {_target_: scripted, path: ...}``, a config file of the
test's own project) replays BFCL's ground truth for every task: per user turn, one
reply with the turn's ground-truth calls, then "Done.". Five tasks per seed, three
seeds, both candidates on the tool loop (the experiment's B plans first, which a
replayed script cannot follow). Every task scores 1, except one task whose script
carries one wrong argument: it scores 0, and the checker's reason is in the restricted
report only. The tree verifies; its release bundle (``python -m xaytune.share``, which
scans for references itself) holds no reference string of the held-out file.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _bfcl_support import ground_truth_calls

from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
SEEDS = (101, 102, 103)
COUNT = 5


def _python(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)  # XAYTUNE_SUITE_CACHE: the session's suites
    env["PYTHONPATH"] = str(REPO_ROOT)
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


def _replies(turns: list[list[dict[str, Any]]]) -> list[Any]:
    replies: list[Any] = []
    for calls in turns:
        if calls:
            replies.append({"tool_calls": calls})
        replies.append("Done.")
    return replies


def _wrong(turns: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The ground truth with the first string argument of the first call changed."""
    wrong = copy.deepcopy(turns)
    for call in (call for turn in wrong for call in turn):
        for key, value in call["arguments"].items():
            if isinstance(value, str):
                call["arguments"][key] = value + "-wrong"
                return wrong
    raise AssertionError("no string argument to change")


@pytest.fixture(scope="module")
def finished(multi_turn: SuiteSource, tmp_path_factory) -> dict[str, Any]:
    project = tmp_path_factory.mktemp("bfcl-project")
    sampled = {
        task_id
        for seed in SEEDS
        for task_id in record_assignment(
            multi_turn.suite, SeededSample(count=COUNT), seed=seed
        ).task_ids
    }
    first = record_assignment(multi_turn.suite, SeededSample(count=COUNT), seed=SEEDS[0])
    perturbed = first.task_ids[0]
    script = {}
    for task_id in sorted(sampled):
        task = multi_turn.suite.task(task_id)
        turns = ground_truth_calls(task, multi_turn.reference(task_id))
        script[task.input["question"]] = _replies(_wrong(turns) if task_id == perturbed else turns)
    (project / "script.json").write_text(json.dumps(script))
    (project / "conf" / "model").mkdir(parents=True)
    (project / "conf" / "model" / "bfcl_replay.yaml").write_text(
        f"_target_: scripted\npath: {project / 'script.json'}\n"
    )
    run = _python(
        project,
        "xaytune",
        "--config-dir",
        "conf",
        "+experiment=bfcl_multi_turn",
        "model=bfcl_replay",
        f"sampling.count={COUNT}",
        "candidates.b.loop=tool-loop",
        "concurrency=4",
        "progress=false",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (tree,) = (project / "experiments" / "bfcl_multi_turn").iterdir()
    return {"tree": tree, "perturbed": perturbed, "sampled": sampled, "project": project}


def _restricted(tree: Path, candidate: str, seed: int) -> dict[str, Any]:
    path = tree / "candidates" / candidate / f"seed-{seed}" / "evaluation" / "outcome"
    return json.loads((path / "restricted" / "evaluation.restricted.json").read_text())


def test_replayed_ground_truth_scores_1_and_a_wrong_call_0_with_its_reason(finished):
    tree, perturbed = finished["tree"], finished["perturbed"]
    for candidate in ("bfcl-tool-loop", "bfcl-plan-then-act"):
        for seed in SEEDS:
            report = _restricted(tree, candidate, seed)
            (column,) = [c for c in report["task_columns"] if c["metric"] == "task_success"]
            scores = dict(zip(report["task_ids"], column["values"], strict=True))
            assert len(scores) == COUNT
            expected = {task_id: 0 if task_id == perturbed else 1 for task_id in scores}
            assert scores == expected, (candidate, seed)
            reasons = {r["task_id"]: r["reason"] for r in report.get("scorer_reasons", [])}
            if perturbed in scores:
                assert list(reasons) == [perturbed]
                assert reasons[perturbed].startswith("multi_turn:")
            else:
                assert reasons == {}
    # The reason is restricted: no released evaluation report carries it.
    released = tree / "candidates" / "bfcl-tool-loop" / f"seed-{SEEDS[0]}" / "evaluation"
    assert "multi_turn:" not in (released / "outcome" / "evaluation.json").read_text()


def test_the_tree_verifies(finished):
    verified = _python(finished["project"], "xaytune.verify", str(finished["tree"]))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # The scorer's, the environment's and the adapter's code are the code here.
    assert "warning" not in verified.stdout + verified.stderr


def test_no_reference_string_is_in_a_released_file(finished, multi_turn: SuiteSource):
    bundle = finished["project"] / "shared"
    shared = _python(
        finished["project"], "xaytune.share", str(finished["tree"]), "--out", str(bundle)
    )
    assert shared.returncode == 0, shared.stdout + shared.stderr
    secrets = set()
    for task_id in finished["sampled"]:
        for turn in multi_turn.reference(task_id).answer["turns"]:
            secrets.update(turn)  # each ground-truth call, as the held-out file holds it
    assert len(secrets) > 20
    released = [p for p in bundle.rglob("*") if p.is_file()]
    # The tree's own released files (outside the evidence, without "restricted").
    released += [
        p
        for p in finished["tree"].rglob("*")
        if p.is_file() and "restricted" not in str(p) and "evidence" not in p.parts
    ]
    assert any(p.name == "report.json" for p in released)
    for path in released:
        text = path.read_text(errors="replace")
        leaked = [secret for secret in secrets if secret in text]
        assert not leaked, (path, leaked[:3])
