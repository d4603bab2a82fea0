"""Issue 19: SIGKILLs at random points of run, resume and report leave no torn file;
every resume continues the tree, which verifies and gives the uninterrupted verdicts.
The full campaign (30 kills) is ``python scripts/kill_campaign.py``; this runs three."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "kill_campaign.py"


def test_three_sigkills_leave_a_tree_that_verifies_with_the_same_verdicts(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--kills", "3", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("kills=")]
    figures = dict(pair.split("=", 1) for pair in line.split())
    assert figures["kills"] == "3" and figures["torn"] == "0"
    assert figures["verified"] == "true" and figures["verdicts_equal"] == "true"
