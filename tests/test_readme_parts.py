"""Every snippet of the docs page "Bring your own parts" (docs/guides/own-parts.md) runs
as written.

The page's fenced blocks are a small user project: ``python title="<path>"`` and
``yaml title="<path>"`` blocks are its files, written under a temporary directory at
their titles (Python in a package module: a part's identity is its module's source);
the ``toml title="pyproject.toml"`` block declares entry points, installed here the
way pip would (an ``entry_points.txt`` in a ``.dist-info`` directory on ``sys.path``);
``sh`` blocks are commands, run from that directory in a subprocess with a few tasks
and seeds added (``sampling.count=4 seeds=[1,2,3] progress=false``). Then each part
must have run: the tool is pinned in a manifest, the loop's note is in a trajectory,
the scorer is pinned in an evaluation, the adapter is a replicate's facet.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[1]
PAGE = REPO_ROOT / "docs" / "guides" / "own-parts.md"
HEADING = "# Bring your own parts"
QUICK = ("sampling.count=4", "seeds=[1,2,3]", "progress=false")
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_TITLED = re.compile(r'(python|yaml|toml) title="([^"]+)"')


@dataclass(frozen=True)
class Snippet:
    info: str
    body: str


def _section() -> str:
    """The whole page, from its title: every fenced block of it is run."""
    text = PAGE.read_text(encoding="utf-8")
    return text[text.index(HEADING) :]


def _snippets() -> list[Snippet]:
    return [Snippet(m[1].strip(), m[2]) for m in _FENCE.finditer(_section())]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The repository root only (xaytune, if it is not installed), never the project:
    # `python -m` puts the project (the working directory) on sys.path by itself.
    env["PYTHONPATH"] = str(REPO_ROOT)
    env.pop("HYDRA_FULL_ERROR", None)
    env["COLUMNS"] = "160"
    return env


def _install_entry_points(project: Path, pyproject: str) -> None:
    """What ``pip install`` writes for the ``[project.entry-points]`` of ``pyproject``."""
    groups = tomllib.loads(pyproject)["project"]["entry-points"]
    info = project / "my_parts_readme-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-parts-readme\nVersion: 0\n")
    lines = []
    for group, entries in groups.items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@dataclass(frozen=True)
class Project:
    root: Path
    runs: tuple[subprocess.CompletedProcess[str], ...]

    def trees(self) -> list[Path]:
        return sorted(p.parent for p in (self.root / "experiments").glob("*/*/manifest.json"))

    def manifests(self) -> Iterator[dict]:
        for tree in self.trees():
            yield json.loads((tree / "manifest.json").read_text())


def _describe(done: subprocess.CompletedProcess[str]) -> str:
    return f"{shlex.join(done.args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The section's files written out, and its commands run there."""
    root = tmp_path_factory.mktemp("my-project")
    commands: list[list[str]] = []
    for snippet in _snippets():
        titled = _TITLED.fullmatch(snippet.info)
        if titled is not None:
            path = root / titled[2]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(snippet.body, encoding="utf-8")
            if titled[1] == "toml":
                _install_entry_points(root, snippet.body)
            continue
        if snippet.info == "text":  # the project's layout: an illustration, not a file
            continue
        assert snippet.info == "sh", f"a snippet of {PAGE.name} no test runs: {snippet.info!r}"
        for line in snippet.body.replace("\\\n", " ").splitlines():
            if line.strip():
                args = shlex.split(line)
                assert args[:3] == ["python", "-m", "xaytune"], line
                commands.append([sys.executable, *args[1:], *QUICK])
    runs = tuple(
        subprocess.run(
            command,
            cwd=root,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        for command in commands
    )
    return Project(root, runs)


def test_every_snippet_of_the_section_is_a_file_or_a_command():
    infos = [snippet.info for snippet in _snippets()]
    kinds = [info.split()[0] for info in infos]
    # A tool, a loop, a scorer, a model adapter (Python and YAML each), the entry
    # point declaration and the config naming by short name, and the runs.
    assert kinds.count("python") == 4 and kinds.count("yaml") == 5, infos
    assert kinds.count("toml") == 1 and kinds.count("sh") >= 2, infos


def test_readme_commands_exit_0_and_their_trees_verify(project: Project):
    for run in project.runs:
        assert run.returncode == 0, _describe(run)
        assert "relation:" in run.stdout, _describe(run)
    assert len(project.trees()) == len(project.runs)
    for tree in project.trees():
        done = subprocess.run(
            [sys.executable, "-m", "xaytune.verify", str(tree)],
            cwd=project.root,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0 and done.stdout.startswith("ok:"), _describe(done)
        assert "warning:" not in done.stdout, _describe(done)


def _parts(project: Project, kind: str) -> dict[tuple[str, str], dict]:
    """Every (candidate name, part name) of ``kind`` pinned in a manifest."""
    return {
        (candidate["name"], part["name"]): part
        for manifest in project.manifests()
        for candidate in manifest["candidates"].values()
        for part in candidate["parts"]
        if part["kind"] == kind
    }


def test_readme_tool_is_pinned_by_its_code_in_the_harness(project: Project):
    tools = _parts(project, "tool")
    tool = tools[("calculator-percent", "percent_of")]
    assert tool["target"] == "my_parts.tools.percent_of" and tool["version"] == "1"
    assert tool["source_sha256"].startswith("sha256:")
    # Named by its entry point's short name in another candidate: the same code.
    assert tools[("named-parts", "percent_of")] == tool


def test_readme_loop_ran_and_left_its_note(project: Project):
    loop = _parts(project, "loop")[("mental-vote", "majority")]
    assert loop["target"] == "my_parts.loops.majority"
    notes = []
    for tree in project.trees():
        for attempt in (tree / "candidates" / "mental-vote").glob(
            "seed-*/evidence/tasks/*/*.jsonl"
        ):
            for line in attempt.read_text().splitlines():
                event = json.loads(line)
                if event.get("type") == "note":
                    notes.append(event["v"])
    assert notes and all(note["text"] == "majority" for note in notes)
    assert all(sum(note["data"]["votes"].values()) == 3 for note in notes)


def test_readme_scorer_is_pinned_in_the_evaluation(project: Project):
    pinned = [
        json.loads(path.read_text())["evaluation"]["config"]["spec"]["scorer"]
        for tree in project.trees()
        for path in tree.glob("candidates/*/seed-*/evaluation/outcome/evaluation.json")
    ]
    mine = [scorer for scorer in pinned if scorer["name"] == "my_parts.scorers.close_enough"]
    assert mine and all(s["params"] == {"tolerance": 0.5} for s in mine)
    assert {s["code"]["target"] for s in mine} == {"my_parts.scorers.close_enough"}


def test_readme_model_adapter_is_a_replicate_facet(project: Project):
    adapters = {
        json.loads(path.read_text())["facets"]["model_adapter"]["target"]
        for tree in project.trees()
        for path in tree.glob("candidates/*/seed-*/replicate.restricted.json")
    }
    assert "my_parts.models.EchoModel" in adapters
