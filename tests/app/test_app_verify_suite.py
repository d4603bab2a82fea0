"""A tree of a user's suite verifies on another machine: ``verify --suite <dir>``
finds the suite by its digest where the manifest's path no longer holds it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xaytune.suites import build_suite
from xaytune.suites.arith_generator import generate_arith_tools

pytestmark = pytest.mark.slow


def test_verify_finds_a_moved_user_suite_by_its_digest(tmp_path: Path, xaytune, output_dir):
    from xaytune.verify import main

    tasks, references = generate_arith_tools()
    suite = tmp_path / "suites" / "mine"
    build_suite(suite, name="mine", version="1", tasks=tasks[:8], references=references[:8])
    result = xaytune(
        tmp_path, "+experiment=quickstart", "suite.builtin=null", f"suite.path={suite}",
        "sampling.count=4", "progress=false",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    tree = output_dir(tmp_path, "quickstart")
    moved = tmp_path / "elsewhere" / "mine"
    moved.parent.mkdir()
    shutil.move(suite, moved)

    assert main([str(tree)]) == 1  # the recorded path holds no suite any more
    assert main([str(tree), "--suite", str(moved)]) == 0
    other = tmp_path / "other"
    build_suite(other, name="mine", version="2", tasks=tasks[8:12], references=references[8:12])
    assert main([str(tree), "--suite", str(other)]) == 1  # another digest is not used
