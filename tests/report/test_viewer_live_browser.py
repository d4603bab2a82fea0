"""The live viewer and the report page in headless Chromium, driven over DevTools.

A slow run (the simulator's ``latency_s``) is followed: the page's sealed count grows
while the run writes, and the verdicts appear once the comparison lands, as the tree's
report.json states them. A page reloads only when a newer build changed it. From the
report page's copy in the site, a click leads to the viewer.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest
from _devtools import open_browser
from _live_support import env, get, sealed_statuses, serve, stop

from xaytune import view

pytestmark = pytest.mark.slow


def test_the_report_page_leads_to_the_viewer_by_a_click(quickstart_tree, tmp_path):
    page = quickstart_tree / "comparison" / "report.html"
    data = page.read_bytes()
    section = data[data.index(b'<section id="per-task">') :]
    assert b"<code>xaytune view &lt;run directory&gt;</code>" in section
    assert b"<code>python -m xaytune.view &lt;run directory&gt;</code>" in section
    site = tmp_path / "site"
    assert view.main([str(quickstart_tree), "--out", str(site)]) == 0
    copy = site / "reports" / "comparison" / "report.html"
    copied = copy.read_bytes()
    link = re.search(rb'<p class="viewer-link" id="viewer-link">.*?</p>', copied)
    assert link and copied.replace(link[0], b"") == data  # the page's bytes and the link

    async def click() -> tuple[str, bool]:
        async with open_browser(tmp_path) as browser:
            await browser.goto(copy.as_uri())
            await browser.click("#viewer-link a")
            target = (site / "index.html").as_uri()
            await browser.wait_for(f"location.href === {json.dumps(target)}")
            listed = await browser.wait_for(
                "document.querySelectorAll('a[href^=\"tasks/\"]').length"
            )
            return await browser.evaluate("location.href"), listed > 0

    assert asyncio.run(click()) == ((site / "index.html").as_uri(), True)


def test_the_live_viewer_follows_a_slow_run_until_its_verdict(tmp_path):
    run = tmp_path / "run"
    # 4 tasks x 3 seeds x 2 candidates, each model call 0.4 s, one task at a time: slow
    # enough to be watched, short in wall time; the cache off, so every task runs.
    writer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "xaytune",
            "+experiment=quickstart",
            "progress=false",
            f"hydra.run.dir={run}",
            "sampling.count=4",
            "model.latency_s=0.4",
            "concurrency=1",
            "cache.mode=off",
        ],
        cwd=tmp_path,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    viewer = None
    try:

        async def follow() -> tuple[list[int], list[str], str, str, int]:
            nonlocal viewer
            while not (run / "intent.json").is_file():  # the run has started writing
                assert writer.poll() is None, writer.communicate()
                await asyncio.sleep(0.1)
            viewer, url, _ = serve(run, tmp_path)
            seen: list[int] = []
            headings: list[str] = []
            async with open_browser(tmp_path) as page:
                await page.goto(url + "/index.html")
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 240  # generous; pytest's own limit is 300 s
                while loop.time() < deadline:
                    total = await page.text(".live-total")
                    found = re.match(r"sealed attempts: (\d+) \(partial (\d+)\)", total or "")
                    if found and (not seen or int(found[1]) != seen[-1]):
                        seen.append(int(found[1]))
                        headings.append(await page.text("#xaytune-live strong") or "")
                    verdict = await page.text(".live-verdict")
                    if verdict and "relation" in verdict:
                        href = await page.wait_for(
                            "document.querySelector('.live-verdict a').getAttribute('href')"
                        )
                        while get(url + href)[0] != 200 and loop.time() < deadline:
                            await asyncio.sleep(0.2)  # the site's build after the landing
                        return seen, headings, verdict, href, get(url + href)[0]
                    if writer.poll() not in (None, 0):
                        raise AssertionError(f"the run failed: {writer.communicate()[1][-2000:]}")
                    await asyncio.sleep(0.2)
                panel = await page.text("#xaytune-live")
            raise AssertionError(f"no verdict within 240 s; counts seen {seen}; panel: {panel}")

        seen, headings, verdict, href, report_code = asyncio.run(follow())
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
        if viewer is not None and viewer.poll() is None:
            viewer_out = stop(viewer, signal.SIGINT)
            assert viewer_out.rstrip().splitlines()[-1].startswith("stopped; removed ")
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    mid_run = [count for count in seen if count < 24]
    assert len(mid_run) >= 2, seen  # it grew while the run was writing
    assert any("is writing" in heading for heading in headings[: len(mid_run)]), headings
    assert seen[-1] == 24 == sum(len(s) for s in sealed_statuses(run).values())
    report = json.loads((run / "comparison" / "report.json").read_bytes())
    verdicts = " · ".join(
        f"{name} {metric['verdict']}"
        for name, metric in sorted(report["metrics"].items())
        if metric["objective"] is not None
    )
    assert verdict == (
        f"comparison: calculator vs mental · relation {report['relation']} · {verdicts}"
        " · report page"
    )
    # The verdict's link: the run's report page, in the site.
    assert (href, report_code) == ("/reports/comparison/report.html", 200)
    quoted = str(run)
    assert f"view per task: xaytune view {quoted} (or: python -m xaytune.view {quoted})" in out


def test_a_page_reloads_only_when_a_newer_build_changed_it(quickstart_tree, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(quickstart_tree, run)
    process, url, _ = serve(run, tmp_path)

    def generation() -> int:
        return json.loads(get(url + "/_live/status.json")[1])["generation"]

    async def until_generation(number: int) -> None:
        while generation() < number:
            await asyncio.sleep(0.2)

    async def scenario() -> tuple[str, str]:
        async with open_browser(tmp_path) as page:
            await page.goto(url + "/index.html")
            await page.wait_for("document.querySelector('.live-total') !== null")
            await page.evaluate("window.marker = 'kept'")
            # The same bytes, a later mtime: a newer build whose pages are the same.
            looks = run / "looks.md"
            stat = looks.stat()
            os.utime(looks, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
            await until_generation(2)
            panel = "document.getElementById('xaytune-live')"
            kept = await page.wait_for(
                f"({panel}.dataset.shown === '2' || window.marker === undefined)"
                " && String(window.marker)"
            )
            # A byte after an attempt's seal: that task no longer verifies; the index
            # page changes in the next build, and reloads.
            attempt = sorted(run.glob("candidates/*/seed-*/evidence/tasks/*/*.jsonl"))[0]
            with attempt.open("ab") as handle:
                handle.write(b"x")
            await until_generation(3)
            reloaded = await page.wait_for(
                f"window.marker === undefined && {panel}.dataset.generation === '3' && 'yes'"
            )
            return kept, reloaded

    try:
        assert asyncio.run(scenario()) == ("kept", "yes")
    finally:
        stop(process, signal.SIGTERM)
