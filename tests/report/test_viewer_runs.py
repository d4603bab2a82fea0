"""The viewer on the other kinds of tree: a models run (one site, a model switcher, a
summary across models), an unfinished or failed run (opened, marked as such, never
written into or locked), and a run whose loop crashed on some tasks (the errors
grouped by cause, with the exception's type and message).

Expected values come from the tree's files by another route than the viewer's: the
verdicts from each model's report.json and from models.json, the crashed tasks from
the suite's questions (the test loop raises on a question holding a "3").
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from _browser import dump_dom, parse
from _devtools import open_browser
from entry_runs import REPO_ROOT, run_module

from xaytune.audit.verify import audit_tree
from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.suites import builtin_suite_path
from xaytune.viewer import build_site, open_run, tree_writer_pid

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent


def _xaytune(cwd: Path, out: Path, *overrides: str) -> None:
    """Run an experiment as a user does, with this directory's test loops importable
    by dotted path (``_viewer_parts.<loop>``)."""
    env_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE)] + ([env_path] if env_path else []))
    try:
        done = run_module(["xaytune", "progress=false", *overrides, f"hydra.run.dir={out}"], cwd)
    finally:
        if env_path is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = env_path
    assert done.returncode in (0, 1, 2), done.stderr[-3000:]


@pytest.fixture(scope="module")
def models_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("models")
    out = cwd / "run"
    _xaytune(cwd, out, "+experiment=quickstart_models", "sampling.count=4")
    assert json.loads((out / "manifest.json").read_text())["complete"] is True
    return out


def _crashing(seed: int, count: int) -> list[str]:
    """The tasks of the seed's assignment whose question holds a "3"."""
    source = SuiteSource(builtin_suite_path("arith-tools"))
    assignment = record_assignment(source.suite, SeededSample(count=count), seed=seed)
    return [t for t in assignment.task_ids if "3" in source.suite.task(t).input["question"]]


@pytest.fixture(scope="module")
def failed_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose challenger's loop raises on every task: no task attested, the run
    stops before its comparison (its manifest stays ``complete: false``). Its one seed is
    one on which the baseline runs first (the order is a permutation drawn from the seed
    and the harness fingerprints, so it moves when the code of a built-in part does): the
    baseline's replicate is finished, the challenger's stopped the run."""
    for seed in range(101, 121):
        cwd = tmp_path_factory.mktemp("failed")
        out = cwd / "run"
        _xaytune(
            cwd,
            out,
            "+experiment=quickstart",
            "sampling.count=4",
            f"seeds=[{seed}]",
            "candidates.b.loop=_viewer_parts.crash_always",
        )
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["complete"] is False
        if manifest["candidate_order"]["by_seed"][str(seed)][0] == "a":
            return out
    raise AssertionError("no seed of 101..120 runs the baseline first")


def _seed_of(tree: Path) -> str:
    (seed,) = json.loads((tree / "manifest.json").read_text())["candidate_order"]["by_seed"]
    return seed


def test_a_models_run_opens_as_one_site_with_a_summary_across_models(models_tree, tmp_path):
    out = tmp_path / "site"
    done = run_module(["xaytune.view", str(models_tree), "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "models careful, sloppy, usual" in done.stdout
    summary = json.loads((models_tree / "comparison" / "models.json").read_text())
    dom = parse(dump_dom(out / "index.html"))
    assert dom.find(id="restricted")
    table = dom.find("table", id="summary")
    for row in summary["rows"]:
        shown = table.find("tr", data_challenger=row["challenger"], data_metric=row["metric"])
        for model, verdict in row["verdicts"].items():
            link = shown.find("td", data_model=model).find("a")
            assert link.attrs["data-verdict"] == verdict
            target = out / link.attrs["href"]
            assert target.is_file()  # the ranked tasks behind that model's verdict
    assert [a.attrs["data-model"] for a in dom.find("nav", id="models").find_all("a")] == [
        "careful",
        "sloppy",
        "usual",
    ]


def test_the_model_switcher_goes_to_the_same_page_under_another_model(models_tree, tmp_path):
    out = build_site(models_tree, tmp_path / "site").out
    start = out / "models" / "careful" / "objective-b-task_success.html"
    assert start.is_file()

    async def switch() -> tuple[str, str, str]:
        async with open_browser(tmp_path) as page:
            await page.goto(start.as_uri())
            await page.click("nav#models a[data-model='sloppy']")
            await page.wait_for("location.pathname.includes('/models/sloppy/')")
            await page.wait_for("document.readyState === 'complete'")
            here = await page.evaluate("location.pathname")
            verdict = await page.evaluate("document.getElementById('verdict').dataset.verdict")
            current = await page.evaluate(
                "document.querySelector('nav#models [aria-current=page]').dataset.model"
            )
            return here, verdict, current

    here, verdict, current = asyncio.run(switch())
    assert here.endswith("/models/sloppy/objective-b-task_success.html")
    assert current == "sloppy"
    report = json.loads((models_tree / "models/sloppy/comparison/report.json").read_text())
    assert verdict == report["metrics"]["task_success"]["verdict"]


def _snapshot(tree: Path) -> dict[str, tuple[int, str]]:
    return {
        str(path.relative_to(tree)): (
            path.stat().st_mtime_ns,
            hashlib.sha256(path.read_bytes()).hexdigest(),
        )
        for path in sorted(tree.rglob("*"))
        if path.is_file()
    }


def test_a_failed_run_opens_marked_unfinished_with_its_crashes(failed_tree, tmp_path):
    seed = _seed_of(failed_tree)
    problems, _, _ = audit_tree(failed_tree)
    assert problems  # verify refuses it ...
    before = _snapshot(failed_tree)
    out = tmp_path / "site"
    done = run_module(["xaytune.view", str(failed_tree), "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr  # ... the viewer shows what is sealed
    assert _snapshot(failed_tree) == before
    dom = parse(dump_dom(out / "index.html"))
    banner = dom.find(id="run-state")
    assert banner.attrs["data-state"] == "unfinished"
    assert "complete: false" in banner.text()
    assert dom.find(id="no-comparison")
    crashed = sorted(
        json.loads(f.read_bytes().split(b"\n", 1)[0])["config"]["task"]["binding"]["task_id"]
        for f in failed_tree.glob(f"candidates/mental/seed-{seed}/evidence/tasks/*/*.jsonl")
    )
    assert len(crashed) == 4  # every task of the challenger, one attempt each
    (group,) = dom.find("table", id="causes").find("tbody").find_all("tr")
    assert group.attrs["data-cause"] == "crash: loop RuntimeError"
    cells = group.find_all("td")
    assert cells[1].text() == "4" and cells[2].text() == "RuntimeError: the loop is broken"
    assert sorted(a.text() for a in cells[3].find_all("a")) == crashed
    # The baseline's replicate finished: its outcomes are shown, marked unsealed.
    page = parse((out / "tasks" / f"{crashed[0]}.html").read_text())
    row = page.find("table", id="outcomes").find("tr", data_seed=seed)
    calculator, mental = row.find_all("td", cls="cell")
    assert calculator.attrs["data-state"] in ("success", "failure")
    assert "record not sealed yet" in calculator.text()
    assert mental.attrs["data-state"] == "absent"
    attempt = page.find("div", cls="side", data_candidate="mental").find(cls="attempt")
    assert attempt.attrs["data-verifies"] == "true"
    assert attempt.find(cls="cause").attrs["data-cause"] == "crash: loop RuntimeError"


def test_a_live_writer_is_named_and_its_lock_never_taken(failed_tree, tmp_path):
    tree = tmp_path / "run"
    shutil.copytree(failed_tree, tree)
    lock = tree / ".xaytune.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a writer holding the tree
        os.write(fd, f"{os.getpid()}\n".encode())
        before = _snapshot(tree)
        assert tree_writer_pid(tree) == str(os.getpid())
        assert open_run(tree).writer == str(os.getpid())
        # In another process: a viewer that tried to lock (even shared, without
        # waiting) would fail; one that waited would hang past the timeout.
        out = tmp_path / "site"
        done = run_module(["xaytune.view", str(tree), "--out", str(out)], tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr
        assert _snapshot(tree) == before
        banner = parse((out / "index.html").read_text()).find(id="run-state")
        assert banner.attrs["data-state"] == "live"
        assert f"by process {os.getpid()}" in banner.text()
    finally:
        os.close(fd)
    assert tree_writer_pid(tree) is None  # released: nobody is writing it


def test_crashes_on_some_tasks_are_grouped_with_their_message(tmp_path):
    tree = tmp_path / "run"
    _xaytune(
        tmp_path,
        tree,
        "+experiment=quickstart",
        "sampling.count=6",
        "seeds=[101,102]",
        "candidates.b.loop=_viewer_parts.crash_on_three",
    )
    assert json.loads((tree / "manifest.json").read_text())["complete"] is True
    expected = sorted((task, seed) for seed in (101, 102) for task in _crashing(seed, 6))
    assert expected  # some questions hold a "3"
    out = build_site(tree, tmp_path / "site").out
    dom = parse((out / "index.html").read_text())
    (group,) = dom.find("table", id="causes").find("tbody").find_all("tr")
    assert group.attrs["data-cause"] == "crash: loop ValueError"
    cells = group.find_all("td")
    assert cells[1].text() == str(len(expected))
    assert cells[2].text() == "ValueError: the loop refuses threes"
    listed = cells[3].text()
    for task, seed in expected:
        assert f"{task} mental · {seed}" in listed
    # The errors filter lists exactly those tasks.
    rows = parse((out / "errors.html").read_text()).find("tbody").find_all("tr")
    assert {row.attrs["data-task"] for row in rows} == {task for task, _ in expected}
    assert str(REPO_ROOT) not in (out / "index.html").read_text()


def test_an_attempt_without_a_seal_in_an_unfinished_run_is_open_not_broken(failed_tree, tmp_path):
    # What a run killed mid-attempt leaves: whole events and no seal line.
    tree = tmp_path / "run"
    shutil.copytree(failed_tree, tree)
    seed = _seed_of(failed_tree)
    attempt = tree / f"candidates/mental/seed-{seed}/evidence/tasks/000001/001.jsonl"
    lines = attempt.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1])["status"] == "partial"  # the seal
    attempt.write_bytes(b"".join(lines[:-1]))
    task = json.loads(lines[0])["config"]["task"]["binding"]["task_id"]
    site = build_site(tree, tmp_path / "site")
    assert site.counts["does-not-verify"] == 0
    page = parse((tmp_path / "site" / "tasks" / f"{task}.html").read_text())
    cell = page.find("table", id="outcomes").find("tr", data_seed=seed).find_all("td")[2]
    assert cell.attrs["data-state"] == "absent" and cell.text() == "open (no seal)"
    shown = page.find("div", cls="side", data_candidate="mental").find(cls="attempt")
    assert shown.attrs["data-verifies"] == "open"
    assert not shown.find_all(cls="event")  # nothing unsealed is laid out
