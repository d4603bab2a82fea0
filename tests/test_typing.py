"""The public surface type-checks with ``mypy --strict`` (issue 28: a strict type check of
the public surface; configuration in pyproject.toml's ``[tool.mypy]``).

The surface is the concept modules (``xaytune.tool``, ``.loop``, ``.scorer``, ``.model``,
``.environment``), the specification's import paths (docs/DESIGN: "Names the
specification leaves open"; the trajectory writer now lives at
``xaytune.harness.evidence.trajectory``), and a user's parts written against them
(``tests/_concept_parts.py``): an untyped decorator or a protocol that stops matching
its own built-ins fails here. The modules behind the surface are read for their types
(``follow_imports = "silent"``) but their bodies are not reported.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SURFACE = (
    "xaytune/tool.py",
    "xaytune/loop.py",
    "xaytune/scorer.py",
    "xaytune/model.py",
    "xaytune/environment.py",
    "xaytune/core/domain/benchmark.py",
    "xaytune/core/harness_evaluation.py",
    "xaytune/core/harness_comparison.py",
    "xaytune/harness/__init__.py",
    "xaytune/harness/evidence/__init__.py",
    "xaytune/harness/evidence/trajectory.py",
    "xaytune/harness/trajectory.py",
    "xaytune/__init__.py",
    "xaytune/experiment/api.py",
    "xaytune/experiment/results.py",
    "xaytune/models/__init__.py",
    "xaytune/evaluation/harness.py",
    "xaytune/suites/__init__.py",
    "tests/_concept_parts.py",
)

pytest.importorskip("mypy", reason="mypy is in the [dev] extra")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for this module's runs (none left in the repository)."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(cache_dir: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(cache_dir),
            "--no-error-summary",
            *paths,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_public_surface_passes_mypy_strict(cache_dir: Path) -> None:
    done = mypy(cache_dir, *SURFACE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_type_error_against_the_surface_fails_the_check(cache_dir: Path, tmp_path: Path) -> None:
    """The check sees real types through the surface (not ``Any``): a loop that hands
    ``generate`` a string, a tool whose decorator would lose its signature, a scorer
    returning a number and a model without ``complete`` are each reported, by line."""
    client = tmp_path / "wrong_parts.py"
    client.write_text(
        textwrap.dedent(
            """\
            from xaytune.loop import LoopContext, loop
            from xaytune.model import Model, ModelIdentity
            from xaytune.scorer import Scorer
            from xaytune.tool import tool


            @loop
            async def hasty(ctx: LoopContext) -> str | None:
                reply = await ctx.generate("What is 2 + 2?")
                return reply.text


            @tool(version="1")
            def double(value: int) -> int:
                return value * 2


            wrong: str = double(2)


            def number(answer: str, reference: str) -> float:
                return 1.0


            scorer: Scorer = number


            class NoComplete:
                @property
                def identity(self) -> ModelIdentity:
                    raise NotImplementedError


            model: Model = NoComplete()
            """
        )
    )
    done = mypy(cache_dir, str(client))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = {int(line.split(":")[1]) for line in done.stdout.splitlines() if ": error:" in line}
    assert lines == {9, 18, 25, 34}, done.stdout
