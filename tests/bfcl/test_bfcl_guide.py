"""The guide "Your own benchmark: a BFCL category" runs as written.

The guide is the section of that title in ``docs/guides/bfcl.md``. Its ``sh`` blocks are
commands, run
in order from one empty directory as a user would from theirs (``python`` is this
interpreter); each must succeed, and the tree the first experiment writes verifies.
The table's task counts are the built suites' counts.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from xaytune.suites.bfcl import CATEGORIES

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
PAGE = REPO_ROOT / "docs" / "guides" / "bfcl.md"
HEADING = "## Your own benchmark: a BFCL category"
_FENCE = re.compile(r"^```sh\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _guide() -> str:
    """The section of the docs page, from its heading to the next one of its level."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(HEADING + "\n")
    end = text.find("\n## ", start + len(HEADING))
    return text[start : end + 1 if end != -1 else None]


def test_the_docs_page_holds_the_guide():
    guide = _guide()
    assert guide.startswith(HEADING + "\n") and "```sh" in guide


def test_the_table_counts_are_the_suites(bfcl_source):
    rows = [line for line in _guide().splitlines() if line.startswith("| `bfcl-")]
    named: dict[str, int] = {}
    for row in rows:
        suites_cell, counts_cell = row.split("|")[1:3]
        suites = re.findall(r"`(bfcl-[a-z-]+)`", suites_cell)
        counts = [int(n.replace(",", "")) for n in re.findall(r"[\d,]+", counts_cell)]
        if counts_cell.strip().endswith("each"):
            counts = counts * len(suites)
        named.update(zip(suites, counts, strict=True))
    assert set(named) == set(CATEGORIES)
    for name, count in named.items():
        assert len(bfcl_source(name).suite.tasks) == count, name


def test_the_guide_commands_run_as_written(suite_cache, tmp_path: Path):
    env = dict(os.environ)  # XAYTUNE_SUITE_CACHE: the session's suites
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["XAYTUNE_CACHE_MODE"] = "off"  # every run runs (no evidence cache between tests)
    env.pop("HYDRA_FULL_ERROR", None)
    env["COLUMNS"] = "160"
    outputs = []
    for block in _FENCE.findall(_guide()):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.strip():
                continue
            argv = shlex.split(line)
            assert argv[0] == "python", line
            done = subprocess.run(
                [sys.executable, *argv[1:]],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-2000:])
            outputs.append(done.stdout)
    assert len(outputs) == 5
    assert outputs[0].startswith("ok bfcl-parallel ")
    assert outputs[2].startswith("ok: ")  # the tree verifies
    for run in ("bfcl-parallel-try", "bfcl-irrelevance-try", "bfcl-miss-func-try"):
        assert (tmp_path / "experiments" / run / "comparison" / "report.md").is_file(), run
