"""report.html in a real browser: verdict badges, DOM tables, plots that load; and
the page data (cost axis, candidate names, summary grid, determinism) without one."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from _browser import dump_dom, parse, png_size, screenshot

from xaytune.core.harness_comparison import ComparisonReport
from xaytune.experiment.reports import rendered_reports
from xaytune.report import (
    PLOT_NAMES,
    comparison_view,
    cost_axis,
    plot_png,
    render_html,
    render_markdown,
    report_page,
)

pytestmark = pytest.mark.slow

# Reads the <img> elements' decoded sizes once the page has loaded (injected into a
# copy of the page: report.html itself holds no script).
_PROBE = """<script>
window.addEventListener("load", () => {
  for (const img of document.images) {
    img.dataset.loaded = String(img.complete && img.naturalWidth > 0);
    img.dataset.width = String(img.naturalWidth);
    img.dataset.height = String(img.naturalHeight);
  }
});
</script>"""


def _fmt(value: float) -> str:
    # The reports' number form: 4 significant digits, or one decimal with thousands
    # grouped from 1,000 on.
    return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"


def _released(tree: Path) -> ComparisonReport:
    return ComparisonReport.model_validate_json((tree / "comparison" / "report.json").read_bytes())


@pytest.fixture(scope="module")
def browser_dom(quickstart_tree: Path, tmp_path_factory: pytest.TempPathFactory):
    """The DOM chromium builds for (a probed copy of) the quickstart's report.html."""
    page = tmp_path_factory.mktemp("report-dom") / "report.html"
    html = (quickstart_tree / "comparison" / "report.html").read_text()
    page.write_text(html.replace("</body>", _PROBE + "</body>"))
    return parse(dump_dom(page, budget_ms=5000))


def test_report_shows_relation_and_each_objective_verdict_as_a_badge(browser_dom, quickstart_tree):
    report = json.loads((quickstart_tree / "comparison" / "report.json").read_text())
    a, b = report["a"]["name"], report["b"]["name"]
    relation = browser_dom.find(cls="badge", data_relation=report["relation"])
    assert relation.text() == report["relation"]  # the quickstart's trade-off
    for objective in report["spec"]["objectives"]:
        verdict = report["metrics"][objective["metric"]]["verdict"]
        card = browser_dom.find(cls="objective", data_metric=objective["metric"])
        badge = card.find(cls="badge")
        assert badge.attrs["data-verdict"] == verdict
        # The side is named by its candidate, never "A"/"B".
        expected = {"favors-a": f"favors {a}", "favors-b": f"favors {b}"}.get(verdict, verdict)
        assert badge.text() == expected
        # The numbers behind the verdict, as a definition list.
        facts = dict(
            zip(
                [dt.text() for dt in card.find_all("dt")],
                [dd.text() for dd in card.find_all("dd")],
                strict=True,
            )
        )
        metric = report["metrics"][objective["metric"]]
        interval = metric["descriptive"]["mean_interval"]
        assert facts["R (paired seeds)"] == str(len(report["seeds"]))
        assert facts["threshold"].startswith(f"{metric['threshold']:.4g} max(min_effect")
        assert facts["mean difference"].startswith(f"{metric['mean']:.4g}")
        assert facts["95% t-interval"] == f"[{_fmt(interval['low'])}, {_fmt(interval['high'])}]"
        assert facts[a].startswith(f"{metric['a']['mean']:.4g}")
        assert facts[b].startswith(f"{metric['b']['mean']:.4g}")
    # The honesty notes: the A/A rate and the power, in words, with candidate names.
    notes = browser_dom.find("ul", cls="notes").text()
    assert f"If {a} and {b} were the same harness (A/A)" in notes
    assert "80% power" in notes


def test_report_tables_are_dom_tables_with_candidate_names(browser_dom, quickstart_tree):
    report = json.loads((quickstart_tree / "comparison" / "report.json").read_text())
    a, b = report["a"]["name"], report["b"]["name"]
    objectives = browser_dom.find("table", cls="objectives")
    header = [th.text() for th in objectives.find("thead").find_all("th")]
    assert header[1:3] == [a, b] and "A" not in header and "B" not in header
    rows = objectives.rows()
    assert [row[0] for row in rows] == [
        f"{o['metric']} ({o['direction']})" for o in report["spec"]["objectives"]
    ]
    # The objectives' rows in the table; every other metric folded behind one line.
    objective_names = {o["metric"] for o in report["spec"]["objectives"]}
    metrics = browser_dom.find("table", cls="metrics")
    assert [row[0] for row in metrics.rows()] == sorted(objective_names)
    folded = browser_dom.find("details", cls="collapsed").find("table", cls="metrics-collapsed")
    assert [row[0] for row in folded.rows()] == sorted(set(report["metrics"]) - objective_names)
    success = metrics.find("tr", data_metric="task_success")
    assert (
        success.find(cls="badge").attrs["data-verdict"]
        == (report["metrics"]["task_success"]["verdict"])
    )
    conditions = browser_dom.find("table", cls="comparability").rows()
    assert [row[0] for row in conditions] == ["C1", "C2", "C3", "C4", "timing"]
    assert all(row[2] == "holds" for row in conditions[:4])
    diff = browser_dom.find("table", cls="config-diff").rows()
    paths = [row[0] for row in diff]
    # Leaf paths: the parts list is opened by part name (the mental harness has no
    # calculator tool part; both share the tool loop, which is not a difference).
    assert paths == ["name", "parts[calculator]", "system_prompt", "tools"]
    # Autoescaped: the prompts' "<number>" is text, never an element.
    prompt = next(row for row in diff if row[0] == "system_prompt")
    assert "ANSWER: <number>" in prompt[1]
    assert not browser_dom.find_all("number")
    wilson = browser_dom.find("table", cls="wilson").rows()
    assert {row[0] for row in wilson} == {a, b} and len(wilson) == 2 * len(report["seeds"])


def test_each_plot_loads_in_the_browser_as_the_png_on_disk(browser_dom, quickstart_tree):
    images = browser_dom.find("section", id="plots").find_all("img")
    names = [img.attrs["alt"] for img in images]
    assert names == ["paired_differences.png", "success_vs_tokens.png"]
    for img in images:
        src = img.attrs["src"]
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        data = base64.b64decode(src[len(prefix) :], validate=True)
        assert data == (quickstart_tree / "comparison" / img.attrs["alt"]).read_bytes()
        width, height = png_size(data)
        # Decoded by the browser at the PNG's own size.
        assert img.attrs["data-loaded"] == "true", img.attrs["alt"]
        assert (int(img.attrs["data-width"]), int(img.attrs["data-height"])) == (width, height)


def test_report_page_screenshot(quickstart_tree, tmp_path):
    shot = screenshot(quickstart_tree / "comparison" / "report.html", tmp_path / "report.png")
    assert png_size(shot.read_bytes()) == (1280, 1600)


def test_report_page_is_self_contained_without_script(quickstart_tree):
    html = (quickstart_tree / "comparison" / "report.html").read_text()
    dom = parse(html)
    assert not dom.find_all("script") and not dom.find_all("link")
    for node in dom.iter():
        for attribute in ("src", "href"):
            target = node.attrs.get(attribute)
            assert target is None or target.startswith(("data:image/png;base64,", "#")), target
    assert "|---|" not in html and "**" not in html  # not Markdown wrapped in HTML
    assert "@media print" in dom.find("style").text()


def test_report_md_and_html_are_the_same_bytes_when_rendered_again(quickstart_tree):
    # What `python -m xaytune.verify` recomputes: the released report and the plots,
    # with the model the app names on the page (xaytune.experiment.reports.page_model).
    directory = quickstart_tree / "comparison"
    released = _released(quickstart_tree)
    images = {n: (directory / n).read_bytes() for n in PLOT_NAMES if (directory / n).is_file()}
    for _ in range(2):
        rendered = rendered_reports(released, images, model="simulated")
        assert rendered["report.md"] == (directory / "report.md").read_bytes()
        assert rendered["report.html"] == (directory / "report.html").read_bytes()
    # The plots are drawn again to the same bytes.
    assert plot_png(released) == images


def _with_cost(report: ComparisonReport, a: float, b: float) -> ComparisonReport:
    """``report`` with a cost in dollars on every replicate of each side."""
    raw = json.loads(report.model_dump_json(by_alias=True))
    cost = raw["metrics"]["cost"]
    for side, value in (("a", a), ("b", b)):
        cost[side]["mean"] = value
        cost[side]["absent_reasons"] = {}
        for run in cost[side]["runs"]:
            run["value"], run["absent_reasons"] = value, {}
    return ComparisonReport.model_validate(raw)


def test_success_vs_cost_plot_is_in_dollars_when_cost_has_values(quickstart_tree):
    released = _released(quickstart_tree)
    # The quickstart records no cost (not-recorded): tokens, said so on the axis.
    metric, label, name = cost_axis(released)
    assert (metric, name) == ("total_tokens", "success_vs_tokens.png")
    assert "total tokens" in label
    priced = _with_cost(released, 0.0123, 0.0045)
    metric, label, name = cost_axis(priced)
    assert (metric, name) == ("cost", "success_vs_cost.png") and "USD" in label
    plots = plot_png(priced)
    assert list(plots) == ["paired_differences.png", "success_vs_cost.png"]
    png_size(plots["success_vs_cost.png"])
    assert "![success_vs_cost.png](success_vs_cost.png)" in render_markdown(
        priced, {n: n for n in plots}
    )
    html = rendered_reports(priced, plots)["report.html"].decode()
    assert "cost in dollars" in html
    # A cost on one side only is no cost: tokens again, nothing read as zero.
    raw = json.loads(priced.model_dump_json(by_alias=True))
    raw["metrics"]["cost"]["b"]["mean"] = None
    assert cost_axis(ComparisonReport.model_validate(raw))[0] == "total_tokens"


def test_several_comparisons_get_a_summary_grid(quickstart_tree):
    released = _released(quickstart_tree)
    view = comparison_view(released, {})
    single = parse(render_html(report_page((view,))))
    assert not single.find_all("table", cls="summary-grid")
    double = parse(render_html(report_page((view, view))))
    grid = double.find("table", cls="summary-grid")
    rows = grid.rows()
    assert len(rows) == 2
    assert rows[0][:3] == [released.a.name, released.b.name, released.relation]
    assert len(double.find_all("article", cls="comparison")) == 2


def test_a_failed_condition_is_a_failed_row_and_no_verdict(quickstart_tree):
    raw = json.loads(_released(quickstart_tree).model_dump_json(by_alias=True))
    raw["relation"] = "not-comparable"
    raw["comparability"]["comparable"] = False
    raw["comparability"]["comparison_key"] = None
    raw["comparability"]["failures"] = [
        {
            "condition": "C3",
            "reason": "evaluator-differs",
            "differences": [
                {"item": "outcome", "a": ["sha256:aaa"], "b": ["sha256:bbb", None], "suite": None}
            ],
        }
    ]
    dom = parse(render_html(report_page((comparison_view(ComparisonReport(**raw), {}),))))
    assert dom.find(cls="badge", data_relation="not-comparable").text() == "not-comparable"
    rows = {row[0]: row for row in dom.find("table", cls="comparability").rows()}
    assert rows["C3"][2] == "failed evaluator-differs" and rows["C1"][2] == "holds"
    assert rows["C3"][3] == (
        'outcome: calculator "sha256:aaa" vs mental "sha256:bbb", — (not declared or not run)'
    )
    assert "A condition failed: no verdict is given." in dom.find(id="comparability").text()


def test_the_pareto_front_keeps_the_points_nothing_beats():
    from xaytune.report._plots import pareto_front

    # (cost, success): (2, 0.5) is beaten by (1, 0.6); (3, 0.6) by (1, 0.6) too.
    points = [(2.0, 0.5), (1.0, 0.6), (3.0, 0.6), (4.0, 0.9), (1.0, 0.4)]
    assert pareto_front(points) == [(1.0, 0.6), (4.0, 0.9)]
    assert pareto_front([(1.0, 1.0)]) == [(1.0, 1.0)]
