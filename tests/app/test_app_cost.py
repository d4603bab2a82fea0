"""Dollars in the app: catalog v2 experiments, price facets (C4), the dollar guard.

* ``+experiment=quickstart`` (catalog v1, selected explicitly) gives exactly what it
  gave before catalog v2 existed: every number but the measured times, compared
  with ``golden/quickstart_v1.json``, recorded from a run of commit f903557 (the
  code before v2) with the same command;
* ``+experiment=quickstart_cost`` reports cost in dollars, wall time and time per
  model call; each task's cost is recomputed here by hand from its attested
  trajectory, and the tree verifies (the auditor recomputes every evaluation);
* two sides priced differently fail C4 (and C3: the prices are in the evaluator
  fingerprint);
* ``max_cost_usd`` refuses with the estimate, ``--dry-run`` prints it; neither keeps
  a run directory.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from xaytune.app.main import resolve_config
from xaytune.core.harness_comparison import ComparisonSpec, ObjectiveMetric, compare
from xaytune.experiment.parts import experiment_toolbox
from xaytune.experiment.replicate import run_replicate
from xaytune.experiment.source import load_source
from xaytune.experiment.tree.gather import gather_candidates
from xaytune.harness.evidence.attempt_file import AttemptParts

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).parent / "golden" / "quickstart_v1.json"
TIME = {"model_time", "tool_time", "end_to_end_time", "model_call_time"}
# quickstart_cost's illustrative prices, USD per million input, cached, output tokens.
PRICES = (Fraction("2.5"), Fraction("1.25"), Fraction(10))


def _evaluations(out: Path) -> dict[str, dict]:
    found = {}
    for path in sorted(out.glob("candidates/*/seed-*/evaluation/outcome/evaluation.json")):
        found[str(path.parent.parent.parent.relative_to(out / "candidates"))] = json.loads(
            path.read_text()
        )
    return found


# -- v1, unchanged --------------------------------------------------------------------


def test_the_v1_quickstart_gives_exactly_the_output_it_gave_before_v2(quickstart):
    golden = json.loads(GOLDEN.read_text())
    report = quickstart.report()
    for key in ("relation", "claim", "seeds", "calibration", "spec"):
        assert report[key] == golden[key], key
    metrics = {k: v for k, v in report["metrics"].items() if k.split("@")[0] not in TIME}
    assert metrics == golden["metrics"]
    evaluations = _evaluations(quickstart.out)
    assert sorted(evaluations) == sorted(golden["replicates"])
    for replicate, evaluation in evaluations.items():
        recorded = golden["replicates"][replicate]
        assert (
            evaluation["evaluation"]["catalog"]
            == recorded["catalog"]
            == ("xaytune.harness-metrics/v1")
        )
        assert "metrics" not in evaluation["evaluation"]["config"]["spec"]  # v1's spelling
        assert evaluation["task_ids"] == recorded["task_ids"]
        assert [m for m in evaluation["metrics"] if m["metric"] not in TIME] == recorded["metrics"]
        columns = [c for c in evaluation["task_columns"] if c["metric"] not in TIME]
        assert columns == recorded["task_columns"], replicate
    # No price table, no price facet: the facets are those of before.
    for path in quickstart.out.glob("candidates/*/seed-*/replicate.restricted.json"):
        assert "prices" not in json.loads(path.read_text())["facets"]


# -- v2: dollars and seconds ----------------------------------------------------------


def _cost_by_hand(attempt_file: Path) -> Fraction:
    """Dollars of one attempt at quickstart_cost's prices, from its model_reply events."""
    parts = AttemptParts.of(attempt_file.read_bytes(), str(attempt_file))
    total = Fraction(0)
    for line in parts.events:
        event = json.loads(line)
        if event["type"] == "model_reply":
            usage = event["v"]["usage"]
            fresh = usage["input"] - usage["cached"]
            total += fresh * PRICES[0] + usage["cached"] * PRICES[1] + usage["output"] * PRICES[2]
    return total / 1_000_000


@pytest.fixture(scope="module")
def cost_run(tmp_path_factory, xaytune, output_dir):
    cwd = tmp_path_factory.mktemp("quickstart_cost")
    result = xaytune(cwd, "+experiment=quickstart_cost", "progress=false")
    assert result.returncode == 0, result.describe()
    return result, output_dir(cwd, "quickstart_cost")


def test_quickstart_cost_reports_dollars_wall_time_and_time_per_call(cost_run):
    result, out = cost_run
    assert "cost (minimize)" in result.stdout and "relation:" in result.stdout
    report = json.loads((out / "comparison" / "report.json").read_text())
    assert report["comparability"]["comparable"] is True
    cost = report["metrics"]["cost"]
    assert cost["unit"] == "usd" and cost["objective"]["metric"] == "cost"
    assert cost["verdict"] in {"favors-a", "favors-b", "inconclusive"}
    for key in ("end_to_end_time", "model_call_time"):
        metric = report["metrics"][key]
        assert metric["unit"] == "s" and metric["time_metric"] is True
        assert all(run["value"] > 0 for run in metric["a"]["runs"] + metric["b"]["runs"])
    for run in report["metrics"]["cached_tokens"]["a"]["runs"]:
        assert run["value"] > 0  # the calculator's later calls hit the prefix cache


def test_quickstart_cost_is_each_tasks_cost_recomputed_by_hand(cost_run):
    _, out = cost_run
    checked = 0
    for replicate in sorted(out.glob("candidates/*/seed-*")):
        restricted = json.loads(
            (replicate / "evaluation/outcome/restricted/evaluation.restricted.json").read_text()
        )
        columns = {c["metric"]: c for c in restricted["task_columns"]}
        tasks = sorted((replicate / "evidence" / "tasks").iterdir())
        assert len(tasks) == len(restricted["task_ids"]) == 20
        for position, task in enumerate(tasks):
            (attempt,) = sorted(task.glob("*.jsonl"))
            by_hand = float(_cost_by_hand(attempt))
            assert columns["cost"]["values"][position] == by_hand
            assert columns["spend_cost"]["values"][position] == by_hand  # one attempt
            checked += 1
    assert checked == 120


def test_quickstart_cost_verifies(cost_run, verify):
    _, out = cost_run
    result = verify(out)
    assert result.returncode == 0, result.describe()
    assert result.stdout.startswith("ok:")


def test_a_tiered_run_verifies_and_prices_calls_above_the_threshold(
    tmp_path, xaytune, output_dir, verify
):
    tier = (
        "{above_prompt_tokens:150,input_per_mtok:5.0,cached_input_per_mtok:2.5,"
        "output_per_mtok:20.0}"
    )
    result = xaytune(
        tmp_path,
        "+experiment=quickstart_cost",
        "sampling.count=4",
        f"model.prices.tiers=[{tier}]",
        "progress=false",
    )
    assert result.returncode == 0, result.describe()
    out = output_dir(tmp_path, "quickstart_cost")
    assert verify(out).returncode == 0  # the auditor re-reads each call to price it
    above = below = 0
    for replicate in sorted(out.glob("candidates/*/seed-*")):
        restricted = json.loads(
            (replicate / "evaluation/outcome/restricted/evaluation.restricted.json").read_text()
        )
        costs = next(c for c in restricted["task_columns"] if c["metric"] == "cost")["values"]
        for position, task in enumerate(sorted((replicate / "evidence" / "tasks").iterdir())):
            (attempt,) = sorted(task.glob("*.jsonl"))
            parts = AttemptParts.of(attempt.read_bytes(), str(attempt))
            total = Fraction(0)
            for line in parts.events:
                event = json.loads(line)
                if event["type"] != "model_reply":
                    continue
                usage = event["v"]["usage"]
                tiered = usage["input"] > 150
                above += tiered
                below += not tiered
                rates = (Fraction(5), Fraction("2.5"), Fraction(20)) if tiered else PRICES
                fresh = usage["input"] - usage["cached"]
                total += fresh * rates[0] + usage["cached"] * rates[1] + usage["output"] * rates[2]
            assert costs[position] == float(total / 1_000_000)
    assert above and below  # calls on both sides of the threshold


# -- C4: priced differently -----------------------------------------------------------


def _compose(*overrides: str):
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def _replicates(tmp_path: Path, label: str, *overrides: str) -> Path:
    raw = _compose("+experiment=quickstart_cost", "sampling.count=3", *overrides)
    cfg, _ = resolve_config(raw)
    source = load_source(cfg)
    toolbox = experiment_toolbox(cfg)
    out = tmp_path / label
    for seed in cfg.seeds:
        run_replicate(
            cfg,
            label=label,
            harness=cfg.candidates[label],
            seed=seed,
            source=source,
            out=out,
            toolbox=toolbox,
        )
    return out


def _comparison(a_tree: Path, b_tree: Path, tmp_path: Path):
    a = gather_candidates(a_tree)["a"]
    b = gather_candidates(b_tree)["b"]
    spec = ComparisonSpec(
        objectives=(ObjectiveMetric(metric="cost", direction="minimize", min_effect=0.0005),)
    )
    cfg, _ = resolve_config(_compose("+experiment=quickstart_cost"))
    return compare(a, b, spec, load_source(cfg).suite)


def test_c4_fails_when_the_two_sides_were_priced_differently(tmp_path):
    a = _replicates(tmp_path, "a")
    b_same = _replicates(tmp_path / "same", "b")
    b_dearer = _replicates(tmp_path / "dearer", "b", "model.prices.output_per_mtok=12.0")
    same = _comparison(a, b_same, tmp_path)
    assert same.comparability.comparable is True
    dearer = _comparison(a, b_dearer, tmp_path)
    assert dearer.relation == "not-comparable"
    failures = {f.condition: f for f in dearer.comparability.failures}
    assert failures["C4"].reason == "facets-differ"
    (difference,) = failures["C4"].differences
    assert difference.item == "facets.prices.output_per_mtok"
    assert (difference.a, difference.b) == ((10,), (12,))
    # The evaluator computed cost at those prices too: its fingerprint differs (C3).
    assert failures["C3"].reason == "evaluator-differs"
    assert set(failures) == {"C3", "C4"}


# -- the default catalog -------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "catalog"),
    [
        ((), "xaytune.harness-metrics/v2"),  # a new experiment: the root config
        (("+experiment=quickstart",), None),  # v1, spelled without spec.metrics
        (("+experiment=judge",), None),
        (("+experiment=quickstart_cost",), "xaytune.harness-metrics/v2"),
    ],
    ids=["root", "quickstart", "judge", "quickstart_cost"],
)
def test_new_experiments_measure_v2_and_the_reference_ones_pin_v1(overrides, catalog):
    cfg, _ = resolve_config(_compose(*overrides))
    metrics = cfg.evaluators["outcome"].config["spec"].get("metrics")
    assert (None if metrics is None else metrics["catalog"]) == catalog
    if metrics is not None:  # the model's own table, through the interpolation
        prices = cfg.model.prices
        assert metrics["prices"] == (None if prices is None else prices.model_dump(mode="json"))


# -- the dollar guard -----------------------------------------------------------------


def _no_run_directory(cwd: Path, experiment: str) -> None:
    assert not list(cwd.rglob("manifest.json"))
    root = cwd / "experiments" / experiment
    assert not root.exists() or not any(root.iterdir()), list(root.iterdir())


def test_max_cost_usd_refuses_with_the_estimate_and_no_run_directory(tmp_path, xaytune):
    # 20 tasks x 4 seeds x 2 candidates x 1 attempt x 20,000 tokens x $10/M = $32.
    result = xaytune(tmp_path, "+experiment=quickstart_cost", "seeds=[1,2,3,4]")
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: over-budget: estimate: at most $32.00 for 20 tasks x 4 seeds")
    assert "above max_cost_usd $25" in line and "Traceback" not in result.stderr
    _no_run_directory(tmp_path, "quickstart_cost")


def test_max_cost_usd_without_prices_is_refused_as_unbounded(tmp_path, xaytune):
    result = xaytune(tmp_path, "+experiment=quickstart", "max_cost_usd=5")
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: cost-unbounded: max_cost_usd $5")
    assert "no price table" in line
    _no_run_directory(tmp_path, "quickstart")


def test_a_dollar_budget_lowers_the_estimate(tmp_path, xaytune):
    # $0.05 per attempt is below 20,000 tokens x $10/M = $0.20: 120 x 0.05 = $6.
    result = xaytune(
        tmp_path,
        "+experiment=quickstart_cost",
        "+candidates.a.cost_budget_usd=0.05",
        "+candidates.b.cost_budget_usd=0.05",
        "--dry-run",
    )
    assert result.returncode == 0, result.describe()
    assert result.stdout.startswith("estimate: at most $6.00 for 20 tasks x 3 seeds")


@pytest.mark.parametrize("flag", ["--dry-run", "dry_run=true"])
def test_dry_run_prints_the_estimate_and_exits_0_without_a_run_directory(tmp_path, xaytune, flag):
    result = xaytune(tmp_path, "+experiment=quickstart_cost", "seeds=[1,2,3,4]", flag)
    assert result.returncode == 0, result.describe()
    lines = result.stdout.strip().splitlines()
    assert lines[0] == (
        "estimate: at most $32.00 for 20 tasks x 4 seeds x 2 candidates (calculator: 1 "
        "attempt x 20,000 tokens; mental: 1 attempt x 20,000 tokens; at $10/M tokens, the "
        "price table's highest)"
    )
    assert lines[1].startswith("a run would be refused: over-budget:")
    assert "relation:" not in result.stdout
    _no_run_directory(tmp_path, "quickstart_cost")


def test_a_dry_run_sweep_keeps_no_directory_either(tmp_path, xaytune):
    result = xaytune(tmp_path, "-m", "+experiment=quickstart_cost", "seed=101,102", "--dry-run")
    assert result.returncode == 0, result.describe()
    estimates = [line for line in result.stdout.splitlines() if line.startswith("estimate:")]
    assert len(estimates) == 2  # one per job, each the whole experiment's
    assert all("20 tasks x 2 seeds x 2 candidates" in line for line in estimates)
    _no_run_directory(tmp_path, "quickstart_cost")


def test_a_dollar_budget_without_prices_is_refused_before_anything_runs(tmp_path, xaytune):
    result = xaytune(tmp_path, "+experiment=quickstart", "+candidates.a.cost_budget_usd=1")
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: cost-budget-unpriced: candidates.a.cost_budget_usd")
    _no_run_directory(tmp_path, "quickstart")


@pytest.mark.parametrize(
    ("overrides", "reason", "words"),
    [
        (
            ["comparison.objectives=[{metric:cost,direction:minimize,min_effect:0.001}]"],
            "metric-not-recorded",
            "never recorded by xaytune.harness-metrics/v1",
        ),
        (
            [
                "evaluator@evaluators.outcome=outcome_v2",
                "comparison.objectives=[{metric:cost,direction:minimize,min_effect:0.001}]",
            ],
            "metric-not-recorded",
            "model.prices is null",
        ),
        (
            [
                "evaluator@evaluators.outcome=outcome_v2",
                "model.prices={input_per_mtok:1.0,output_per_mtok:2.0}",
                "evaluators.outcome.config.spec.metrics.prices={input_per_mtok:3.0,"
                "output_per_mtok:2.0}",
            ],
            "prices-mismatch",
            "evaluators.outcome.config.spec.metrics.prices",
        ),
    ],
    ids=["v1 cost", "unpriced v2 cost", "evaluator priced apart"],
)
def test_what_no_run_could_measure_is_refused_before_it_runs(
    tmp_path, xaytune, overrides, reason, words
):
    result = xaytune(tmp_path, "+experiment=quickstart", *overrides)
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {reason}: ") and words in line
    _no_run_directory(tmp_path, "quickstart")
