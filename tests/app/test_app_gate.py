"""CI gate: ``comparison.fail_on`` turns a relation into exit code 1."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

# The quickstart on 6 tasks per seed: calculator solves more, mental spends far fewer
# tokens, so the relation is a trade-off (checked from the report, not assumed).
SMALL = ("+experiment=quickstart", "sampling.count=6", "progress=false")


def _relation(out) -> str:
    return json.loads((out / "comparison" / "report.json").read_text())["relation"]


def test_gate_on_the_relation_exits_1(tmp_path, xaytune, output_dir):
    result = xaytune(tmp_path, *SMALL, "comparison.fail_on=[trade-off]")
    out = output_dir(tmp_path, "quickstart")
    assert _relation(out) == "trade-off"
    assert result.returncode == 1, result.describe()
    gate = [line for line in result.stderr.splitlines() if line.startswith("gate:")]
    assert len(gate) == 1 and "trade-off" in gate[0], result.describe()
    assert "Traceback" not in result.stderr
    # The gate fails the process, not the run: the table and the tree are complete.
    assert "relation: trade-off" in result.stdout
    assert json.loads((out / "manifest.json").read_text())["complete"] is True


def test_gate_on_another_relation_exits_0(tmp_path, xaytune, output_dir):
    result = xaytune(tmp_path, *SMALL, "comparison.fail_on=[favors-b,not-comparable]")
    assert _relation(output_dir(tmp_path, "quickstart")) == "trade-off"
    assert result.returncode == 0, result.describe()
    assert "gate:" not in result.stderr
