"""Issue 17: several challengers against one baseline (the summary, Holm, the gate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats

from xaytune.core.canonical import canonical_bytes
from xaytune.experiment.summary import holm

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).parent / "golden"


def test_holm_by_hand():
    # m = 4: sorted 0.01, 0.02, 0.03, 0.04 -> 0.04, max(0.04, 0.06), max(., 0.06), 0.06
    adjusted = holm([0.03, 0.01, None, 0.04, 0.02])
    assert adjusted[2] is None
    assert [adjusted[i] for i in (0, 1, 3, 4)] == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([None]) == [None]


@pytest.fixture(scope="module")
def three(tmp_path_factory, xaytune):
    """The quickstart with a third candidate, c = terse (baseline a)."""
    cwd = tmp_path_factory.mktemp("three")
    tree = cwd / "run"
    result = xaytune(
        cwd, "+experiment=quickstart", "progress=false", f"hydra.run.dir={tree}",
        "+candidate@candidates.c=terse",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    return tree, result


def test_each_challenger_gets_its_comparison_and_the_summary_says_it_all(three, verify):
    tree, result = three
    top = tree / "comparison"
    assert sorted(p.name for p in top.iterdir()) == [
        "b", "c", "errors.json", "report.html", "summary.json", "summary.md",
    ]  # fmt: skip
    summary = json.loads((top / "summary.json").read_bytes())
    assert summary["baseline"] == {"label": "a", "name": "calculator"}
    for label in ("b", "c"):
        report = json.loads((top / label / "report.json").read_bytes())
        assert report["a"]["name"] == "calculator"
        assert summary["relations"][label] == report["relation"]
        for row in (r for r in summary["rows"] if r["challenger"] == label):
            metric = report["metrics"][row["metric"]]
            assert row["verdict"] == metric["verdict"]
            assert row["mean_difference"] == metric["mean"]
            # the p-value, independently: two-sided t with R - 1 degrees of freedom
            t = metric["mean"] / metric["se"]
            expected = 2 * stats.t.sf(abs(t), df=len(metric["differences"]) - 1)
            assert row["p_value"] == pytest.approx(expected, rel=1e-12)
    p = [r["p_value"] for r in summary["rows"]]
    order = sorted(range(len(p)), key=p.__getitem__)
    running = 0.0
    for rank, index in enumerate(order):  # Holm by hand
        running = max(running, min(1.0, (len(p) - rank) * p[index]))
        assert summary["rows"][index]["holm_p_value"] == pytest.approx(running, rel=1e-12)
    assert "Summary: 2 challengers against calculator" in result.stdout
    assert verify(tree).returncode == 0


def test_a_challenger_compared_alone_gives_the_same_verdicts(three, tmp_path, xaytune):
    tree, _ = three
    alone = tmp_path / "alone"
    result = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", f"hydra.run.dir={alone}",
        "candidate@candidates.b=terse",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    mine = json.loads((tree / "comparison" / "c" / "report.json").read_bytes())
    theirs = json.loads((alone / "comparison" / "report.json").read_bytes())
    assert mine["relation"] == theirs["relation"]
    for name in ("task_success", "total_tokens"):
        assert mine["metrics"][name]["verdict"] == theirs["metrics"][name]["verdict"]
        assert mine["metrics"][name]["mean"] == theirs["metrics"][name]["mean"]


def test_an_edited_summary_is_refused(three, tmp_path, verify):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(three[0], copy)
    path = copy / "comparison" / "summary.json"
    summary = json.loads(path.read_bytes())
    summary["relations"]["c"] = "favors-b"
    path.write_bytes(canonical_bytes(summary) + b"\n")
    result = verify(copy, in_process=True)
    assert result.returncode != 0
    assert f"{path}: report-mismatch" in result.stdout


def test_the_gate_applies_per_challenger(tmp_path, xaytune):
    result = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", "+candidate@candidates.c=terse",
        "comparison.fail_on=[trade-off]",
    )  # fmt: skip
    assert result.returncode == 1, result.describe()
    gates = [line for line in result.stderr.splitlines() if line.startswith("gate:")]
    assert gates == [
        "gate: relation trade-off for challenger b (mental) is in comparison.fail_on",
        "gate: relation trade-off for challenger c (terse) is in comparison.fail_on",
    ]


def test_the_baseline_is_chosen_and_checked(tmp_path, xaytune):
    bad = xaytune(tmp_path, "+experiment=quickstart", "comparison.baseline=z", "progress=false")
    assert bad.returncode == 2
    (line,) = bad.stderr.strip().splitlines()
    assert "comparison.baseline 'z' is not a candidate" in line
    tree = tmp_path / "swapped"
    swapped = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", "comparison.baseline=b",
        f"hydra.run.dir={tree}",
    )  # fmt: skip
    assert swapped.returncode == 0, swapped.describe()
    report = json.loads((tree / "comparison" / "report.json").read_bytes())
    assert (report["a"]["name"], report["b"]["name"]) == ("mental", "calculator")


def test_one_candidate_is_refused(tmp_path, xaytune):
    result = xaytune(tmp_path, "+experiment=quickstart", "~candidates.b", "progress=false")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "candidates: at least two are compared" in line


def _without_code_digests(value):
    """``value`` with every digest of code replaced by a mark: the harness fingerprints
    and the parts' ``source_sha256`` hash the source of the built-in tool and loop, which
    a move of code between modules changes (issue 28) while every number stays."""
    if isinstance(value, dict):
        return {
            key: "<code>" if key in ("harness_fingerprint", "source_sha256") else
            _without_code_digests(item)
            for key, item in value.items()
        }  # fmt: skip
    if isinstance(value, list):
        return [_without_code_digests(item) for item in value]
    return value


def test_two_candidates_give_the_comparison_of_before(quickstart):
    # Golden: the quickstart's report.json recorded at commit f903557 (before several
    # challengers, models and the cache), without what a run cannot repeat (its time
    # metrics) or what names code identities (the comparison key hashes the model
    # adapter's source, the harness fingerprints the tool's and loop's source).
    from xaytune.core.harness_comparison import TIME_METRICS

    golden = json.loads((GOLDEN / "quickstart_comparison.json").read_bytes())
    report = quickstart.report()
    report["metrics"] = {
        k: v for k, v in report["metrics"].items() if k.split("@")[0] not in TIME_METRICS
    }
    report["comparability"].pop("comparison_key")
    assert _without_code_digests(report) == _without_code_digests(golden)
    # The digests are still there, and still the code's: not dropped from the report.
    assert report["a"]["harness_fingerprint"].startswith("sha256:")
