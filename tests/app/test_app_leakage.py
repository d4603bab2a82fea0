"""No held-out reference leaves the restricted files of an output tree.

The suite's references are canary strings the simulated model can never produce, so
any occurrence in the tree came from the reference file. Every file of the tree is
scanned as bytes (manifest, .hydra/, logs, evidence, evaluations, reports, plots).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from xaytune.suites import build_suite
from xaytune.suites.arith_generator import generate_arith_tools

pytestmark = pytest.mark.slow

N_TASKS = 12


@pytest.fixture(scope="module")
def canary_suite(tmp_path_factory) -> tuple[Path, list[bytes]]:
    tasks, _ = generate_arith_tools()
    tasks = tasks[:N_TASKS]
    tag = secrets.token_hex(8)
    canaries = [f"CANARY-{tag}-{i}" for i in range(N_TASKS)]
    references = [
        {"id": task["id"], "answer": canary} for task, canary in zip(tasks, canaries, strict=True)
    ]
    root = tmp_path_factory.mktemp("canary-suite") / "canary"
    build_suite(root, name="canary", version="1", tasks=tasks, references=references)
    return root, [c.encode() for c in canaries]


def _scan(root: Path, canaries: list[bytes]) -> dict[Path, list[bytes]]:
    """Every file under ``root`` that contains a canary (or its common prefix)."""
    prefix = canaries[0].rsplit(b"-", 1)[0]  # CANARY-<tag>: catches any index
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if prefix in data:
                found[path] = [c for c in canaries if c in data] or [prefix]
    return found


def _run(tmp_path, xaytune, output_dir, experiment: str, suite: Path) -> Path:
    result = xaytune(
        tmp_path,
        f"+experiment={experiment}",
        "suite.builtin=null",
        f"suite.path={suite}",
        "sampling.count=6",
        "progress=false",
    )
    assert result.returncode == 0, result.describe()
    # Nothing printed to the terminal carries a reference either.
    assert b"CANARY-" not in result.stdout.encode() + result.stderr.encode()
    return output_dir(tmp_path, experiment)


def _assert_only_restricted(out: Path, found: dict[Path, list[bytes]]) -> None:
    leaks = [p.relative_to(out) for p in found if "restricted" not in str(p.relative_to(out))]
    assert not leaks, f"references outside restricted files: {leaks}"


def test_the_scan_sees_a_canary(canary_suite):
    suite, canaries = canary_suite
    found = _scan(suite, canaries)
    # Only the held-out reference file of the suite holds them, all of them.
    assert [p.name for p in found] == ["references.jsonl"]
    assert sorted(next(iter(found.values()))) == sorted(canaries)


def test_outcome_run_leaks_no_reference(tmp_path, xaytune, output_dir, canary_suite):
    suite, canaries = canary_suite
    out = _run(tmp_path, xaytune, output_dir, "quickstart", suite)
    scanned = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in scanned}
    assert {"manifest.json", "config.yaml", "report.json", "report.html"} <= names
    # The evidence is in the scan: every task's attempt file (its spec, record,
    # trajectory and seal), tasks/<position>/<NNN>.jsonl.
    attempts = [p for p in scanned if p.suffix == ".jsonl" and p.parent.parent.name == "tasks"]
    assert len(attempts) == 2 * 3 * 6  # 2 candidates x 3 seeds x 6 sampled tasks
    assert any("restricted" in str(p) for p in scanned)
    found = _scan(out, canaries)
    _assert_only_restricted(out, found)
    # harness-outcome writes per-task scores, never the reference text itself.
    assert not found


def test_judge_run_leaks_references_only_to_restricted_files(
    tmp_path, xaytune, output_dir, canary_suite
):
    suite, canaries = canary_suite
    out = _run(tmp_path, xaytune, output_dir, "judge", suite)
    found = _scan(out, canaries)
    _assert_only_restricted(out, found)
    # The judge was sent the references (reference access + grant): its exchanges
    # are in the restricted evaluation reports, which proves the scan would see a leak.
    assert found, "the judge's exchanges should hold the references"
    assert all(p.name == "evaluation.restricted.json" for p in found)
    assert len(found) == 6  # 2 candidates x 3 seeds
