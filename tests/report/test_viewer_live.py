"""The live viewer (``python -m xaytune.view <tree> --serve``) without a browser: what
it reads of a tree, its builds, its endpoints, the command, and the report pages it
copies into a site (the browser tests are in test_viewer_live_browser.py).

Counts are checked against the attempt files' last lines, read here independently; a
half-written last line is an open attempt. Serving a finished tree changes none of
its bytes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import signal
import socket
from pathlib import Path

import pytest
from _live_support import get, sealed_statuses, serve, snapshot, stop
from entry_runs import run_module

from xaytune import view
from xaytune.console import main as xaytune
from xaytune.core.errors import XaytuneError
from xaytune.viewer import serve_live
from xaytune.viewer._live_status import TreeScan, attempt_state
from xaytune.viewer._serve import LiveSite

pytestmark = pytest.mark.slow


# --- what the live viewer reads ---------------------------------------------------


def test_an_attempt_with_a_half_written_last_line_is_open(quickstart_tree, tmp_path):
    source = sorted(quickstart_tree.glob("candidates/*/seed-*/evidence/tasks/*/*.jsonl"))[0]
    data = source.read_bytes()
    seal_start = data.rindex(b"\n", 0, len(data) - 1) + 1
    assert json.loads(data[seal_start:])["status"] == "complete"  # sealed, read by json
    attempt = tmp_path / "001.jsonl"
    # Every cut a writer appending the seal can leave: open, never an error.
    for cut in (0, 1, seal_start - 1, seal_start, seal_start + 1, len(data) - 2, len(data) - 1):
        attempt.write_bytes(data[:cut])
        assert attempt_state(attempt) == "open", cut
    attempt.write_bytes(data)
    assert attempt_state(attempt) == "complete"
    attempt.write_bytes(data[:seal_start] + data[seal_start:].replace(b'"complete"', b'"partial"'))
    assert attempt_state(attempt) == "partial"
    assert attempt_state(tmp_path / "gone.jsonl") == "open"


def test_the_scan_counts_each_replicates_attempts_and_the_landed_comparison(
    quickstart_tree, tmp_path
):
    scan = TreeScan(quickstart_tree)
    assert scan.poll() is True
    statuses = sealed_statuses(quickstart_tree)
    counted = {(c.candidate, c.seed): (c.complete, c.partial, c.open) for c in scan.counts}
    assert counted == {
        key: (found.count("complete"), found.count("partial"), 0) for key, found in statuses.items()
    }
    # The quickstart: 20 tasks x 3 seeds x 2 candidates, one attempt each, all complete.
    assert scan.status()["sealed"] == 120 and scan.status()["partial"] == 0
    report = json.loads((quickstart_tree / "comparison" / "report.json").read_bytes())
    (landed,) = scan.comparisons
    assert (landed.where, landed.relation) == ("comparison", report["relation"])
    assert landed.verdicts == tuple(
        (name, metric["verdict"])
        for name, metric in sorted(report["metrics"].items())
        if metric["objective"] is not None
    )
    assert scan.poll() is False  # nothing changed

    copy = tmp_path / "run"
    shutil.copytree(quickstart_tree, copy)
    edited = copy / "comparison" / "report.json"
    edited.write_bytes(edited.read_bytes().replace(b'"relation":"', b'"relation": "', 1))
    altered = TreeScan(copy)
    altered.poll()
    assert altered.comparisons == ()  # not the bytes the manifest records: not landed


def test_a_failed_build_keeps_the_last_good_one_served(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    outcomes = iter(["ok", "fail", "ok"])

    def build(out: Path) -> str:
        if next(outcomes) == "fail":
            out.mkdir()
            (out / "half.html").write_text("half")
            raise XaytuneError("not-a-run", f"{tree}: not yet")
        out.mkdir()
        (out / "index.html").write_text("site")
        return "1 task"

    live = LiveSite(tree, tmp_path / "work", build=build, writer=lambda: None)
    live.work.mkdir()
    live.rebuild()
    first = live.current
    live.rebuild()
    assert (live.generation, live.current, live.problem) == (
        1,
        first,
        f"not-a-run: {tree}: not yet",
    )
    assert sorted(p.name for p in live.work.iterdir()) == ["build-1"]  # the failed one removed
    live.rebuild()
    assert (live.generation, live.problem) == (2, None)
    assert live.current == live.work / "build-2" and (live.current / "index.html").is_file()


def test_before_any_build_the_index_waits_with_the_panel(tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    from xaytune.viewer._serve import _application

    def build(out: Path) -> str:
        raise XaytuneError("not-a-run", "tree: no manifest.json yet")

    live = LiveSite(tmp_path, tmp_path / "work", build=build, writer=lambda: "4242")
    live.work.mkdir()
    live.poll()
    live.rebuild()

    async def requests():
        async with TestClient(TestServer(_application(live))) as client:
            index = await client.get("/index.html")
            other = await client.get("/tasks/x.html")
            status = await client.get("/_live/status.json")
            script = await client.get("/_live/live.js")
            digest = await client.get("/_live/digest/index.html")
            return (
                (index.status, await index.text()),
                other.status,
                await status.json(),
                (script.status, script.content_type),
                await digest.json(),
            )

    (code, index), other, status, script, digest = asyncio.run(requests())
    assert digest == {"generation": 0, "digest": None}  # no build: nothing to compare
    assert code == 200 and '<div id="xaytune-live" data-generation="0" data-digest="' in index
    assert "not built yet: not-a-run: tree: no manifest.json yet" in index
    assert other == 404
    assert status == {
        "tree": tmp_path.name,
        "generation": 0,
        "site": None,
        "problem": "not-a-run: tree: no manifest.json yet",
        "writer": "4242",
        "replicates": [],
        "sealed": 0,
        "partial": 0,
        "open": 0,
        "comparisons": [],
    }
    assert script == (200, "text/javascript")


def _manifest(directory: Path, reports: dict[str, str], **more: object) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    data = {"complete": True, "reports": reports, **more}
    (directory / "manifest.json").write_text(json.dumps(data))


def test_report_pages_are_copied_only_as_recorded_and_link_to_their_site(tmp_path):
    from xaytune.viewer import write_report_pages

    page = b"<!doctype html><html><body><h1>small</h1></body></html>"
    digest = "sha256:" + hashlib.sha256(page).hexdigest()
    root = tmp_path / "tree"
    models = {"small": "models/small", "large": "models/large"}
    _manifest(root, {}, models=models)
    _manifest(root / "models" / "small", {"comparison/report.html": digest})
    _manifest(root / "models" / "large", {"comparison/report.html": digest})
    for model in ("small", "large"):
        (root / "models" / model / "comparison").mkdir()
        (root / "models" / model / "comparison" / "report.html").write_bytes(page)
    (root / "models" / "large" / "comparison" / "report.html").write_bytes(page + b" ")
    out = tmp_path / "site"
    (out / "models" / "small").mkdir(parents=True)
    (out / "models" / "small" / "index.html").write_text("the model's site")
    written = write_report_pages(root, out)
    copy = out / "reports" / "models" / "small" / "comparison" / "report.html"
    assert written == (copy,)  # large's bytes are not the recorded ones: not copied
    data = copy.read_bytes()
    # From reports/models/small/comparison/ up four directories to the site's root.
    assert b'<a href="../../../../models/small/index.html">' in data
    assert re.sub(rb'<p class="viewer-link".*?</p>', b"", data) == page
    _manifest(root / "models" / "small", {"comparison/report.html": digest}, complete=False)
    assert write_report_pages(root, tmp_path / "again") == ()  # an unfinished run: none


def test_a_models_run_is_followed_per_model_and_its_pages_link_to_each_models_site(
    tmp_path,
):
    out = tmp_path / "run"
    done = run_module(
        [
            "xaytune",
            "+experiment=quickstart_models",
            "progress=false",
            "sampling.count=4",
            f"hydra.run.dir={out}",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    models = sorted(json.loads((out / "manifest.json").read_text())["models"])
    assert models == ["careful", "sloppy", "usual"]
    scan = TreeScan(out)
    scan.poll()
    counted = {(c.model, c.candidate, c.seed): (c.complete, c.partial) for c in scan.counts}
    expected = {
        (model, candidate, seed): (statuses.count("complete"), statuses.count("partial"))
        for model in models
        for (candidate, seed), statuses in sealed_statuses(out / "models" / model).items()
    }
    # 3 models x 2 candidates x 3 seeds replicates, 4 tasks each: 72 attempts.
    assert counted == expected and len(counted) == 18
    assert scan.status()["sealed"] == 72
    landed = {c.where: c.relation for c in scan.comparisons}
    assert landed == {
        f"models/{model}/comparison": json.loads(
            (out / "models" / model / "comparison" / "report.json").read_bytes()
        )["relation"]
        for model in models
    }
    site = tmp_path / "site"
    assert view.main([str(out), "--out", str(site)]) == 0
    for model in models:
        copy = site / "reports" / "models" / model / "comparison" / "report.html"
        link = f'<a href="../../../../models/{model}/index.html">'.encode()
        assert link in copy.read_bytes()
        assert (site / "models" / model / "index.html").is_file()  # the link's target


# --- the command -----------------------------------------------------------------


def test_serve_refuses_a_directory_no_run_has_written(tmp_path, capsys):
    with pytest.raises(XaytuneError) as refused:
        view.followable(tmp_path)
    assert refused.value.reason == "not-a-run"
    assert view.main([str(tmp_path), "--serve"]) == 2
    assert capsys.readouterr().err.startswith("error: not-a-run: ")
    assert xaytune(["view", str(tmp_path), "--serve"]) == 2  # the console script's form
    assert capsys.readouterr().err.startswith("error: not-a-run: ")


def test_serve_refuses_a_port_in_use(quickstart_tree):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(XaytuneError) as refused:
            serve_live(quickstart_tree, port=taken.getsockname()[1])
    assert refused.value.reason == "port-unavailable"


def test_serving_a_finished_tree_changes_none_of_its_bytes(quickstart_tree, tmp_path):
    before = snapshot(quickstart_tree)
    process, url, work = serve(quickstart_tree, tmp_path)
    try:
        code, body = get(url + "/_live/status.json")
        status = json.loads(body)
        assert code == 200 and status["generation"] == 1 and status["problem"] is None
        assert status["writer"] is None and status["sealed"] == 120
        code, index = get(url + "/index.html")
        injected = re.search(
            rb'<div id="xaytune-live" data-generation="1" data-digest="([0-9a-f]{64})"></div>'
            rb'<script src="/_live/live.js"></script>',
            index,
        )
        assert code == 200 and injected
        page = index.replace(injected[0], b"")  # the build's own bytes
        assert injected[1].decode() == hashlib.sha256(page).hexdigest()
        code, body = get(url + "/_live/digest/index.html")
        assert json.loads(body) == {"generation": 1, "digest": injected[1].decode()}
        task = re.search(rb'href="(tasks/[^"]+\.html)"', index)
        assert task and get(f"{url}/{task[1].decode()}")[0] == 200
        code, copy = get(url + "/reports/comparison/report.html")
        assert code == 200 and b'id="viewer-link"' in copy
        for outside in ("/../manifest.json", "/%2e%2e/manifest.json", "/.xaytune-view"):
            assert get(url + outside)[0] == 404, outside
        assert work.is_dir() and quickstart_tree.resolve() not in work.resolve().parents
    finally:
        out = stop(process, signal.SIGTERM)
    assert out.endswith(f"stopped; removed {work}\n")
    assert not work.exists()
    assert snapshot(quickstart_tree) == before


def test_view_writes_the_site_beside_the_run_by_default(quickstart_tree, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(quickstart_tree, run)
    assert view.main([str(run)]) == 0
    beside = tmp_path / "run.view"
    assert capsys.readouterr().out.startswith(f"site: {beside / 'index.html'} (")
    assert (beside / "index.html").is_file()
    assert (beside / "reports" / "comparison" / "report.html").is_file()
    assert view.main([str(run)]) == 0  # a site this command wrote: replaced
    shutil.rmtree(beside)
    beside.mkdir()
    (beside / "mine.txt").write_text("keep me")
    assert view.main([str(run)]) == 2
    assert "error: bad-output: " in capsys.readouterr().err
    assert (beside / "mine.txt").read_text() == "keep me"
