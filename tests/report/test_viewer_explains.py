"""The viewer explains the comparison (issue 32 item 1), in a real browser.

From a verdict to the tasks behind it (a click), search and sort on the entry page,
three candidates side by side, filters that name the challenger, the reference answer
and the scorer's reasons on task pages. Every expected value is computed here from
the run's own files by another route than the viewer's: the per-task outcomes from
each replicate's restricted evaluation report (the viewer reads the replicate record
and the comparison's restricted report), the reference from the suite, the verdicts
from report.json.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
from pathlib import Path

import pytest
from _browser import dump_dom, parse
from _devtools import open_browser
from entry_runs import run_module

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.suites import builtin_suite_path

pytestmark = pytest.mark.slow


def _per_task(tree: Path, metric: str = "task_success") -> dict[tuple[str, int], dict]:
    """(candidate label, seed) -> task id -> value of ``metric``, from each replicate's
    restricted evaluation report."""
    found = {}
    for path in sorted(tree.glob("candidates/*/seed-*/evaluation/outcome/restricted/*.json")):
        replicate = path.parents[3]
        label = json.loads((replicate.parent / "candidate.json").read_text())["label"]
        seed = int(replicate.name.removeprefix("seed-"))
        restricted = json.loads(path.read_text())
        (column,) = [c for c in restricted["task_columns"] if c["metric"] == metric]
        found[(label, seed)] = dict(zip(restricted["task_ids"], column["values"], strict=True))
    return found


def _contributions(tree: Path, challenger: str, metric: str, sign: int) -> dict[str, float]:
    """Each task's part of the mean paired difference (+ favours the baseline ``a``):
    Σ over its seeds of sign·(a − challenger) / (tasks under the seed × seeds)."""
    values = _per_task(tree, metric)
    seeds = sorted({seed for _, seed in values})
    found: dict[str, float] = {}
    for seed in seeds:
        a, b = values[("a", seed)], values[(challenger, seed)]
        for task in a:
            share = sign * (a[task] - b[task]) / (len(a) * len(seeds))
            found[task] = found.get(task, 0.0) + share
    return {task: share for task, share in found.items() if share != 0}


def _site(tree: Path, out: Path) -> Path:
    done = run_module(["xaytune.view", str(tree), "--out", str(out)], tree.parent)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def site(quickstart_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _site(quickstart_tree, tmp_path_factory.mktemp("explains") / "site")


@pytest.fixture(scope="module")
def three_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """calculator, mental and terse on 6 tasks a seed, scored by token F1 (a scorer
    that gives a reason for every task)."""
    cwd = tmp_path_factory.mktemp("three")
    out = cwd / "run"
    done = run_module(
        [
            "xaytune",
            "+experiment=quickstart",
            "progress=false",
            "+candidate@candidates.c=terse",
            "sampling.count=6",
            "evaluators.outcome.config.spec.scorer.name=f1",
            f"hydra.run.dir={out}",
        ],
        cwd,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def three_site(three_tree: Path) -> Path:
    return _site(three_tree, three_tree.parent / "site")


def _run(coroutine):
    return asyncio.run(coroutine)


def test_the_entry_page_shows_each_verdict_as_the_comparison_published_it(site, quickstart_tree):
    report = json.loads((quickstart_tree / "comparison" / "report.json").read_text())
    dom = parse(dump_dom(site / "index.html"))
    section = dom.find("section", id="comparison-b")
    assert section.find(cls="badge").attrs["data-relation"] == report["relation"]
    for objective in report["spec"]["objectives"]:
        metric = objective["metric"]
        row = section.find("tr", data_metric=metric)
        link = row.find("a", cls="verdict")
        assert link.attrs["data-verdict"] == report["metrics"][metric]["verdict"]
        assert link.attrs["href"] == f"objective-b-{metric}.html"


def test_clicking_a_verdict_opens_its_tasks_ranked_by_contribution(site, quickstart_tree, tmp_path):
    report = json.loads((quickstart_tree / "comparison" / "report.json").read_text())

    async def follow() -> list[tuple[str, float]]:
        async with open_browser(tmp_path) as page:
            await page.goto((site / "index.html").as_uri())
            await page.click("#comparison-b tr[data-metric='task_success'] a.verdict")
            await page.wait_for("location.pathname.endsWith('objective-b-task_success.html')")
            await page.wait_for("document.readyState === 'complete'")
            return await page.evaluate(
                "[...document.querySelectorAll('#ranked tbody tr')].map("
                "r => [r.dataset.task, Number(r.dataset.contribution)])"
            )

    ranked = _run(follow())
    # task_success is maximized: + favours the baseline is a − b.
    expected = _contributions(quickstart_tree, "b", "task_success", +1)
    assert expected  # the quickstart's mental loses tasks the calculator solves
    assert {task for task, _ in ranked} == set(expected)
    for task, contribution in ranked:
        assert contribution == pytest.approx(expected[task], abs=1e-12)
    # Largest first (the mean is positive: the tasks pushing it up lead), ties by id.
    assert ranked == sorted(ranked, key=lambda item: (-item[1], item[0]))
    # The contributions add up to the published mean paired difference.
    published = report["metrics"]["task_success"]["mean"]
    assert sum(c for _, c in ranked) == pytest.approx(published, abs=1e-9)


def test_tokens_ranked_tasks_are_the_largest_per_task_differences(site, quickstart_tree):
    # total_tokens is minimized: + favours the baseline is challenger − baseline.
    expected = _contributions(quickstart_tree, "b", "total_tokens", -1)
    dom = parse((site / "objective-b-total_tokens.html").read_text())
    rows = dom.find("table", id="ranked").find("tbody").find_all("tr")
    shown = [(row.attrs["data-task"], float(row.attrs["data-contribution"])) for row in rows]
    assert {task for task, _ in shown} == set(expected)
    for task, contribution in shown:
        assert contribution == pytest.approx(expected[task], rel=1e-12)
    report = json.loads((quickstart_tree / "comparison" / "report.json").read_text())
    mean = report["metrics"]["total_tokens"]["mean"]
    assert mean < 0  # mental spends fewer tokens: its largest savings lead
    assert [c for _, c in shown] == sorted(c for _, c in shown)
    assert sum(c for _, c in shown) == pytest.approx(mean, rel=1e-9)
    # Each objective has its filters: every task favouring mental on tokens.
    listed = parse((site / "b-total_tokens-challenger.html").read_text())
    tasks = {row.attrs["data-task"] for row in listed.find("tbody").find_all("tr")}
    assert tasks == {task for task, c in expected.items() if c < 0}


def test_search_by_task_id_and_by_input_text(site, quickstart_tree, tmp_path):
    source = SuiteSource(builtin_suite_path("arith-tools"))
    every = sorted({t for tasks in _per_task(quickstart_tree).values() for t in tasks})
    task = every[3]
    question = source.suite.task(task).input["question"]
    # A piece of its question no other listed task holds.
    others = [source.suite.task(t).input["question"] for t in every if t != task]
    piece = next(
        question[i : i + 18]
        for i in range(len(question) - 18)
        if not any(question[i : i + 18].lower() in other.lower() for other in others)
    )

    async def search() -> tuple[list[str], list[str], str]:
        async with open_browser(tmp_path) as page:
            await page.goto((site / "index.html").as_uri())
            await page.evaluate("document.getElementById('search').focus()")
            await page.send("Input.insertText", text=task)
            by_id = await page.evaluate(
                "[...document.querySelectorAll('#explorer tbody tr')].map(r => r.dataset.task)"
            )
            await page.evaluate(
                "(() => { const s = document.getElementById('search'); s.value = '';"
                " s.dispatchEvent(new Event('input')); s.focus(); })()"
            )
            await page.send("Input.insertText", text=piece.upper())
            by_text = await page.evaluate(
                "[...document.querySelectorAll('#explorer tbody tr')].map(r => r.dataset.task)"
            )
            return by_id, by_text, await page.evaluate("location.hash")

    by_id, by_text, fragment = _run(search())
    assert by_id == [task]
    assert by_text == [task]
    assert fragment.startswith("#q=")  # the state is in the address: a link reopens it


def test_sorting_by_a_column_and_filtering_from_the_address(site, quickstart_tree, tmp_path):
    expected = _contributions(quickstart_tree, "b", "total_tokens", -1)

    async def sort() -> tuple[list[str], list[str], list[str]]:
        async with open_browser(tmp_path) as page:
            await page.goto((site / "index.html").as_uri())
            # Columns: task, input, 3 seeds x 2 candidates, then one per objective.
            button = "#explorer thead button[data-sort='o1']"  # total_tokens: mental
            await page.click(button)
            rows = "[...document.querySelectorAll('#explorer tbody tr')].map(r => r.dataset.task)"
            ascending = await page.evaluate(rows)
            await page.click(button)
            descending = await page.evaluate(rows)
            url = (site / "index.html").as_uri() + "#filter=regressions"
            await page.goto(url)
            await page.evaluate("location.reload()")
            await page.wait_for("document.readyState === 'complete'")
            # The explorer renders its rows from its script once loaded: read them then.
            await page.wait_for("document.querySelectorAll('#explorer tbody tr').length > 0")
            return ascending, descending, await page.evaluate(rows)

    ascending, descending, regressions = _run(sort())
    count = len(expected)  # tasks without a value sort last, either way
    assert set(ascending[:count]) == set(descending[:count]) == set(expected)
    # (rounded: the page sums a task's shares in another order than this test does)
    up = [round(expected[task], 9) for task in ascending[:count]]
    down = [round(expected[task], 9) for task in descending[:count]]
    assert up == sorted(up) and down == sorted(down, reverse=True) and up[0] < up[-1]
    outcomes = _per_task(quickstart_tree)
    wanted = {
        task
        for (label, seed), tasks in outcomes.items()
        if label == "a"
        for task, value in tasks.items()
        if value == 1 and outcomes[("b", seed)][task] == 0
    }
    assert set(regressions) == wanted and len(regressions) == len(wanted)


def test_three_candidates_sit_side_by_side_with_equal_top_edges(three_site, three_tree, tmp_path):
    outcomes = _per_task(three_tree)
    seed, task = next(
        (seed, task) for (label, seed), tasks in sorted(outcomes.items()) for task in tasks
    )
    page_path = three_site / "tasks" / f"{task}.html"

    async def boxes() -> list[dict]:
        async with open_browser(tmp_path) as page:
            await page.goto(page_path.as_uri())
            return await page.evaluate(
                f"[...document.querySelectorAll('#seed-{seed} .side')].map(e => {{"
                " const r = e.getBoundingClientRect();"
                " return {name: e.dataset.candidate, top: r.top, left: r.left, width: r.width}; })"
            )

    found = _run(boxes())
    assert [box["name"] for box in found] == ["calculator", "mental", "terse"]
    assert len({box["top"] for box in found}) == 1  # one row: none wraps below
    lefts = [box["left"] for box in found]
    assert lefts == sorted(lefts) and len(set(lefts)) == 3
    for box, following in itertools.pairwise(found):
        assert box["left"] + box["width"] <= following["left"]  # side by side, no overlap


def test_regressions_name_the_challenger_that_regressed(three_site, three_tree):
    outcomes = _per_task(three_tree)
    seeds = sorted({seed for _, seed in outcomes})

    def regressed(label: str) -> set[str]:
        return {
            task
            for seed in seeds
            for task, value in outcomes[("a", seed)].items()
            if value == 1 and outcomes[(label, seed)][task] == 0
        }

    for label, name in (("b", "mental"), ("c", "terse")):
        dom = parse((three_site / f"regressions-{label}.html").read_text())
        assert dom.find("h1").text() == f"regressions (calculator right, {name} wrong)"
        listed = {row.attrs["data-task"] for row in dom.find("tbody").find_all("tr")}
        assert listed == regressed(label)
    # The one-challenger filter names are not used with several challengers.
    assert not (three_site / "regressions.html").exists()


def test_task_page_shows_the_reference_and_the_scorers_reasons(three_site, three_tree):
    source = SuiteSource(builtin_suite_path("arith-tools"))
    reasons: dict[tuple[str, int, str], list[str]] = {}
    names = {"a": "calculator", "b": "mental", "c": "terse"}
    for path in three_tree.glob("candidates/*/seed-*/evaluation/outcome/restricted/*.json"):
        replicate = path.parents[3]
        label = json.loads((replicate.parent / "candidate.json").read_text())["label"]
        seed = int(replicate.name.removeprefix("seed-"))
        for item in json.loads(path.read_text())["scorer_reasons"]:
            reasons.setdefault((names[label], seed, item["task_id"]), []).append(item["reason"])
    assert reasons  # the F1 scorer gives a reason on every task
    (_, seed, task), _ = sorted(reasons.items())[0]
    dom = parse((three_site / "tasks" / f"{task}.html").read_text())
    shown = dom.find("tr", id="reference").find("td").text()
    assert shown == source.reference(task).text
    row = dom.find("table", id="outcomes").find("tr", data_seed=str(seed))
    cells = row.find_all("td", cls="cell")
    for name, cell in zip(("calculator", "mental", "terse"), cells, strict=True):
        got = [node.attrs["data-reason"] for node in cell.find_all(cls="scorer-reason")]
        assert got == [f"outcome: {reason}" for reason in reasons[(name, seed, task)]]


def test_a_challenger_not_compared_shows_why_and_no_verdict(quickstart_tree, tmp_path):
    # The run's errors record says mental is not compared (too many model errors): the
    # viewer withholds its verdicts as the reports do. Edited here with its manifest
    # digest, as the run would have written it.
    from xaytune.core.canonical import canonical_bytes, sha256_digest
    from xaytune.viewer import build_site

    tree = tmp_path / "run"
    shutil.copytree(quickstart_tree, tree)
    path = tree / "comparison" / "errors.json"
    record = json.loads(path.read_bytes()) if path.is_file() else {}
    why = "model errors: mental 3 of 20 tasks"
    data = canonical_bytes({**record, "not_compared": {"b": why}}) + b"\n"
    path.write_bytes(data)
    manifest = json.loads((tree / "manifest.json").read_bytes())
    manifest["reports"]["comparison/errors.json"] = sha256_digest(data)
    (tree / "manifest.json").write_bytes(canonical_bytes(manifest) + b"\n")
    build_site(tree, tmp_path / "site")
    section = parse((tmp_path / "site" / "index.html").read_text()).find(
        "section", id="comparison-b"
    )
    assert why in section.find(cls="not-compared").text()
    assert not section.find_all("a", cls="verdict") and not section.find_all(data_relation=True)
    assert not (tmp_path / "site" / "objective-b-task_success.html").exists()
    # An errors record that is not the one the manifest recorded: no verdict either.
    path.write_bytes(data.replace(b"3 of 20", b"4 of 20"))
    build_site(tree, tmp_path / "again")
    section = parse((tmp_path / "again" / "index.html").read_text()).find(
        "section", id="comparison-b"
    )
    assert "digest-mismatch" in section.find(cls="problem").text()
    assert not section.find_all("a", cls="verdict")
