"""An A/A run through the CLI: candidate b is a renamed copy of a. The report says
what the rule does when there is nothing to find, and warns that only the seeds'
execution differs; comparison.calibrate adds the measured figure; the auditor
recomputes it all from the replicate records."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

# Hydra overrides: the candidate group at package candidates.b, then its name (the
# two candidates must be named differently). "candidates.b=calculator" would set
# candidates.b to the string "calculator" instead of choosing the group option.
AA_RUN = (
    "+experiment=quickstart",
    "progress=false",
    "candidate@candidates.b=calculator",
    "candidates.b.name=calc2",
    "comparison.calibrate=true",
)


@pytest.fixture(scope="module")
def aa_run(tmp_path_factory, xaytune, output_dir):
    cwd = tmp_path_factory.mktemp("aa")
    result = xaytune(cwd, *AA_RUN)
    assert result.returncode == 0, result.describe()
    return result, output_dir(cwd, "quickstart")


def test_an_aa_run_reports_the_seed_only_warning_and_the_aa_rate(aa_run):
    result, out = aa_run
    report = json.loads((out / "comparison" / "report.json").read_text())
    assert (report["a"]["name"], report["b"]["name"]) == ("calculator", "calc2")
    assert report["seed_only_difference"] is True
    assert [change["path"] for change in report["config_diff"]] == ["name"]
    calibration = report["calibration"]
    assert calibration["replicates"] == 3 and calibration["k"] == 2.0
    # 2·P(T_2 > 2) = 1 − 2/sqrt(6).
    assert calibration["t_rate"] == pytest.approx(0.18350341907227397, rel=1e-12)
    by_metric = {o["metric"]: o for o in calibration["objectives"]}
    assert set(by_metric) == {"task_success", "total_tokens"}
    # The calculator solves every task: on the lattice nothing can vary (0%).
    assert by_metric["task_success"]["model"] == "binomial-lattice"
    assert by_metric["task_success"]["rate"] == 0.0
    assert by_metric["total_tokens"]["model"] == "student-t"
    assert calibration["relation_rate_high"] >= calibration["relation_rate_independent"]
    assert calibration["measured"]["draws"] == 2000
    assert calibration["measured"]["seed_digest"].startswith("sha256:")
    # The simulated model repeats itself per seed: no difference, nothing called.
    assert report["relation"] == "inconclusive"

    markdown = (out / "comparison" / "report.md").read_text()
    assert "**Warning:** the two harnesses are the same but for their names" in markdown
    assert "## Calibration: what the rule says when there is nothing to find" in markdown
    assert "If A and B were the same harness (A/A), at R = 3 and k = 2" in markdown
    assert "18.4%" in markdown and "Measured (normal-aa/v1: 2,000 simulated" in markdown
    assert "| A/A rate |" in markdown
    assert "the two harnesses are the same but for their names" in result.stdout
    assert "calibration: If A and B were the same harness" in result.stdout


def test_the_auditor_recomputes_the_calibrated_report(aa_run, verify):
    _, out = aa_run
    result = verify(out)
    assert result.returncode == 0, result.describe()
    assert result.stdout.startswith("ok:")


def test_calibrate_is_a_checked_config_key(tmp_path, xaytune):
    result = xaytune(tmp_path, "+experiment=quickstart", "comparison.calibrate=maybe")
    assert result.returncode != 0
    assert "comparison.calibrate" in (result.stdout + result.stderr)
    assert "Traceback" not in result.stderr
