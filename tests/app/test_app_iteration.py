"""Issue 30, part 1, through the app: the candidates' order within each seed is a
seeded permutation, recorded and verified; the summary of several challengers states
the family-wise A/A rate (verify recomputes it) and shows p and Holm p in report.html
(se = 0 rows p = 1, R < 3 rows out of the Holm family); the models summary words both
directions with counts and the chance-level expectation.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
import rfc8785

from tests.core.test_harness_comparison import SUITE, candidate, spec
from xaytune.core.harness_comparison import compare, independent_family_rate
from xaytune.experiment.models_run import row_words
from xaytune.experiment.order import candidate_order
from xaytune.experiment.summary import holm, summary_data, summary_files


def _order_by_hand(seed: int, fingerprints: dict[str, str]) -> list[str]:
    """The documented rule, written again: sort the labels by sha256 of the RFC 8785
    canonical {method, seed, candidates, label}."""

    def rank(label: str) -> bytes:
        record = {
            "method": "sha256-permutation/v1",
            "seed": seed,
            "candidates": fingerprints,
            "label": label,
        }
        return hashlib.sha256(rfc8785.dumps(record)).digest()

    return sorted(fingerprints, key=rank)


def test_the_order_is_a_deterministic_seeded_permutation():
    fingerprints = {"a": "sha256:" + "1" * 64, "b": "sha256:" + "2" * 64, "c": "sha256:3"}
    orders = {seed: candidate_order(seed, fingerprints) for seed in range(1, 41)}
    for seed, order in orders.items():
        assert sorted(order) == ["a", "b", "c"]
        assert list(order) == _order_by_hand(seed, fingerprints)
        assert candidate_order(seed, dict(reversed(fingerprints.items()))) == order
    # Over 40 seeds every candidate runs first sometimes (a fixed order would not).
    assert {order[0] for order in orders.values()} == {"a", "b", "c"}


@pytest.fixture(scope="module")
def aa_run(tmp_path_factory, xaytune):
    """An A/A run: the quickstart's calculator against itself (renamed), 3 seeds, a
    simulated model with latency."""
    cwd = tmp_path_factory.mktemp("aa")
    tree = cwd / "run"
    result = xaytune(
        cwd, "+experiment=quickstart", "progress=false", f"hydra.run.dir={tree}",
        "candidate@candidates.b=calculator", "candidates.b.name=calculator2",
        "model.latency_s=0.002",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    return tree


def _last_and_first_write(directory):
    times = [p.stat().st_mtime_ns for p in directory.rglob("*.jsonl")]
    return min(times), max(times)


def test_an_aa_run_records_an_order_that_differs_across_seeds_and_is_kept(aa_run, verify):
    manifest = json.loads((aa_run / "manifest.json").read_bytes())
    fingerprints = {
        label: entry["harness_fingerprint"] for label, entry in manifest["candidates"].items()
    }
    recorded = manifest["candidate_order"]
    assert recorded["method"] == "sha256-permutation/v1"
    by_seed = {int(seed): order for seed, order in recorded["by_seed"].items()}
    assert sorted(by_seed) == [101, 102, 103]
    for seed, order in by_seed.items():
        assert order == _order_by_hand(seed, fingerprints)
    # These seeds and fingerprints give both orders (checked by hand above).
    assert len({tuple(order) for order in by_seed.values()}) == 2
    # The attempts were written in the recorded order: every attempt of the first
    # candidate of a seed is on disk before any attempt of the second.
    names = {"a": "calculator", "b": "calculator2"}
    for seed, (first, second) in by_seed.items():
        _, first_done = _last_and_first_write(aa_run / "candidates" / names[first] / f"seed-{seed}")
        second_started, _ = _last_and_first_write(
            aa_run / "candidates" / names[second] / f"seed-{seed}"
        )
        assert first_done <= second_started, seed
    assert verify(aa_run, in_process=True).returncode == 0


def test_an_edited_order_is_refused_by_verify(aa_run, tmp_path, verify):
    copy = tmp_path / "run"
    shutil.copytree(aa_run, copy)
    path = copy / "manifest.json"
    manifest = json.loads(path.read_bytes())
    manifest["candidate_order"]["by_seed"]["101"].reverse()
    path.write_bytes(rfc8785.dumps(manifest) + b"\n")
    result = verify(copy, in_process=True)
    assert result.returncode != 0
    assert "order-mismatch" in result.stdout + result.stderr


def _report(b_tokens, *, seeds=(101, 102, 103), name="b"):
    a_tokens = (100.0, 90.0, 95.0, 97.0)[: len(seeds)]
    return compare(
        candidate("a", {"total_tokens": a_tokens}, seeds=seeds),
        candidate(name, {"total_tokens": b_tokens}, seeds=seeds),
        spec(("total_tokens", "minimize", 1.0)),
        SUITE,
    ).released()


def test_se_zero_rows_get_p_one_and_short_rows_stay_out_of_holm():
    constant = _report((103.0, 93.0, 98.0))  # differences (3, 3, 3): se 0, favors a
    noisy = _report((101.0, 100.0, 96.0), name="c")  # differences (1, 10, 1)
    short = _report((101.0, 91.0), seeds=(101, 102), name="d")  # R = 2
    data = summary_data("a", [("b", constant), ("c", noisy), ("d", short)])
    rows = {row["challenger"]: row for row in data["rows"]}
    assert rows["b"]["verdict"] == "favors-a" and rows["b"]["se_zero"]
    assert rows["b"]["p_value"] == 1.0
    assert rows["d"]["p_value"] is not None and rows["d"]["holm_p_value"] is None
    # Holm over the two rows with R >= 3 only: by hand, m = 2.
    p_b, p_c = 1.0, rows["c"]["p_value"]
    assert [rows["b"]["holm_p_value"], rows["c"]["holm_p_value"]] == holm([p_b, p_c])
    assert rows["c"]["holm_p_value"] == pytest.approx(min(1.0, 2 * p_c), rel=1e-12)


def test_the_summary_states_the_family_rate_on_every_surface():
    first = _report((101.0, 100.0, 96.0))
    second = _report((99.0, 93.0, 96.0), name="c")
    files = summary_files("a", [("b", first), ("c", second)], {"b": {}, "c": {}})
    data = json.loads(files["summary.json"])
    family = data["family"]
    assert family["challengers"] == 2 and family["replicates"] == 3
    assert family["trials"] == 20_000 and family["seed_digest"].startswith("sha256:")
    # Shared baseline: above one challenger's rate, below two independent ones'.
    one = family["one_challenger"]
    assert one < family["any_objective"] < independent_family_rate([one, one])
    percent = f"{100 * family['any_objective']:.1f}%"
    markdown = files["summary.md"].decode()
    html = files["report.html"].decode()
    assert f"at least one would name a side {percent}" in markdown
    assert f"at least one would name a side {percent}" in html
    assert "<th>Holm p</th>" in html and "<th>p</th>" in html
    # The same inputs give the same bytes (what verify recomputes).
    assert summary_files("a", [("b", first), ("c", second)], {"b": {}, "c": {}}) == files


def test_the_models_summary_words_both_directions_with_counts():
    row = {"favors_baseline": 2, "favors_challenger": 1, "name": "mental"}
    said = row_words(row, "calculator", 3)
    assert said == "favors calculator on 2 of 3 models, mental on 1 of 3 (the models disagree)"
    assert row_words({**row, "favors_challenger": 0}, "calculator", 3) == (
        "favors calculator on 2 of 3 models"
    )
    assert row_words({**row, "favors_baseline": 0, "favors_challenger": 0}, "x", 3) == (
        "no side on any of 3 models"
    )
    # Chance level for three independent models with A/A rates 0.1, 0.2, 0.3: by hand
    # 1 − 0.9·0.8·0.7 = 0.496.
    assert independent_family_rate([0.1, 0.2, 0.3]) == pytest.approx(0.496, rel=1e-12)


def test_verify_recomputes_the_family_rate_of_a_run(tmp_path, xaytune, verify):
    # The quickstart with a third candidate: the summary states the family-wise rate
    # (terminal and files), and an edited figure is refused by verify.
    tree = tmp_path / "run"
    result = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", f"hydra.run.dir={tree}",
        "+candidate@candidates.c=terse",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    assert "Family-wise A/A: if all 2 challengers were the same harness" in result.stdout
    path = tree / "comparison" / "summary.json"
    summary = json.loads(path.read_bytes())
    assert summary["family"]["challengers"] == 2
    assert verify(tree, in_process=True).returncode == 0
    summary["family"]["any_objective"] = round(summary["family"]["any_objective"] / 2, 4)
    path.write_bytes(rfc8785.dumps(summary) + b"\n")
    refused = verify(tree, in_process=True)
    assert refused.returncode != 0
    assert "report-mismatch" in refused.stdout + refused.stderr


def test_the_models_summary_states_the_chance_level(tmp_path, xaytune, verify):
    tree = tmp_path / "run"
    result = xaytune(
        tmp_path, "+experiment=quickstart_models", "progress=false", f"hydra.run.dir={tree}"
    )
    assert result.returncode == 0, result.describe()
    summary = json.loads((tree / "comparison" / "models.json").read_bytes())
    markdown = (tree / "comparison" / "models.md").read_text()
    for row in summary["rows"]:
        rates = []
        for model in summary["models"]:
            report = json.loads(
                (tree / "models" / model / "comparison" / "report.json").read_bytes()
            )
            (rate,) = [
                o["rate"]
                for o in report["calibration"]["objectives"]
                if o["metric"] == row["metric"]
            ]
            rates.append(rate)
        # By hand: independent models, at least one names a side; half of Σ p per side.
        none = 1.0
        for rate in rates:
            none *= 1.0 - rate
        assert row["aa_any_model"] == pytest.approx(1.0 - none, rel=1e-12)
        assert row["aa_expected_per_side"] == pytest.approx(sum(rates) / 2, rel=1e-12)
        # total_tokens (min_effect 50, normal theory) is an upper bound: "≤".
        assert row["aa_upper_bound"] == (row["metric"] == "total_tokens")
        cell = f"{100 * row['aa_any_model']:.1f}% for ≥ 1 of 3"
        assert (("≤ " + cell) if row["aa_upper_bound"] else cell) in markdown
    assert "by chance alone (A/A)" in markdown
    assert verify(tree, in_process=True).returncode == 0
