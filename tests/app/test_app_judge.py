"""The judge experiment end to end: quality on a 1-5 scale, with the judge's spread."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_judge_experiment_reports_quality_with_judge_spread(tmp_path, xaytune, verify, output_dir):
    result = xaytune(tmp_path, "+experiment=judge", "sampling.count=4", "progress=false")
    assert result.returncode == 0, result.describe()
    assert "quality" in result.stdout and "relation:" in result.stdout
    out = output_dir(tmp_path, "judge")
    report = json.loads((out / "comparison" / "report.json").read_text())
    assert report["claim"] == "exploratory"
    assert report["comparability"]["comparable"] is True
    quality = report["metrics"]["quality"]
    assert quality["verdict"] in {"favors-a", "favors-b", "inconclusive"}
    for side in ("a", "b"):
        summary = quality[side]
        assert summary["judge"] is True
        assert summary["replicates"] == 3
        # Two judge repeats per task: the spread is measured, never unknown or imputed.
        assert summary["judge_spread"] is not None and summary["judge_spread"] >= 0
        assert summary["execution_se"] is not None
        for run in summary["runs"]:
            assert run["n_tasks"] == 4
            assert run["judge_spread"] is not None
            assert 1 <= run["value"] <= 5
    # The judge's exchanges are kept, in the restricted reports only.
    restricted = list(out.glob("candidates/*/seed-*/evaluation/judge/restricted/*.json"))
    assert len(restricted) == 6
    manifest = json.loads((out / "manifest.json").read_text())
    fingerprints = {f for r in manifest["replicates"] for f in r["evaluator_fingerprints"]}
    assert len(fingerprints) == 2  # the outcome evaluator and the judge, on every replicate
    verified = verify(out, in_process=True)
    assert verified.returncode == 0, verified.describe()
