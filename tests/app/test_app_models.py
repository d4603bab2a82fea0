"""Issue 17: several models (quickstart_models: the simulator slipping at 4%, 8%, 16%)."""

from __future__ import annotations

import json
import shutil

import pytest

from xaytune.core.canonical import canonical_bytes
from xaytune.core.harness_comparison import ComparisonSpec, ObjectiveMetric, compare
from xaytune.experiment.config import validate_config
from xaytune.experiment.parts import resolve_candidates
from xaytune.experiment.source import load_source
from xaytune.experiment.tree.gather import gather_candidates

pytestmark = pytest.mark.slow

MODELS = ("careful", "sloppy", "usual")


@pytest.fixture(scope="module")
def models_run(tmp_path_factory, xaytune):
    cwd = tmp_path_factory.mktemp("models")
    tree = cwd / "run"
    result = xaytune(
        cwd, "+experiment=quickstart_models", "progress=false", f"hydra.run.dir={tree}"
    )
    assert result.returncode == 0, result.describe()
    return tree, result


def test_each_model_is_a_run_and_the_summary_reads_their_verdicts(models_run, verify):
    tree, result = models_run
    summary = json.loads((tree / "comparison" / "models.json").read_bytes())
    assert summary["models"] == list(MODELS)
    for model in MODELS:
        report = json.loads((tree / "models" / model / "comparison" / "report.json").read_bytes())
        assert summary["relations"][model] == {"b": report["relation"]}
        for row in summary["rows"]:
            assert row["verdicts"][model] == report["metrics"][row["metric"]]["verdict"]
        manifest = json.loads((tree / "models" / model / "manifest.json").read_bytes())
        assert manifest["config"]["model"]["mental_error_base"] == {
            "careful": 0.04, "usual": 0.08, "sloppy": 0.16,
        }[model]  # fmt: skip
    for row in summary["rows"]:
        verdicts = list(row["verdicts"].values())
        assert row["favors_challenger"] == verdicts.count("favors-b")
        assert row["favors_baseline"] == verdicts.count("favors-a")
    assert "Across 3 models: challengers against calculator" in result.stdout
    # Each model's page names its model: the label, then what sets it apart (0.08 is
    # the simulator's default, so "usual" is the plain simulator).
    titles = {
        "careful": "careful: simulated (mental_error_base 0.04)",
        "sloppy": "sloppy: simulated (mental_error_base 0.16)",
        "usual": "usual: simulated",
    }
    for model, title in titles.items():
        page = (tree / "models" / model / "comparison" / "report.html").read_text()
        assert f'<p class="model" id="model">Model: <strong>{title}</strong></p>' in page
    assert verify(tree).returncode == 0


def test_models_are_never_compared_with_each_other(models_run):
    # The same harness under two models: condition C4 (execution facets) fails, so the
    # relation is not-comparable, with the reason shown; xaytune never makes it.
    tree, _ = models_run
    manifest = json.loads((tree / "models" / "careful" / "manifest.json").read_bytes())
    cfg = resolve_candidates(validate_config(manifest["config"]))
    careful = gather_candidates(tree / "models" / "careful")["a"]
    sloppy = gather_candidates(tree / "models" / "sloppy")["a"]
    spec = ComparisonSpec(
        objectives=(ObjectiveMetric(metric="task_success", direction="maximize", min_effect=0),)
    )
    report = compare(careful, sloppy, spec, load_source(cfg).suite)
    assert report.relation == "not-comparable"
    failed = [f.condition for f in report.comparability.failures]
    assert "C4" in failed


def test_an_edited_models_summary_is_refused(models_run, tmp_path, verify):
    copy = tmp_path / "copy"
    shutil.copytree(models_run[0], copy)
    path = copy / "comparison" / "models.json"
    summary = json.loads(path.read_bytes())
    summary["rows"][0]["favors_challenger"] = 3
    path.write_bytes(canonical_bytes(summary) + b"\n")
    result = verify(copy, in_process=True)
    assert result.returncode != 0
    assert f"{path}: report-mismatch" in result.stdout


def test_resuming_a_finished_models_run_runs_nothing_and_verifies(
    models_run, tmp_path, xaytune, verify
):
    copy = tmp_path / "copy"
    shutil.copytree(models_run[0], copy)
    before = sorted(p.name for p in copy.rglob("*.jsonl"))
    result = xaytune(tmp_path, "+experiment=quickstart_models", "progress=false", f"resume={copy}")
    assert result.returncode == 0, result.describe()
    assert sorted(p.name for p in copy.rglob("*.jsonl")) == before  # no attempt added
    assert verify(copy).returncode == 0


def test_a_sweep_with_models_is_refused(tmp_path, xaytune):
    result = xaytune(tmp_path, "-m", "+experiment=quickstart_models", "seed=101,102")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "sweep-unsupported" in line and "models" in line
    assert not list(tmp_path.rglob("manifest.json"))


PRICED = [f"+models.{m}.prices={{input_per_mtok:100,output_per_mtok:100}}" for m in MODELS]


def test_max_cost_is_checked_across_the_models(tmp_path, xaytune):
    # Each model's estimate ($240: 20 tasks x 3 seeds x 2 candidates x 20,000 tokens at
    # $100/M) is under $500; the three together ($720) are not.
    result = xaytune(tmp_path, "+experiment=quickstart_models", *PRICED, "max_cost_usd=500")
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: over-budget: ") and "$720.00 across 3 models" in line
    assert not list(tmp_path.rglob("manifest.json"))
    dry = xaytune(tmp_path, "+experiment=quickstart_models", *PRICED, "--dry-run")
    assert dry.returncode == 0, dry.describe()
    assert dry.stdout.count("estimate: at most $240.00") == 3
    assert "estimate: at most $720.00 across 3 models" in dry.stdout
