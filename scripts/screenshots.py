"""Regenerate the README's screenshots: docs/report.png, docs/viewer.png and
docs/viewer-task.png.

Runs the quickstart into a temporary directory, writes the viewer's site for it, and
renders the report page, the viewer's entry page (the comparison, the tasks behind
each verdict) and one regressed task's page in headless Chromium
(``bash scripts/setup-browser.sh`` installs it). The PNGs are reduced to a 128-colour
palette to keep the repository small.

Usage (from the repository root, in the project's environment):

    python scripts/screenshots.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run")


def _run(*args: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, check=True)


def _shot(page: Path, out: Path, width: int, height: int, work: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("error: chromium is not installed: run `bash scripts/setup-browser.sh`")
    raw = work / out.name
    subprocess.run(
        [
            chromium,
            *FLAGS,
            f"--screenshot={raw}",
            f"--window-size={width},{height}",
            page.as_uri(),
        ],
        cwd=work,
        env={**os.environ, "HOME": str(work)},
        capture_output=True,
        check=True,
    )
    from PIL import Image

    with Image.open(raw) as image:
        image.convert("RGB").quantize(colors=128).save(out, optimize=True)
    print(f"wrote {out.relative_to(REPO)}")


def main() -> None:
    DOCS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="xaytune-shots-") as name:
        work = Path(name)
        run = work / "quickstart"
        _run(
            "xaytune", "+experiment=quickstart", "progress=false", f"hydra.run.dir={run}", cwd=work
        )
        site = work / "site"
        _run("xaytune.view", str(run), "--out", str(site), cwd=work)
        _shot(run / "comparison" / "report.html", DOCS / "report.png", 1280, 1500, work)
        _shot(site / "index.html", DOCS / "viewer.png", 1280, 900, work)
        from html.parser import HTMLParser

        class FirstTask(HTMLParser):
            task: str | None = None

            def handle_starttag(self, tag, attrs):
                found = dict(attrs).get("data-task")
                if tag == "tr" and found and self.task is None:
                    self.task = found

        parser = FirstTask()
        parser.feed((site / "regressions.html").read_text())
        assert parser.task is not None, "the quickstart has no regression"
        page = site / "tasks" / f"{parser.task}.html"
        _shot(page, DOCS / "viewer-task.png", 1280, 1500, work)


if __name__ == "__main__":
    main()
