"""examples/unit-convert runs as a user project: its own conf, package, suite and parts.

The example is copied to a temporary directory and run there the way its README says
(``python -m xaytune --config-dir conf +experiment=units``). ``PYTHONPATH`` holds the
repository root only (see ``conftest._env``), never the example: ``units_demo`` is
importable because ``python -m`` puts the working directory on ``sys.path``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "unit-convert"


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _describe(done: subprocess.CompletedProcess[str]) -> str:
    return f"{done.args} -> {done.returncode}\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def units_run(tmp_path_factory: pytest.TempPathFactory, cli_env: dict[str, str], output_dir):
    """The example, copied, run once (4 tasks x 3 seeds) and verified from its directory."""
    assert str(EXAMPLE) not in cli_env.get("PYTHONPATH", "")
    project = tmp_path_factory.mktemp("example") / "unit-convert"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("experiments", "__pycache__"))
    run = _run(
        [
            "xaytune",
            "--config-dir",
            "conf",
            "+experiment=units",
            "progress=false",
            "sampling.count=4",
        ],
        project,
        cli_env,
    )
    assert run.returncode == 0, _describe(run)
    tree = output_dir(project, "units")
    verified = _run(["xaytune.verify", str(tree)], project, cli_env)
    return run, tree, verified


def test_example_runs_from_its_own_directory_and_verifies(units_run):
    run, _, verified = units_run
    assert "relation:" in run.stdout and "Traceback" not in run.stderr
    assert verified.returncode == 0, _describe(verified)
    assert verified.stdout.startswith("ok:"), _describe(verified)
    # Run from the project, verify loads the recorded tool and scorer code: unchanged.
    assert "warning:" not in verified.stdout, _describe(verified)


def test_example_manifest_pins_the_project_tool_and_both_loops(units_run):
    _, tree, _ = units_run
    manifest = json.loads((tree / "manifest.json").read_text())
    candidates = manifest["candidates"]
    assert {c["name"] for c in candidates.values()} == {"units-baseline", "units-self-check"}
    for candidate in candidates.values():
        tools = [part for part in candidate["parts"] if part["kind"] == "tool"]
        assert [(t["name"], t["target"], t["version"]) for t in tools] == [
            ("convert", "units_demo.tools.convert", "1")
        ]
    loops = {
        c["name"]: [p["name"] for p in c["parts"] if p["kind"] == "loop"]
        for c in candidates.values()
    }
    assert loops == {"units-baseline": ["tool-loop"], "units-self-check": ["self-check"]}
    replicate = json.loads(
        (
            tree / "candidates" / "units-baseline" / "seed-101" / "replicate.restricted.json"
        ).read_text()
    )
    assert replicate["facets"]["model_adapter"]["target"] == "units_demo.model.UnitsModel"


def test_example_report_names_both_candidates(units_run):
    _, tree, _ = units_run
    report = json.loads((tree / "comparison" / "report.json").read_text())
    assert report["a"]["name"] == "units-baseline"
    assert report["b"]["name"] == "units-self-check"
    markdown = (tree / "comparison" / "report.md").read_text()
    assert "units-baseline (A) vs units-self-check (B)" in markdown
