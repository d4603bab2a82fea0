"""A multirun seed sweep (joblib launcher: one process per seed) gives the same
comparison as the single-process quickstart, written at the sweep root; a sweep
never shares its directory with another one."""

from __future__ import annotations

import datetime
import json
import re

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("hydra_plugins.hydra_joblib_launcher")

# Measured wall time: differs between any two runs, so never compared.
TIME_UNIT = "s"


def _replicate_key(path: str) -> tuple[str, int]:
    # "candidates/<name>/seed-<s>", under "seed-<s>/" in a sweep.
    found = re.search(r"candidates/([^/]+)/seed-(\d+)$", path)
    assert found, path
    return found[1], int(found[2])


def _replicates(manifest: dict) -> dict[tuple[str, int], dict]:
    return {_replicate_key(r["path"]): r for r in manifest["replicates"]}


def test_joblib_sweep_equals_the_single_process_run(
    tmp_path, xaytune, verify, output_dir, quickstart
):
    result = xaytune(
        tmp_path,
        "-m",
        "+experiment=quickstart",
        "seed=101,102,103",
        "hydra/launcher=joblib",
        "progress=false",
    )
    assert result.returncode == 0, result.describe()
    assert "relation:" in result.stdout
    assert "Traceback" not in result.stderr

    root = output_dir(tmp_path, "quickstart")
    for seed in (101, 102, 103):
        assert (root / f"seed-{seed}" / ".hydra" / "overrides.yaml").is_file()
        assert (root / f"seed-{seed}" / "candidates").is_dir()
    report_path = root / "comparison" / "report.json"
    assert report_path.is_file(), sorted(p.name for p in root.iterdir())
    assert "report:" in result.stdout and "comparison/report.md" in result.stdout
    sweep = json.loads(report_path.read_text())
    single = quickstart.report()

    assert sweep["relation"] == single["relation"]
    assert sweep["seeds"] == single["seeds"] == [101, 102, 103]
    assert sweep["a"] == single["a"] and sweep["b"] == single["b"]
    assert sweep["comparability"]["comparable"] is single["comparability"]["comparable"] is True
    assert set(sweep["metrics"]) == set(single["metrics"])
    compared = 0
    for name, metric in single["metrics"].items():
        other = sweep["metrics"][name]
        assert other["unit"] == metric["unit"]
        if metric["unit"] == TIME_UNIT:
            continue
        compared += 1
        assert other["differences"] == metric["differences"], name
        assert other["mean"] == metric["mean"], name
        assert other["verdict"] == metric["verdict"], name
        for side in ("a", "b"):
            assert other[side]["mean"] == metric[side]["mean"], (name, side)
            assert other[side]["runs"] == metric[side]["runs"], (name, side)
    assert compared >= 10  # tokens, turns, tool calls, task_success, ...

    # The fingerprints that pin what was run and how it was scored.
    sweep_manifest = json.loads((root / "manifest.json").read_text())
    single_manifest = quickstart.manifest()
    assert sweep_manifest["complete"] is True
    assert sweep_manifest["candidates"] == single_manifest["candidates"]
    assert sweep_manifest["suite"]["digest"] == single_manifest["suite"]["digest"]
    ours, theirs = _replicates(sweep_manifest), _replicates(single_manifest)
    assert set(ours) == set(theirs) and len(ours) == 6
    for key, replicate in theirs.items():
        assert ours[key]["assignment_digest"] == replicate["assignment_digest"], key
        assert ours[key]["evaluator_fingerprints"] == replicate["evaluator_fingerprints"], key

    # Each job's own manifest is complete once its replicates are, with their digests.
    for seed in (101, 102, 103):
        job = json.loads((root / f"seed-{seed}" / "manifest.json").read_text())
        assert job["complete"] is True
        assert {r["seed"] for r in job["replicates"]} == {seed} and len(job["replicates"]) == 2
        assert any("/evaluation/" in name for name in job["reports"])
        assert all(name.startswith("candidates/") for name in job["reports"])

    # The sweep root verifies as a whole (every job's evidence, every report digest).
    verified = verify(root, in_process=True)
    assert verified.returncode == 0, verified.describe()
    assert "6 evidence stores" in verified.stdout


def test_a_sweep_whose_timestamp_is_taken_gets_a_directory_of_its_own(tmp_path, xaytune):
    # Another sweep of the same experiment holds this second's directory (and those of
    # the next two minutes): this one's jobs and comparison all go to <timestamp>-2.
    base = tmp_path / "experiments" / "quickstart"
    now = datetime.datetime.now()
    taken = [
        base / (now + datetime.timedelta(seconds=s)).strftime("%Y-%m-%d_%H-%M-%S")
        for s in range(-1, 120)
    ]
    for directory in taken:
        directory.mkdir(parents=True)
    result = xaytune(
        tmp_path,
        "-m",
        "+experiment=quickstart",
        "seed=101,102",
        "sampling.count=3",
        "progress=false",
    )
    assert result.returncode == 0, result.describe()
    assert all(not any(directory.iterdir()) for directory in taken)
    (sweep,) = [d for d in base.iterdir() if d not in taken]
    assert sweep.name.endswith("-2") and sweep.name[:-2] in {d.name for d in taken}
    assert {p.name for p in sweep.iterdir()} >= {"seed-101", "seed-102", "comparison"}
    assert str(sweep.relative_to(tmp_path) / "comparison" / "report.md") in result.stdout


def test_a_seed_sweep_implies_its_seeds(tmp_path, xaytune, verify, output_dir):
    result = xaytune(
        tmp_path, "-m", "+experiment=quickstart", "seed=1,2,3", "sampling.count=4", "progress=false"
    )
    assert result.returncode == 0, result.describe()
    root = output_dir(tmp_path, "quickstart")
    report = json.loads((root / "comparison" / "report.json").read_text())
    assert report["seeds"] == [1, 2, 3]
    assert verify(root).returncode == 0


@pytest.mark.parametrize(
    "sweep", ["candidate@candidates.b=mental,terse", "model.latency_s=0,0.001", "seeds=[1,2],[3,4]"]
)
def test_a_sweep_over_anything_but_seeds_is_refused_before_anything_runs(tmp_path, xaytune, sweep):
    result = xaytune(tmp_path, "-m", "+experiment=quickstart", "seed=1,2,3", sweep)
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: sweep-unsupported: ") and sweep in line
    assert list(tmp_path.iterdir()) == []
