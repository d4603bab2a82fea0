"""The viewer (``python -m xaytune.view``) on the quickstart, in a real browser.

The regressions filter must list exactly the tasks where the baseline (candidate a)
succeeded and the challenger (b) failed on some seed, computed here independently
from the outcome evaluator's restricted reports; a tampered attempt file shows as
"does not verify"; a directory that is not a run tree is refused in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from _browser import dump_dom, parse, png_size, screenshot
from entry_runs import REPO_ROOT, run_module

from xaytune.viewer import open_run, write_site

pytestmark = pytest.mark.slow


def _outcomes(tree: Path) -> dict[tuple[str, int], dict[str, float | None]]:
    """(candidate label, seed) -> task id -> task_success, read from each replicate's
    restricted evaluation report (not the replicate record the viewer reads)."""
    found = {}
    for path in sorted(tree.glob("candidates/*/seed-*/evaluation/outcome/restricted/*.json")):
        replicate = path.parents[3]
        label = json.loads((replicate.parent / "candidate.json").read_text())["label"]
        seed = int(replicate.name.removeprefix("seed-"))
        restricted = json.loads(path.read_text())
        (column,) = [c for c in restricted["task_columns"] if c["metric"] == "task_success"]
        found[(label, seed)] = dict(zip(restricted["task_ids"], column["values"], strict=True))
    return found


def _expected(tree: Path, baseline: float, challenger: float) -> set[str]:
    outcomes = _outcomes(tree)
    seeds = {seed for _, seed in outcomes}
    return {
        task
        for seed in seeds
        for task, value in outcomes[("a", seed)].items()
        if value == baseline and outcomes[("b", seed)].get(task) == challenger
    }


def _view(tree: Path, *args: str):
    return run_module(["xaytune.view", str(tree), *args], tree.parent)


def _listed(site: Path, name: str, *, browser: bool = False) -> list[str]:
    """The task ids a filter's pages list: as the browser builds them (``browser``),
    or as the files hold them."""
    tasks = []
    page, number = site / f"{name}.html", 1
    while page.is_file():
        dom = parse(dump_dom(page) if browser else page.read_text())
        assert dom.find(id="restricted").text().startswith("Restricted, per-task material")
        rows = dom.find("table", id="tasks").find("tbody").find_all("tr")
        tasks += [row.attrs["data-task"] for row in rows]
        number += 1
        page = site / f"{name}-{number}.html"
    return tasks


def _main(capsys, *args: str | Path) -> tuple[int, str, str]:
    """``python -m xaytune.view *args`` in this process: (exit code, stdout, stderr)."""
    from xaytune.view import main

    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def site(quickstart_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view") / "site"
    done = _view(quickstart_tree, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"site: {out / 'index.html'} (")
    return out


def test_regressions_filter_lists_exactly_baseline_right_challenger_wrong(
    site, quickstart_tree, tmp_path
):
    expected = _expected(quickstart_tree, 1, 0)
    assert expected  # the quickstart's mental loses tasks the calculator solves
    listed = _listed(site, "regressions", browser=True)
    assert len(listed) == len(set(listed)) and set(listed) == expected
    assert set(_listed(site, "improvements")) == _expected(quickstart_tree, 0, 1)
    assert set(_listed(site, "both-wrong")) == _expected(quickstart_tree, 0, 0)
    every = {task for tasks in _outcomes(quickstart_tree).values() for task in tasks}
    assert set(_listed(site, "all")) == every
    assert _listed(site, "does-not-verify") == []
    shot = screenshot(site / "regressions.html", tmp_path / "viewer-regressions.png")
    assert png_size(shot.read_bytes()) == (1280, 1600)


def test_task_page_shows_both_transcripts_side_by_side_verified(site, quickstart_tree, tmp_path):
    task = sorted(_expected(quickstart_tree, 1, 0))[0]
    page = site / "tasks" / f"{task}.html"
    dom = parse(dump_dom(page))
    assert dom.find(id="restricted")
    outcomes = _outcomes(quickstart_tree)
    for section in dom.find_all("section", cls="seed"):
        seed = int(section.attrs["id"].removeprefix("seed-"))
        sides = section.find_all("div", cls="side")
        assert [side.attrs["data-candidate"] for side in sides] == ["calculator", "mental"]
        for side in sides:
            (attempt,) = side.find_all("div", cls="attempt")
            assert attempt.attrs["data-verifies"] == "true"
            kinds = [event.attrs["data-kind"] for event in attempt.find_all(cls="event")]
            assert kinds[0] == "start" and kinds[-1] == "end" and "model_reply" in kinds
            assert "input tokens" in [dt.text() for dt in attempt.find_all("dt")]
            text = attempt.text()
            assert "sealed complete" in text and "outcome answer" in text
        row = dom.find("table", id="outcomes").find("tr", data_seed=str(seed))
        states = [cell.attrs["data-state"] for cell in row.find_all("td", cls="cell")]
        words = {1: "success", 0: "failure"}
        assert states == [words[outcomes[(lab, seed)][task]] for lab in ("a", "b")]
    # The calculator's transcript holds its tool calls and their results.
    calculator = dom.find("div", cls="side", data_candidate="calculator")
    kinds = {event.attrs["data-kind"] for event in calculator.find_all(cls="event")}
    assert {"model_reply", "tool_result"} <= kinds
    screenshot(page, tmp_path / "viewer-task.png")


def test_every_page_says_it_shows_restricted_material(site):
    # The report pages copied under reports/ are the released report's (not restricted).
    pages = sorted(p for p in site.rglob("*.html") if "reports" not in p.relative_to(site).parts)
    assert len(pages) > 50
    for page in pages:
        dom = parse(page.read_text())
        assert "Restricted, per-task material" in dom.find(id="restricted").text(), page
        scripts = dom.find_all("script")
        if page == site / "index.html":  # the task explorer: its data and its code, inline
            assert [s.attrs.get("type") for s in scripts] == ["application/json", None]
            assert not any(s.attrs.get("src") for s in scripts)
        else:
            assert not scripts, page


def _flip_a_byte_of_a_reply(path: Path) -> None:
    """Change one byte of the first model reply's text (the file stays valid JSONL)."""
    data = bytearray(path.read_bytes())
    at = data.index(b'"text":"', data.index(b'"type":"model_reply"')) + len(b'"text":"')
    data[at] = ord("X") if data[at] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))


def test_a_tampered_attempt_shows_as_does_not_verify(quickstart_tree, tmp_path, capsys):
    tree = tmp_path / "run"
    shutil.copytree(quickstart_tree, tree)
    attempt = (
        tree / "candidates" / "mental" / "seed-102" / "evidence" / "tasks" / "000004" / "001.jsonl"
    )
    _flip_a_byte_of_a_reply(attempt)
    out = tmp_path / "site"
    code, stdout, stderr = _main(capsys, tree, "--out", out)
    assert code == 0, stderr
    assert "does-not-verify 1" in stdout
    spec = json.loads(attempt.read_bytes().split(b"\n", 1)[0])
    task = spec["config"]["task"]["binding"]["task_id"]
    assert _listed(out, "does-not-verify", browser=True) == [task]
    dom = parse(dump_dom(out / "tasks" / f"{task}.html"))
    side = dom.find("section", id="seed-102").find("div", cls="side", data_candidate="mental")
    (shown,) = side.find_all("div", cls="attempt")
    assert shown.attrs["data-verifies"] == "false"
    assert "does not verify" in shown.text()
    problem = shown.find(cls="problem").text()
    assert problem.startswith("chain-") and "candidates/mental/seed-102" in problem
    assert not shown.find_all(cls="event")  # nothing of it laid out as a transcript
    row = dom.find("table", id="outcomes").find("tr", data_seed="102")
    assert [c.attrs["data-state"] for c in row.find_all("td", cls="cell")][1] == "does-not-verify"
    # The other candidate's attempt of the same task still verifies.
    other = dom.find("section", id="seed-102").find("div", cls="side", data_candidate="calculator")
    assert other.find("div", cls="attempt").attrs["data-verifies"] == "true"


@pytest.mark.parametrize("what", ["empty directory", "a file", "missing", "a candidate dir"])
def test_not_a_run_tree_is_refused_in_one_line_exit_2(what, quickstart_tree, tmp_path, capsys):
    target = {
        "empty directory": tmp_path,
        "a file": quickstart_tree / "manifest.json",
        "missing": tmp_path / "nowhere",
        "a candidate dir": quickstart_tree / "candidates" / "calculator",
    }[what]
    code, stdout, stderr = _main(capsys, target, "--out", tmp_path / "site")
    assert code == 2 and stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1 and "not-a-run" in lines[0] and str(target) in lines[0]
    assert not (tmp_path / "site").exists()


def test_the_command_refuses_a_non_run_in_one_line_exit_2(tmp_path):
    # The command as a user runs it: no traceback, one line, exit 2.
    done = run_module(["xaytune.view", str(tmp_path)], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    expected = f"error: not-a-run: {tmp_path}: no manifest.json; not an xaytune run tree\n"
    assert done.stderr == expected


def _snapshot(tree: Path) -> dict[str, tuple[int, str]]:
    return {
        str(path.relative_to(tree)): (
            path.stat().st_mtime_ns,
            hashlib.sha256(path.read_bytes()).hexdigest(),
        )
        for path in sorted(tree.rglob("*"))
        if path.is_file()
    } | {str(p.relative_to(tree)) + "/": (0, "") for p in tree.rglob("*") if p.is_dir()}


def test_the_viewer_writes_nothing_inside_the_run_tree(quickstart_tree, tmp_path):
    before = _snapshot(quickstart_tree)
    done = _view(quickstart_tree)  # default: beside the run, <run>.view, printed
    assert done.returncode == 0, done.stderr
    found = re.fullmatch(r"site: (\S+)/index\.html \((\d+) tasks; .*\)\n", done.stdout)
    assert found, done.stdout
    out = Path(found[1])
    try:
        assert (out / "index.html").is_file() and out.name == quickstart_tree.name + ".view"
        assert out.parent == quickstart_tree.resolve().parent
    finally:
        shutil.rmtree(out)
    inside = _view(quickstart_tree, "--out", str(quickstart_tree / "site"))
    assert inside.returncode == 2 and "bad-output" in inside.stderr
    assert _snapshot(quickstart_tree) == before


def test_an_output_directory_holding_other_files_is_refused(quickstart_tree, tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("keep me")
    code, _, stderr = _main(capsys, quickstart_tree, "--out", tmp_path)
    assert code == 2 and "bad-output" in stderr and len(stderr.splitlines()) == 1
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    # A site the viewer wrote before is replaced whole.
    site = tmp_path / "site"
    assert _main(capsys, quickstart_tree, "--out", site)[0] == 0
    (site / "tasks" / "stale.html").write_text("old")
    assert _main(capsys, quickstart_tree, "--out", site)[0] == 0
    assert not (site / "tasks" / "stale.html").exists()


def test_index_pages_paginate_and_the_site_is_deterministic(quickstart_tree, tmp_path):
    tree = open_run(quickstart_tree)
    first = write_site(tree, tmp_path / "one", page_size=10)
    write_site(tree, tmp_path / "two", page_size=10)
    pages = sorted(p.name for p in (tmp_path / "one").glob("*.html"))
    assert {"all.html", "all-2.html", "regressions.html", "regressions-2.html"} <= set(pages)
    rows = []
    for name in ["all.html", *(f"all-{n}.html" for n in range(2, 20))]:
        page = tmp_path / "one" / name
        if page.is_file():
            found = parse(page.read_text()).find("table", id="tasks").find("tbody").find_all("tr")
            assert len(found) <= 10
            rows += [row.attrs["data-task"] for row in found]
    assert len(rows) == len(set(rows)) == first.tasks == first.counts["all"]
    for page in (tmp_path / "one").rglob("*.html"):
        assert (
            page.read_bytes()
            == (tmp_path / "two" / page.relative_to(tmp_path / "one")).read_bytes()
        )


def test_serve_serves_the_site_on_localhost(quickstart_tree, tmp_path):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "xaytune.view",
            str(quickstart_tree),
            "--out",
            str(tmp_path / "s"),
            "--serve",
            "--port",
            "0",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline().startswith("site: ")
        line = process.stdout.readline()
        found = re.fullmatch(
            r"serving (http://127\.0\.0\.1:\d+/index\.html) \(Ctrl-C to stop\)\n", line
        )
        assert found, line
        with urllib.request.urlopen(found[1], timeout=10) as reply:
            assert reply.status == 200
            assert "Restricted, per-task material" in reply.read().decode()
    finally:
        process.terminate()
        process.communicate(timeout=10)


def _terminals(tree: Path) -> dict[str, set[str]]:
    """Task id -> the terminal outcomes its attempts' seals name (read here from the
    attempt files' last lines, not through the viewer)."""
    found: dict[str, set[str]] = {}
    for attempt in tree.glob("candidates/*/seed-*/evidence/tasks/*/*.jsonl"):
        lines = attempt.read_bytes().splitlines()
        task = json.loads(lines[0])["config"]["task"]["binding"]["task_id"]
        seal = json.loads(lines[-1])
        outcome = seal["outcome"] or {"terminal": "partial"}
        found.setdefault(task, set()).add(outcome["terminal"])
    return found


def test_budget_stops_and_outcome_filters_on_a_run_that_hits_its_budget(tmp_path, capsys):
    # The calculator harness allowed 2 turns: most of its attempts stop on the budget,
    # scored failures (spec: a budget stop scores task_success 0).
    tree = tmp_path / "run"
    done = run_module(
        [
            "xaytune",
            "+experiment=quickstart",
            "progress=false",
            "sampling.count=6",
            "candidates.a.max_turns=2",
            f"hydra.run.dir={tree}",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "site"
    assert _main(capsys, tree, "--out", out)[0] == 0
    stopped = {task for task, terminals in _terminals(tree).items() if "budget-stop" in terminals}
    assert stopped and set(_listed(out, "budget-stops")) == stopped
    assert set(_listed(out, "improvements")) == _expected(tree, 0, 1)
    assert set(_listed(out, "both-wrong")) == _expected(tree, 0, 0)
    assert set(_listed(out, "regressions")) == _expected(tree, 1, 0)
    task = sorted(stopped)[0]
    dom = parse((out / "tasks" / f"{task}.html").read_text())
    assert "outcome budget-stop" in dom.find("div", cls="side", data_candidate="calculator").text()


def test_page_links_stay_few_however_many_pages(quickstart_tree, tmp_path):
    write_site(open_run(quickstart_tree), tmp_path, page_size=1)
    pages = sorted(tmp_path.glob("all-*.html"))
    assert len(pages) >= 50
    for page in pages:
        links = parse(page.read_text()).find("nav", id="pages").find_all("a")
        assert len(links) <= 11, page  # first, last, 3 either side, previous, next


def test_an_edited_replicate_record_shows_none_of_its_outcomes(quickstart_tree, tmp_path):
    # A failure turned into a success in the record the viewer reads its outcomes from:
    # the record is not the one the manifest recorded, so none of it is shown as valid.
    tree = tmp_path / "run"
    shutil.copytree(quickstart_tree, tree)
    record = tree / "candidates" / "mental" / "seed-101" / "replicate.restricted.json"
    data = record.read_bytes()
    assert b'"value":0' in data
    record.write_bytes(data.replace(b'"value":0', b'"value":1', 1))
    site = write_site(open_run(tree), tmp_path / "site")
    assigned = len(_outcomes(tree)[("b", 101)])
    assert site.counts["does-not-verify"] == assigned
    task = next(iter(_outcomes(tree)[("b", 101)]))
    dom = parse((tmp_path / "site" / "tasks" / f"{task}.html").read_text())
    cell = dom.find("table", id="outcomes").find("tr", data_seed="101").find_all("td")[2]
    assert cell.attrs["data-state"] == "does-not-verify"
    assert cell.text().endswith(
        "candidates/mental/seed-101/replicate.restricted.json: digest-mismatch: "
        "not the file the manifest recorded"
    )
    assert str(tmp_path) not in (tmp_path / "site" / "index.html").read_text()


def test_a_seal_its_journal_never_committed_shows_as_does_not_verify(
    quickstart_tree, tmp_path, capsys
):
    # A store whose journal was rewritten without one seal (what stripping and
    # re-running a task needs): that attempt is not shown as verified.
    from journal_edits import forget_seal

    tree = tmp_path / "run"
    shutil.copytree(quickstart_tree, tree)
    attempt = (
        tree / "candidates" / "mental" / "seed-101" / "evidence" / "tasks" / "000002" / "001.jsonl"
    )
    forget_seal(attempt)
    out = tmp_path / "site"
    code, stdout, stderr = _main(capsys, tree, "--out", out)
    assert code == 0, stderr
    assert "does-not-verify 1" in stdout
    task = json.loads(attempt.read_bytes().split(b"\n", 1)[0])["config"]["task"]["binding"][
        "task_id"
    ]
    page = (out / "tasks" / f"{task}.html").read_text()
    assert "seal-unjournaled" in page
