"""Issue 19, attack 1: a selective re-roll of the challenger's failures.

Recipe: delete the seal line of every attempt that B failed, remove B's evaluation,
published evidence and replicate record, then ``resume=`` the tree so those tasks run
again. Before this fix the stripped attempts were recovered partial and re-run, B's
success rose and ``verify`` said ok. Now the seal journal lists every committed seal:
``verify`` names each stripped one (``seal-missing``), and a resume gives back the
committed seals instead of re-running anything, so the verdict cannot move.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _strip_failures(tree: Path, label: str) -> list[Path]:
    """The attacker's edits: strip the seals of ``label``'s failed attempts, drop its
    evaluation, published evidence and replicate record. Returns the stripped files."""
    stripped = []
    for replicate in sorted((tree / "candidates" / label).glob("seed-*")):
        record = json.loads((replicate / "replicate.restricted.json").read_bytes())
        failed = [
            o["position"] for o in record["task_observations"]["task_success"] if not o["value"]
        ]
        for position in failed:
            path = replicate / "evidence" / "tasks" / f"{position:06d}" / "001.jsonl"
            lines = path.read_bytes().splitlines(keepends=True)
            assert lines[-1].startswith(b'{"attempt":')  # the seal line
            path.write_bytes(b"".join(lines[:-1]))
            stripped.append(path)
        shutil.rmtree(replicate / "evaluation")
        shutil.rmtree(replicate / "evidence" / "published")
        (replicate / "replicate.restricted.json").unlink()
    assert stripped
    return stripped


def test_a_selective_reroll_is_refused_by_verify_and_undone_by_resume(
    quickstart_copy, xaytune, verify
):
    tree = quickstart_copy
    original = json.loads((tree / "comparison" / "report.json").read_bytes())
    label = original["b"]["name"]
    stripped = _strip_failures(tree, label)

    result = verify(tree)
    assert result.returncode != 0, result.describe()
    assert "seal-missing" in result.stdout + result.stderr
    for path in stripped:
        assert str(path) in result.stdout + result.stderr  # each stripped attempt named

    resumed = xaytune(tree.parent, "+experiment=quickstart", "progress=false", f"resume={tree}")
    assert resumed.returncode in (0, 1), resumed.describe()
    for path in stripped:
        assert b'"recovered":true' not in path.read_bytes()  # given back, not re-run
        assert not (path.parent / "002.jsonl").exists()
    after = json.loads((tree / "comparison" / "report.json").read_bytes())
    assert after["relation"] == original["relation"]
    assert after["metrics"] == original["metrics"]  # every number, not just the words
    assert verify(tree).returncode == 0
