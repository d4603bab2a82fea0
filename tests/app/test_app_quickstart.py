"""The quickstart, exactly as the README runs it: exit 0, the table, the whole tree."""

from __future__ import annotations

import json
import re

import pytest

from xaytune.harness.evidence.attempt_file import AttemptParts

pytestmark = pytest.mark.slow

CANDIDATES = ("calculator", "mental")
SEEDS = (101, 102, 103)
SHA = re.compile(r"sha256:[0-9a-f]{64}")


def test_quickstart_prints_the_table_and_the_report_path(quickstart):
    result = quickstart.result
    assert result.returncode == 0, result.describe()
    assert "relation:" in result.stdout
    assert "exploratory" in result.stdout
    assert "task_success" in result.stdout and "total_tokens" in result.stdout
    report_md = quickstart.out / "comparison" / "report.md"
    assert f"report: {report_md}" in result.stdout
    assert "Traceback" not in result.stderr


def test_quickstart_writes_the_documented_tree(quickstart):
    out = quickstart.out
    assert out.parent.name == "quickstart" and out.parent.parent.name == "experiments"
    for name in ("config.yaml", "overrides.yaml", "hydra.yaml"):
        assert (out / ".hydra" / name).is_file(), name
    for candidate in CANDIDATES:
        assert (out / "candidates" / candidate / "candidate.json").is_file()
        for seed in SEEDS:
            replicate = out / "candidates" / candidate / f"seed-{seed}"
            assert (replicate / "evidence").is_dir()
            assert (replicate / "evaluation").is_dir()
            assert (replicate / "evaluation" / "outcome" / "evaluation.json").is_file()
            assert (replicate / "replicate.restricted.json").is_file()
            assert (replicate / "evidence" / "xaytune-store.json").is_file()
            # Every assigned task has exactly one attempt, sealed: one file
            # tasks/<position>/001.jsonl that opens with the spec it ran.
            tasks = sorted((replicate / "evidence" / "tasks").iterdir())
            assert len(tasks) == 20
            for task in tasks:
                assert re.fullmatch(r"\d{6}", task.name), task
                assert [p.name for p in task.iterdir()] == ["001.jsonl"], task
                attempt = task / "001.jsonl"
                parts = AttemptParts.of(attempt.read_bytes(), str(attempt))
                assert isinstance(json.loads(parts.spec), dict), attempt
                assert parts.seal is not None and not parts.tail, attempt
            assert len(list((replicate / "evidence" / "published").glob("*.intoto.json"))) == 1
    assert sorted(p.name for p in (out / "candidates").iterdir()) == sorted(CANDIDATES)
    comparison = out / "comparison"
    for name in ("report.json", "report.restricted.json", "report.md", "report.html"):
        assert (comparison / name).is_file(), name
    pngs = list(comparison.glob("*.png"))
    assert pngs and all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)


def test_quickstart_manifest_records_every_fingerprint(quickstart):
    manifest = quickstart.manifest()
    assert manifest["complete"] is True
    assert manifest["experiment"] == "quickstart"
    config = manifest["config"]
    assert config["experiment"]["name"] == "quickstart"
    assert config["seeds"] == list(SEEDS)
    assert set(config["candidates"]) == {"a", "b"}
    assert "hydra" not in config

    assert SHA.fullmatch(manifest["suite"]["digest"])
    assert manifest["suite"]["name"] == "arith-tools"

    candidates = manifest["candidates"]
    assert {c["name"] for c in candidates.values()} == set(CANDIDATES)
    for label, candidate in candidates.items():
        assert SHA.fullmatch(candidate["harness_fingerprint"])
        on_disk = json.loads(
            (quickstart.out / "candidates" / candidate["name"] / "candidate.json").read_text()
        )
        assert on_disk["label"] == label
        assert on_disk["harness_fingerprint"] == candidate["harness_fingerprint"]
    assert candidates["a"]["harness_fingerprint"] != candidates["b"]["harness_fingerprint"]

    replicates = manifest["replicates"]
    assert sorted((r["path"], r["seed"]) for r in replicates) == sorted(
        (f"candidates/{c}/seed-{s}", s) for c in CANDIDATES for s in SEEDS
    )
    evaluators = set()
    for replicate in replicates:
        assert SHA.fullmatch(replicate["assignment_digest"])
        assert len(replicate["evaluator_fingerprints"]) == 1
        evaluators.update(replicate["evaluator_fingerprints"])
        assert len(replicate["evidence_digests"]) == 1
        assert all(SHA.fullmatch(d) for d in replicate["evidence_digests"])
    assert len(evaluators) == 1, "both candidates are scored by one evaluator"
    # Paired design: both candidates got the same assignment for each seed.
    by_seed: dict[int, set[str]] = {}
    for replicate in replicates:
        by_seed.setdefault(replicate["seed"], set()).add(replicate["assignment_digest"])
    assert all(len(digests) == 1 for digests in by_seed.values())
    assert len({next(iter(d)) for d in by_seed.values()}) == len(SEEDS)

    reports = manifest["reports"]
    assert set(reports) >= {
        "comparison/report.json",
        "comparison/report.restricted.json",
        "comparison/report.md",
        "comparison/report.html",
    }
    assert all(SHA.fullmatch(d) for d in reports.values())

    versions = manifest["versions"]
    assert {"python", "xaytune", "hydra-core", "omegaconf", "pydantic"} <= set(versions)
    assert isinstance(manifest["timing_environment"], str) and manifest["timing_environment"]


def test_quickstart_report_is_the_tables_comparison(quickstart):
    report = quickstart.report()
    assert report["claim"] == "exploratory"
    assert report["relation"] in quickstart.result.stdout
    assert report["seeds"] == list(SEEDS)
    assert report["comparability"]["comparable"] is True
    assert {report["a"]["name"], report["b"]["name"]} == set(CANDIDATES)
    for objective in report["spec"]["objectives"]:
        metric = report["metrics"][objective["metric"]]
        assert [d["seed"] for d in metric["differences"]] == list(SEEDS)
        assert metric["verdict"] in {"favors-a", "favors-b", "inconclusive"}


def test_verify_accepts_the_untouched_tree(quickstart, verify):
    result = verify(quickstart.out)
    assert result.returncode == 0, result.describe()
    assert result.stdout.startswith("ok:")
    assert "6 evidence stores" in result.stdout and "6 published subjects" in result.stdout


def test_quickstart_report_carries_calibration_and_power(quickstart):
    # The table, report.json and report.md carry the same A/A and power figures.
    stdout = quickstart.result.stdout
    assert "A/A rate" in stdout and "80% power at a true diff" in stdout
    assert "calibration: If A and B were the same harness (A/A)" in stdout
    assert "power, task_success: k·se" in stdout
    report = quickstart.report()
    calibration = report["calibration"]
    assert calibration["measured"] is None  # comparison.calibrate defaults to false
    assert calibration["t_rate"] == pytest.approx(0.18350341907227397, rel=1e-12)
    assert [o["metric"] for o in calibration["objectives"]] == ["task_success", "total_tokens"]
    for objective in report["spec"]["objectives"]:
        descriptive = report["metrics"][objective["metric"]]["descriptive"]
        power = descriptive["power"]
        # A true difference of exactly min_effect is called under half the time.
        assert power["power_at_min_effect"] < 0.5
        assert power["planning_effect"] == 2 * objective["min_effect"]
        assert power["difference_for_power"] > objective["min_effect"]
        assert power["replicates_for_power"] >= 3
        assert "minimum_detectable_difference" not in descriptive
    markdown = (quickstart.out / "comparison" / "report.md").read_text()
    assert "## Calibration: what the rule says when there is nothing to find" in markdown
    assert "  - power: k·se = " in markdown
    assert "replicates for 80% power at 2·min_effect" in markdown
    assert "minimum detectable difference" not in markdown
