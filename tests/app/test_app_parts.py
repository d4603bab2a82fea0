"""User parts through the CLI: refused before the first model call, pinned by code.

Each run happens in a temporary project directory holding the user's module
(``userparts.py``) and their own ``conf/`` (``--config-dir conf``), as a user
outside this repository would work. The model is the user's ``CountingModel``,
which logs every call: a refused config must leave the log empty.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from entry_runs import Result, call

pytestmark = pytest.mark.slow

USER_PARTS = textwrap.dedent(
    '''
    """A user's parts, outside the xaytune package."""
    from pathlib import Path

    from xaytune.models import SimulatedModel


    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()


    def splat(*args):
        return "no declared parameters"


    NOT_A_TOOL = 3


    class CountingModel:
        """The simulated model, logging each call to calls.log."""

        def __init__(self, seed: int, log: str = "calls.log") -> None:
            self._inner = SimulatedModel(seed=seed)
            self._log = Path(log)

        @property
        def identity(self):
            return self._inner.identity

        async def complete(self, request):
            with self._log.open("a") as log:
                log.write("call\\n")
            return await self._inner.complete(request)


    def make_model(seed: int):
        """A factory function as a model adapter."""
        return CountingModel(seed=seed, log="factory-calls.log")


    class NotAModel:
        def __init__(self, seed: int) -> None:
            self.seed = seed
    '''
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user project: its module, a broken module, and conf/model/*.yaml."""
    (tmp_path / "userparts.py").write_text(USER_PARTS)
    (tmp_path / "brokenparts.py").write_text("RATE = 1 / 0\n")
    models = tmp_path / "conf" / "model"
    models.mkdir(parents=True)
    (models / "counting.yaml").write_text("_target_: userparts.CountingModel\n")
    (models / "not_a_model.yaml").write_text("_target_: userparts.NotAModel\n")
    (models / "factory.yaml").write_text("_target_: userparts.make_model\n")
    return tmp_path


def run(xaytune, project: Path, *overrides: str):
    return xaytune(
        project,
        "--config-dir",
        "conf",
        "+experiment=quickstart",
        "progress=false",
        "sampling.count=4",
        *overrides,
    )


REFUSALS = [
    # (overrides, reason, the key the line names)
    (["candidates.b.tools=[nosuch.module.tool]"], "unknown-part", "candidates.b.tools[0]"),
    (["candidates.b.tools=[brokenparts.RATE]"], "import-failed", "ZeroDivisionError"),
    (["candidates.b.tools=[userparts.splat]"], "bad-part", "candidates.b.tools[0]"),
    (["candidates.b.tools=[userparts.NOT_A_TOOL]"], "bad-part", "candidates.b.tools[0]"),
    (["candidates.b.loop=nope"], "unknown-part", "candidates.b.loop"),
    (["candidates.b.loop={_target_:self-check,bogus:1}"], "bad-part-params", "bogus"),
    (["evaluators.outcome.config.spec.scorer.name=nope"], "unknown-part", "nope"),
    (
        [
            "evaluators.outcome.config.spec.scorer.name=numeric",
            "+evaluators.outcome.config.spec.scorer.params.tol=1",
        ],
        "bad-part-params",
        "tol",
    ),
    (["model=not_a_model"], "bad-part", "model._target_"),
    (
        ["comparison.objectives=[{metric:nope,direction:maximize,min_effect:0}]"],
        "unknown-metric",
        "comparison.objectives[0].metric",
    ),
    (["sampling.count=100000", "sampling.larger_than_suite=refuse"], "sample-too-large", "100000"),
    (
        ["candidates.b.answer.kind=regex", "candidates.b.answer.pattern='(unclosed'"],
        "bad-config",
        "answer",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "reason", "named"), REFUSALS, ids=[r[1] + ":" + r[0][0] for r in REFUSALS]
)
def test_a_bad_part_is_one_line_before_any_model_call(
    xaytune, project: Path, overrides: list[str], reason: str, named: str
) -> None:
    model = [] if any(o.startswith("model=") for o in overrides) else ["model=counting"]
    result = run(xaytune, project, *model, *overrides)
    assert result.returncode == 2, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.describe()
    assert lines[0].startswith(f"error: {reason}: ") or f": {reason}" in lines[0], lines[0]
    assert named in lines[0], lines[0]
    assert not (project / "calls.log").exists()  # not one model call was paid for
    runs = project / "experiments" / "quickstart"
    assert not runs.exists() or list(runs.iterdir()) == []  # no run directory left behind


def verify_from(project: Path, tree: Path, env: dict[str, str]) -> Result:
    """``python -m xaytune.verify <tree>`` run from the user's project directory (in this
    process, with the project first on ``sys.path`` as ``python -m`` puts it)."""
    return call("xaytune.verify", [str(tree)], project, env=env)


def test_user_parts_run_are_pinned_and_a_code_change_is_refused_on_resume(
    xaytune, verify, project: Path, output_dir, cli_env
) -> None:
    result = run(xaytune, project, "model=counting", "candidates.b.tools=[userparts.shout]")
    assert result.returncode == 0, result.describe()
    assert (project / "calls.log").read_text().count("call") > 0
    tree = output_dir(project, "quickstart")
    manifest = json.loads((tree / "manifest.json").read_text())
    parts = {(p["kind"], p["name"]): p for p in manifest["candidates"]["b"]["parts"]}
    assert parts[("tool", "shout")]["target"] == "userparts.shout"
    assert parts[("loop", "tool-loop")]["target"] == "xaytune.harness.loops.tool_loop"
    record = json.loads(next(tree.rglob("replicate.restricted.json")).read_text())
    assert record["facets"]["model_adapter"]["target"] == "userparts.CountingModel"
    first = verify_from(project, tree, cli_env)
    assert first.returncode == 0 and "warning" not in first.stdout, first.stdout + first.stderr
    # Verified from elsewhere, the user's code cannot be loaded: said, not hidden.
    elsewhere = verify(tree)
    assert elsewhere.returncode == 0 and "cannot be loaded here" in elsewhere.stdout

    # The user edits their tool module: the tree was not made by this code.
    module = project / "userparts.py"
    module.write_text(module.read_text().replace("text.upper()", "text.upper() + '!'"))
    resumed = run(
        xaytune, project, "model=counting", "candidates.b.tools=[userparts.shout]", f"resume={tree}"
    )
    assert resumed.returncode == 2, resumed.describe()
    line = resumed.stderr.strip()
    assert line.startswith("error: resume-mismatch") and "tool 'shout' code changed" in line, line

    checked = verify_from(project, tree, cli_env)  # where userparts imports
    assert checked.returncode == 0, checked.stdout + checked.stderr  # the evidence is intact...
    warnings = [w for w in checked.stdout.splitlines() if w.startswith("warning:")]
    assert any("tool 'shout'" in w and "differs" in w for w in warnings), checked.stdout


SCORER = textwrap.dedent(
    '''
    """A user's scorer module."""


    def same_text(answer: str, reference: str) -> bool:
        return answer.strip() == reference.strip()
    '''
)


@pytest.mark.parametrize("changed", ["scorer", "model adapter"])
def test_a_resume_with_a_changed_scorer_or_model_adapter_is_refused_before_writing(
    xaytune, project: Path, output_dir, cli_env, changed: str
) -> None:
    (project / "userscorer.py").write_text(SCORER)
    common = ["model=counting", "evaluators.outcome.config.spec.scorer.name=userscorer.same_text"]
    assert run(xaytune, project, *common).returncode == 0
    tree = output_dir(project, "quickstart")
    manifest = (tree / "manifest.json").read_bytes()
    module = project / ("userscorer.py" if changed == "scorer" else "userparts.py")
    module.write_text(module.read_text() + "\n# edited\n")

    resumed = run(xaytune, project, *common, f"resume={tree}")
    assert resumed.returncode == 2, resumed.describe()
    line = resumed.stderr.strip()
    assert line.startswith("error: resume-mismatch") and f"{changed} " in line, line
    assert "code changed" in line
    assert (tree / "manifest.json").read_bytes() == manifest  # nothing was rewritten

    checked = verify_from(project, tree, cli_env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    warnings = [w for w in checked.stdout.splitlines() if w.startswith("warning:")]
    word = "same_text" if changed == "scorer" else "userparts.CountingModel"
    assert warnings and all(word in w for w in warnings), checked.stdout


def test_a_factory_function_is_a_model_adapter(xaytune, project: Path, output_dir) -> None:
    result = run(xaytune, project, "model=factory")
    assert result.returncode == 0, result.describe()
    assert (project / "factory-calls.log").read_text().count("call") > 0
    manifest = json.loads((output_dir(project, "quickstart") / "manifest.json").read_text())
    assert manifest["parts"]["model_adapter"]["target"] == "userparts.make_model"


def test_an_edited_judge_rubric_is_refused_before_any_model_call(xaytune, project: Path) -> None:
    result = xaytune(
        project, "--config-dir", "conf", "+experiment=judge", "model=counting", "progress=false",
        "evaluators.judge.config.spec.rubric.text=Score generously.",
    )  # fmt: skip
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: rubric-digest-mismatch: ")
    assert not (project / "calls.log").exists()
    runs = project / "experiments" / "judge"
    assert not runs.exists() or list(runs.iterdir()) == []


@pytest.mark.parametrize("where", ["a-file/sub", "/proc/no-such-dir"])
def test_an_unusable_output_directory_is_one_line(xaytune, project: Path, where: str) -> None:
    (project / "a-file").write_text("not a directory\n")
    result = xaytune(project, "+experiment=quickstart", f"hydra.run.dir={where}")
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: bad-output: ") and where.split("/")[-1] in line


@pytest.mark.parametrize("loop", ["self-check", "plan-then-act"])
def test_the_quickstart_runs_each_built_in_loop_into_a_verifying_tree(
    tmp_path: Path, xaytune, verify, output_dir, loop: str
) -> None:
    result = xaytune(
        tmp_path, "+experiment=quickstart", f"candidates.b.loop={loop}", "sampling.count=4",
        "progress=false",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    tree = output_dir(tmp_path, "quickstart")
    manifest = json.loads((tree / "manifest.json").read_text())
    loops = [p["name"] for p in manifest["candidates"]["b"]["parts"] if p["kind"] == "loop"]
    assert loops == [loop]
    assert verify(tree).returncode == 0
