"""report.html a person can read (issue 32, item 3): ratios beside differences, the
not-compared rows folded behind one line, "what differs" as a leaf diff with long
values folded to their digest, and the model named on the page."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from _browser import parse

from xaytune.core.harness_comparison import ComparisonReport, ConfigChange
from xaytune.report import comparison_view, render_html, render_markdown, report_page
from xaytune.report._diff import FOLD_AT, fold, leaf_changes
from xaytune.report._naming import model_title
from xaytune.report._words import collapsed_line, ratio_text


def _released(tree: Path) -> ComparisonReport:
    return ComparisonReport.model_validate_json((tree / "comparison" / "report.json").read_bytes())


def _page(report: ComparisonReport, *, model: str | None = None) -> str:
    return render_html(report_page((comparison_view(report, {}, model=model),)))


# --- ratios ------------------------------------------------------------------------------


def test_ratio_text_is_a_over_b_where_both_are_positive():
    # By hand: 875 / 55 = 15.909..., 1 / 0.5667 = 1.7646..., 5000 / 2 = 2500.
    assert ratio_text(875.0, 55.0) == "15.9×"
    assert ratio_text(1.0, 0.5667) == "1.76×"
    assert ratio_text(5000.0, 2.0) == "2,500.0×"
    # A zero, negative or missing side has no ratio (never "0×" or "inf×").
    for a, b in ((0.0, 3.0), (3.0, 0.0), (-2.0, 1.0), (None, 1.0), (1.0, None)):
        assert ratio_text(a, b) == "—"


@pytest.mark.slow
def test_the_page_shows_the_ratio_of_the_means_beside_the_difference(quickstart_tree):
    raw = json.loads((quickstart_tree / "comparison" / "report.json").read_text())
    dom = parse((quickstart_tree / "comparison" / "report.html").read_text())
    objectives = dom.find("table", cls="objectives")
    header = [th.text() for th in objectives.find("thead").find_all("th")]
    column = header.index(f"ratio {raw['a']['name']} / {raw['b']['name']}")
    assert header[column + 1].startswith("mean difference")  # beside the difference
    for row in objectives.find("tbody").find_all("tr"):
        metric = raw["metrics"][row.attrs["data-metric"]]
        # Independently of the published means: each side's mean of its run values.
        a = sum(run["value"] for run in metric["a"]["runs"]) / len(metric["a"]["runs"])
        b = sum(run["value"] for run in metric["b"]["runs"]) / len(metric["b"]["runs"])
        cell = [td.text() for td in row.find_all("td")][column]
        assert cell == f"{a / b:.3g}×"
    # The quickstart's tokens: the calculator spends about 16 times what mental does.
    tokens = objectives.find("tr", data_metric="total_tokens")
    assert 15 < float([td.text() for td in tokens.find_all("td")][column].rstrip("×")) < 17


# --- not-compared rows, folded -----------------------------------------------------------


@pytest.mark.slow
def test_rows_not_compared_are_folded_behind_one_counted_line(quickstart_tree):
    raw = json.loads((quickstart_tree / "comparison" / "report.json").read_text())
    dom = parse((quickstart_tree / "comparison" / "report.html").read_text())
    objectives = {o["metric"] for o in raw["spec"]["objectives"]}
    others = {name: m for name, m in raw["metrics"].items() if name not in objectives}
    assert len(others) == 14  # the quickstart's catalog: 16 metrics, 2 objectives
    details = dom.find_all("details", cls="collapsed")
    assert len(details) == 1
    folded = details[0].find("table", cls="metrics-collapsed").rows()
    assert sorted(row[0] for row in folded) == sorted(others)
    # The one line: the count, then the reasons by count, the absent ones named.
    absent = sorted(name for name, m in others.items() if m["reason"] == "absent")
    measured = len(others) - len(absent)
    assert details[0].find("summary").text() == (
        f"14 more metrics, not compared: {measured} not-an-objective; "
        f"{len(absent)} absent ({', '.join(absent)})"
    )
    # The objectives stay in the open table.
    shown = dom.find("table", cls="metrics").rows()
    assert sorted(row[0] for row in shown) == sorted(objectives)


def test_the_folded_line_counts_one_metric_in_the_singular(quickstart_tree):
    report = _released(quickstart_tree)
    assert collapsed_line([report.metrics["cost"]]) == (
        "1 more metric, not compared: 1 absent (cost)"
    )


# --- what differs ------------------------------------------------------------------------


def test_leaf_changes_open_named_lists_and_keep_other_lists_whole():
    changes = [
        ConfigChange(
            path="parts",
            change="changed",
            a=[{"name": "calculator", "version": "1"}, {"name": "loop", "version": "0"}],
            b=[{"name": "loop", "version": "1"}],
        ),
        ConfigChange(path="tools", change="changed", a=["calculator"], b=[]),
        ConfigChange(path="loop.max_turns", change="added", b=8),
    ]
    rows = [(r.path, r.change, r.a, r.b) for r in leaf_changes(changes)]
    assert rows == [
        ("parts[calculator]", "removed", '{"name": "calculator", "version": "1"}', "(absent)"),
        ("parts[loop].version", "changed", "0", "1"),  # strings shown as themselves
        ("tools", "changed", '["calculator"]', "[]"),
        ("loop.max_turns", "added", "(absent)", "8"),
    ]


def test_fold_keeps_a_paragraph_and_digests_anything_longer():
    paragraph = "p" * FOLD_AT
    assert fold(paragraph) == paragraph
    long = "q" * (FOLD_AT + 1)
    digest = hashlib.sha256(long.encode()).hexdigest()
    assert fold(long) == "q" * 80 + f"… (201 characters, sha256:{digest})"


@pytest.mark.slow
def test_a_100_kb_prompt_override_is_not_in_the_page_its_digest_is(quickstart_tree):
    raw = json.loads(_released(quickstart_tree).model_dump_json(by_alias=True))
    prompt = "".join(f"Rule {i}: show every step of the working.\n" for i in range(2600))
    assert len(prompt.encode()) > 100_000
    for change in raw["config_diff"]:
        if change["path"] == "system_prompt":
            change["b"] = prompt
    short = _page(_released(quickstart_tree))
    html = _page(ComparisonReport.model_validate(raw))
    assert prompt not in html and prompt[50_000:50_200] not in html
    assert f"sha256:{hashlib.sha256(prompt.encode()).hexdigest()}" in html
    assert f"({len(prompt):,} characters, sha256:" in html
    assert len(html) - len(short) < 1_000  # the page grew by a line, not by 100 KB
    row = parse(html).find("tr", data_path="system_prompt")
    cells = [td.text() for td in row.find_all("td")]
    assert cells[3].startswith("Rule 0: show every step") and cells[4] == "changed"
    # report.md (a pull-request comment) folds it the same way.
    markdown = render_markdown(ComparisonReport.model_validate(raw))
    assert prompt[50_000:50_200] not in markdown
    line = next(x for x in markdown.splitlines() if x.startswith("- `system_prompt`"))
    assert line.endswith(f"sha256:{hashlib.sha256(prompt.encode()).hexdigest()}) (changed)")


# --- the model ---------------------------------------------------------------------------


def test_model_title_names_kind_name_and_what_sets_it_apart():
    assert model_title({"kind": "simulated"}) == "simulated"
    assert model_title({"kind": "simulated", "mental_error_base": 0.04}) == (
        "simulated (mental_error_base 0.04)"
    )
    title = model_title(
        {
            "kind": "openai_compatible",
            "name": "qwen2.5-7b",
            "base_url": "http://127.0.0.1:8000/v1",
            "api_key_env": "KEY",  # how it is reached, not which model: left out
            "prices": {"input": 1.0},
        }
    )
    assert title == "openai_compatible qwen2.5-7b (base_url http://127.0.0.1:8000/v1)"
    assert model_title({"_target_": "my.adapters.Echo", "params": {"x": 1}}) == (
        'my.adapters.Echo (params {"x": 1})'
    )
    long = model_title({"kind": "simulated", "note": "n" * 500})
    assert "n" * 100 not in long and long.endswith("…)")


@pytest.mark.slow
def test_every_page_names_its_model(quickstart_tree):
    dom = parse((quickstart_tree / "comparison" / "report.html").read_text())
    assert dom.find(id="model").text() == "Model: simulated"  # the quickstart's model
    report = _released(quickstart_tree)
    html = _page(report, model="careful: simulated (mental_error_base 0.04)")
    page = parse(html)
    assert page.find(id="model").text() == "Model: careful: simulated (mental_error_base 0.04)"
    assert page.find("title").text().endswith("model careful: simulated (mental_error_base 0.04)")
    assert not parse(_page(report)).find_all(id="model")  # no model given: none claimed
