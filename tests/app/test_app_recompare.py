"""``python -m xaytune.compare``: a finished tree compared again, verified, never
overwritten; an edit to either comparison is refused by verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xaytune.core.canonical import canonical_bytes, sha256_digest

pytestmark = pytest.mark.slow


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


def test_comparing_again_with_another_min_effect_writes_a_second_verified_comparison(
    quickstart_copy: Path, verify, cli_compare
) -> None:
    original = snapshot(quickstart_copy / "comparison")
    result = cli_compare(quickstart_copy, "comparison.objectives.0.min_effect=0.2")
    assert result.returncode == 0, result.describe()
    (again,) = sorted(quickstart_copy.glob("comparison-*"))
    assert snapshot(quickstart_copy / "comparison") == original  # never overwritten
    released = json.loads((again / "report.json").read_text())
    thresholds = {o["metric"]: o["min_effect"] for o in released["spec"]["objectives"]}
    assert thresholds == {"task_success": 0.2, "total_tokens": 50.0}
    manifest = json.loads((quickstart_copy / "manifest.json").read_text())
    (entry,) = manifest["recomparisons"]
    assert entry["path"] == again.name
    assert entry["overrides"] == ["comparison.objectives.0.min_effect=0.2"]
    assert f"{again.name}/report.json" in manifest["reports"]
    checked = verify(quickstart_copy, in_process=True)
    assert checked.returncode == 0, checked.describe()


@pytest.mark.parametrize("which", ["comparison", "again"])
def test_an_edit_to_either_comparison_is_refused(quickstart_copy: Path, verify, cli_compare, which):
    assert cli_compare(quickstart_copy, "comparison.k=3").returncode == 0
    (again,) = sorted(quickstart_copy.glob("comparison-*"))
    directory = quickstart_copy / "comparison" if which == "comparison" else again
    report = directory / "report.json"
    edited = report.read_bytes().replace(b'"favors-a"', b'"favors-b"', 1)
    assert edited != report.read_bytes()
    report.write_bytes(edited)
    # The attacker keeps the manifest's digest in step: the recompute still refuses it.
    manifest_path = quickstart_copy / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["reports"][str(report.relative_to(quickstart_copy))] = sha256_digest(edited)
    manifest_path.write_bytes(canonical_bytes(manifest) + b"\n")
    checked = verify(quickstart_copy, in_process=True)
    assert checked.returncode == 1
    assert f"{report}: report-mismatch" in checked.stdout, checked.stdout


def test_a_recorded_recomparison_config_edited_after_the_fact_is_refused(
    quickstart_copy: Path, verify, cli_compare
) -> None:
    assert cli_compare(quickstart_copy, "comparison.objectives.0.min_effect=0.5").returncode == 0
    manifest_path = quickstart_copy / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["recomparisons"][0]["comparison"]["objectives"][0]["min_effect"] = 0.05
    manifest_path.write_bytes(canonical_bytes(manifest) + b"\n")
    checked = verify(quickstart_copy, in_process=True)
    assert checked.returncode == 1 and "report-mismatch" in checked.stdout, checked.stdout


def test_an_unrecorded_comparison_directory_is_refused(quickstart_copy: Path, verify) -> None:
    (quickstart_copy / "comparison-made-up").mkdir()
    checked = verify(quickstart_copy, in_process=True)
    assert checked.returncode == 1 and "unlisted-comparison" in checked.stdout


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        (["candidates.a.max_turns=3"], "bad-override"),
        (["+comparison.extra=1"], "bad-override"),
        (["comparison.k=-1"], "bad-config"),
        (["comparison.objectives=[{metric:task_success}]"], "bad-config"),
        (["comparison.k=[["], "bad-override"),
    ],
)
def test_a_bad_recomparison_is_one_line_and_changes_nothing(
    quickstart_copy: Path, cli_compare, overrides, reason
) -> None:
    before = snapshot(quickstart_copy)
    result = cli_compare(quickstart_copy, *overrides)
    assert result.returncode == 2, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {reason}: "), result.describe()
    assert snapshot(quickstart_copy) == before


def test_a_tree_that_does_not_verify_is_not_compared_again(quickstart_copy: Path, cli_compare):
    record = next(quickstart_copy.rglob("replicate.restricted.json"))
    record.write_bytes(record.read_bytes().replace(b'"seed":101', b'"seed":1', 1))
    result = cli_compare(quickstart_copy, "comparison.k=3")
    assert result.returncode == 2 and "error: tree-does-not-verify" in result.stderr
    assert not list(quickstart_copy.glob("comparison-*"))
