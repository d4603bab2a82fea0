"""What the live viewer's tests share: running ``view --serve`` as a user does, stopping
it, fetching from it, and reading a tree's attempt files independently of the viewer."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from entry_runs import REPO_ROOT

SERVING = re.compile(r"serving (http://127\.0\.0\.1:\d+)/index\.html \(Ctrl-C to stop\)\n")
WORK = re.compile(r"the site is rebuilt into (\S+), removed on exit\)")


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def snapshot(tree: Path) -> dict[str, str]:
    """Every file's sha256 and every directory under ``tree``."""
    files = {
        str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in tree.rglob("*")
        if p.is_file()
    }
    return files | {str(p.relative_to(tree)) + "/": "" for p in tree.rglob("*") if p.is_dir()}


def sealed_statuses(tree: Path) -> dict[tuple[str, int], list[str]]:
    """(candidate, seed) -> the status each attempt file's last line seals (read here
    with json, not through the viewer's reader)."""
    found: dict[tuple[str, int], list[str]] = {}
    for path in tree.glob("candidates/*/seed-*/evidence/tasks/*/*.jsonl"):
        replicate = path.parents[3]
        key = (replicate.parent.name, int(replicate.name.removeprefix("seed-")))
        last = json.loads(path.read_bytes().splitlines()[-1])
        found.setdefault(key, []).append(last["status"])
    return found


def serve(tree: Path, cwd: Path) -> tuple[subprocess.Popen, str, Path]:
    """``python -m xaytune.view <tree> --serve --port 0``: the process, its URL and the
    temporary directory it builds into."""
    process = subprocess.Popen(
        [sys.executable, "-m", "xaytune.view", str(tree), "--serve", "--port", "0"],
        cwd=cwd,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    serving = process.stdout.readline()
    found = SERVING.fullmatch(serving)
    assert found, serving + process.stderr.read() if process.poll() is not None else serving
    work = WORK.search(process.stdout.readline())
    assert work, "no line naming the build directory"
    return process, found[1], Path(work[1])


def stop(process: subprocess.Popen, number: int) -> str:
    process.send_signal(number)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, b""
