"""What a user hits in the first hour (issue 29, item 6): one-line errors that name the
path, option or group and say what to type; whole verdict words in a CI log; a resume
command that keeps every Hydra option; ``--help`` on every entry point.

Exit codes and stderr of an entry point are only seen in a process: those tests spawn
the CLI (one per case, parametrised); the rest is tested in-process.
"""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
from entry_runs import call, spawn
from rich.console import Console

from xaytune.app.main import resume_command
from xaytune.core.domain.measurement import EvaluationResult, MetricResult
from xaytune.core.harness_comparison import (
    CandidateRuns,
    ComparisonSpec,
    ObjectiveMetric,
    ReplicateRuns,
    compare,
)
from xaytune.report._terminal import terminal_table

# --- 1. an unusable output directory: one line naming it, bad-output, exit 2 ---------

UNUSABLE_OUTPUTS = [
    # (overrides, the path the one line must name)
    (["hydra.run.dir=/proc/xaytune-run"], "/proc/xaytune-run"),
    (["seed=1,2", "hydra.sweep.dir=/proc/xaytune-sweep", "-m"], "/proc/xaytune-sweep"),
]


@pytest.mark.parametrize(("overrides", "path"), UNUSABLE_OUTPUTS, ids=["run-dir", "sweep-dir"])
def test_an_output_directory_that_cannot_be_made_is_one_bad_output_line(
    tmp_path, xaytune, overrides, path
):
    # /proc refuses every mkdir, even root's (tests run as root, so a chmod'ed
    # read-only directory would not stop them).
    result = xaytune(tmp_path, "+experiment=quickstart", "progress=false", *overrides)
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: bad-output: "), line
    assert path in line
    assert list(tmp_path.iterdir()) == []


def test_a_file_where_the_run_directory_should_be_is_one_bad_output_line(tmp_path, xaytune):
    (tmp_path / "a-file").write_text("not a directory\n")
    result = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", f"hydra.run.dir={tmp_path}/a-file/x"
    )
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: bad-output: "), line
    assert f"{tmp_path}/a-file" in line
    assert (tmp_path / "a-file").read_text() == "not a directory\n"


@pytest.mark.parametrize("where", ["proc", "file"])
def test_the_default_output_root_unusable_from_the_working_directory_is_one_line(tmp_path, where):
    # The default output root is relative (experiments/...): started in a directory
    # where it cannot be made (as root, /proc; or a file named "experiments"), the
    # run used to end in Hydra's traceback, exit 1.
    if where == "proc":
        cwd, named = Path("/proc"), "/proc/experiments"
    else:
        cwd = tmp_path
        (tmp_path / "experiments").write_text("a file\n")
        named = f"{tmp_path}/experiments"
    result = call("xaytune", ["+experiment=quickstart", "progress=false"], cwd)
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: bad-output: "), line
    assert named in line
    assert "Traceback" not in result.stderr


# --- 5. a hint that says what to type ------------------------------------------------

HINTS = [
    # (arguments, the text the one line must hold)
    (["experiment=quickstart"], "add it with +experiment=quickstart"),
    (
        ["+experiment=quickstart", "candidate=terse"],
        "give candidate@candidates.a=terse or candidate@candidates.b=terse",
    ),
    (
        ["+experiment=quickstart", "model={_target_: my_parts.models.EchoModel}"],
        "~model '+model={_target_: my_parts.models.EchoModel}'",
    ),
    (
        ["+experiment=quickstart", "--limit", "5"],
        "unknown option --limit: use the override sampling.count=5",
    ),
    (
        ["+experiment=quickstart", "--limit=5"],
        "unknown option --limit=5: use the override sampling.count=5",
    ),
    (
        ["+experiment=quickstart", "--model", "x"],
        "unknown option --model: use the override model=x",
    ),
    (
        ["+experiment=quickstart", "--frobnicate"],
        "unknown option --frobnicate: settings are Hydra overrides",
    ),
]


@pytest.mark.parametrize(("args", "text"), HINTS, ids=[" ".join(a) for a, _ in HINTS])
def test_a_mistyped_command_gets_one_line_saying_what_to_type(tmp_path, xaytune, args, text):
    result = xaytune(tmp_path, *args)
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: bad-override: "), line
    assert text in line, line
    assert "usage:" not in line and "…" not in line
    assert list(tmp_path.iterdir()) == []


def test_the_candidate_hint_is_a_command_that_works(tmp_path, xaytune):
    result = xaytune(
        tmp_path, "+experiment=quickstart", "candidate@candidates.a=terse", "--cfg", "job"
    )
    assert result.returncode == 0, result.describe()
    assert "  a:\n    name: terse\n" in result.stdout


def test_the_model_hint_is_a_command_that_works(tmp_path, xaytune):
    # The hint's own form composes: the mapping replaces the model option.
    result = xaytune(
        tmp_path,
        "+experiment=quickstart",
        "~model",
        "+model={_target_: scripted, path: script.json}",
        "--cfg",
        "job",
    )
    assert result.returncode == 0, result.describe()
    assert "model:\n  _target_: scripted\n  path: script.json\n" in result.stdout


# --- 6. --help on every entry point ----------------------------------------------------

ENTRY_POINTS = [
    "xaytune",
    "xaytune.verify",
    "xaytune.view",
    "xaytune.compare",
    "xaytune.share",
    "xaytune.sign",
    "xaytune.suites",
]


@pytest.mark.slow  # the smoke test of each entry point, in a process of its own
@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_every_entry_point_help_exits_0_on_stdout(tmp_path, module):
    result = spawn(module, ["--help"], tmp_path)
    assert result.returncode == 0, result.describe()
    assert result.stderr == ""
    assert "usage" in result.stdout.lower() or "python -m xaytune" in result.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["verify", "compare", "share", "sign"])
def test_help_in_process_prints_usage_and_description(name, capsys):
    import importlib

    module = importlib.import_module(f"xaytune.{name}")
    assert module.main(["--help"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(module.USAGE) and err == ""
    assert module.__doc__.strip().splitlines()[0] in out
    # Without arguments it is still a usage error (exit 2, stderr).
    assert module.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage:")


# --- 3. the printed resume command keeps every Hydra option ----------------------------


def test_the_resume_command_keeps_hydra_options_and_drops_the_run_directory(tmp_path):
    argv = [
        "--config-dir",
        "my conf",
        "-cn",
        "config",
        "--config-path=/abs/conf",
        "-cd",
        "other",
        "+experiment=quickstart",
        "hydra.run.dir=/tmp/x",
        "hydra.job.chdir=false",
        "resume=/old",
        "seeds=[1,2]",
    ]
    command = resume_command(argv, tmp_path / "run", sweep=False)
    assert shlex.split(command) == [
        "python",
        "-m",
        "xaytune",
        "--config-dir",
        "my conf",
        "-cn",
        "config",
        "--config-path=/abs/conf",
        "-cd",
        "other",
        "+experiment=quickstart",
        "hydra.job.chdir=false",
        "seeds=[1,2]",
        f"resume={tmp_path / 'run'}",
    ]


def test_the_sweep_resume_command_starts_with_m_once(tmp_path):
    argv = ["+experiment=quickstart", "--multirun", "seed=1,2", "hydra.sweep.dir=/s", "-cd", "c"]
    command = shlex.split(resume_command(argv, tmp_path, sweep=True))
    assert command == [
        "python",
        "-m",
        "xaytune",
        "-m",
        "+experiment=quickstart",
        "seed=1,2",
        "-cd",
        "c",
        f"resume={tmp_path}",
    ]


def test_an_interrupted_run_with_config_dir_resumes_with_the_printed_command(tmp_path, xaytune):
    # A user config dir with an experiment of its own; the run is stopped by a model
    # that is unavailable from the start (transient_error_rate 1, no retries), which
    # prints the resume command; the command must find the same config again.
    conf = tmp_path / "my-conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - quickstart\n  - _self_\nexperiment:\n  name: mine\n"
    )
    result = xaytune(
        tmp_path,
        "--config-dir",
        str(tmp_path / "my-conf"),
        "+experiment=mine",
        "progress=false",
        "model.transient_error_rate=1.0",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    hints = [line for line in result.stderr.splitlines() if line.startswith("resume with: ")]
    assert result.returncode == 2, result.describe()
    (hint,) = hints
    assert f"--config-dir {tmp_path / 'my-conf'}" in hint
    assert "hydra.run.dir" not in hint
    assert f"resume={tmp_path / 'run'}" in hint
    # Pasted, it finds the user's experiment again and continues the same tree (the
    # model is still unavailable: the same stop and the same command, not a config error).
    again = xaytune(tmp_path, *shlex.split(hint.removeprefix("resume with: python -m xaytune ")))
    assert again.returncode == 2, again.describe()
    assert "bad-override" not in again.stderr and "resume-mismatch" not in again.stderr
    assert hint in again.stderr.splitlines()


# --- 2. piped output keeps whole verdict and relation words ----------------------------

SUITE = SimpleNamespace(name="arith-tools", digest="sha256:" + "5" * 64)
SEEDS = (101, 102, 103)
CATALOG = {
    "task_success": ("fraction", True),
    "total_tokens": ("tokens", False),
    "turns": ("count", False),
}


def _candidate(name: str, columns: dict[str, tuple[float, ...]]) -> CandidateRuns:
    replicates = []
    for i, seed in enumerate(SEEDS):
        common = {
            "subject_digest": f"sha256:subject-{seed}",
            "suite_digest": SUITE.digest,
            "assignment_digest": f"sha256:assignment-{seed}",
            "seed": seed,
        }
        metrics = tuple(
            MetricResult(
                metric=key,
                unit=CATALOG[key][0],
                reference_derived=CATALOG[key][1],
                slice="all-tasks",
                n_tasks=4,
                value=column[i],
                absent_reasons={},
            )
            for key, column in columns.items()
        )
        evaluation = EvaluationResult(
            evaluator="harness-outcome",
            evaluator_fingerprint="sha256:outcome-v1",
            determinism="DETERMINISTIC",
            metrics=metrics,
            **common,
        )
        replicates.append(
            ReplicateRuns(
                seed=seed,
                suite_digest=SUITE.digest,
                assignment_digest=common["assignment_digest"],
                evaluations=(evaluation,),
                facets={"model": {"id": "sim", "temperature": 0.0}},
                timing_environment="ci-runner-1",
                task_observations={},
            )
        )
    return CandidateRuns(
        name=name,
        harness_fingerprint=f"sha256:harness-{name}",
        harness_config={"name": name},
        replicates=tuple(replicates),
    )


def _report():
    # Success favors A (d = 0.25 each seed, se 0 > min_effect 0.05); tokens favor B
    # (d = (-200, -300, -250), se 28.87, k·se 57.7 < 250); turns are equal on every seed
    # (d = 0): inconclusive. Relation: trade-off (the hand computation of
    # tests/core/test_harness_comparison.py::test_trade_off_when_objectives_favour...).
    a = _candidate(
        "calculator-with-a-long-name",
        {
            "task_success": (0.75,) * 3,
            "total_tokens": (1200.0, 1300.0, 1250.0),
            "turns": (3.0, 3.0, 3.0),
        },
    )
    b = _candidate(
        "mental",
        {"task_success": (0.5,) * 3, "total_tokens": (1000.0,) * 3, "turns": (3.0, 3.0, 3.0)},
    )
    spec = ComparisonSpec(
        objectives=(
            ObjectiveMetric(metric="task_success", direction="maximize", min_effect=0.05),
            ObjectiveMetric(metric="total_tokens", direction="minimize", min_effect=50.0),
            ObjectiveMetric(metric="turns", direction="minimize", min_effect=1.0),
        ),
        k=2.0,
    )
    return compare(a, b, spec, SUITE)


@pytest.mark.parametrize("width", [40, 80, 160])
def test_piped_output_keeps_whole_verdict_and_relation_words(width):
    report = _report()
    verdicts = {m.verdict for m in report.metrics.values()}
    assert verdicts == {"favors-a", "favors-b", "inconclusive"}
    assert report.relation == "trade-off"
    buffer = io.StringIO()
    # A file, not a terminal: what a CI log gets.
    console = Console(file=buffer, width=width)
    assert not console.is_terminal
    terminal_table(report, console=console)
    text = buffer.getvalue()
    assert "…" not in text
    rows = [line for line in text.splitlines() if line.startswith("│")]
    cells = [[cell.strip() for cell in row.strip("│").split("│")] for row in rows]
    # The verdict column (the sixth), one row per objective: each starts with its
    # verdict word, whole (a note such as "(se = 0: ...)" may follow).
    objective_rows = [row for row in cells if row[0]]
    assert [row[5].split()[0] for row in objective_rows] == [
        report.metrics[o.metric].verdict for o in report.spec.objectives
    ]
    assert re.search(r"^relation: trade-off   claim: exploratory$", text, re.MULTILINE)
    assert console.width == width  # the console passed in is left as it was


# --- 4. every harness key is overridable without "+" -------------------------------------


def test_every_harness_field_is_declared_in_the_base_candidate():
    # Hydra refuses candidates.a.KEY=... for a key the config does not declare (it asks
    # for "+"): base.yaml declares every field of the Harness model a user sets.
    # `parts` is derived (resolve_harness fills it), never written by hand.
    import yaml

    import xaytune.conf
    from xaytune.harness.spec import Harness

    base = Path(xaytune.conf.__file__).parent / "candidate" / "base.yaml"
    declared = yaml.safe_load(base.read_text())
    assert set(Harness.model_fields) - {"parts"} <= set(declared)
    # answer's own keys too (candidates.a.answer.pattern=...).
    answer = Harness.model_fields["answer"].annotation
    assert set(answer.model_fields) <= set(declared["answer"])


def test_a_null_dollar_budget_is_the_same_harness_as_none_declared():
    # base.yaml now declares cost_budget_usd: null; a harness built from it must keep
    # the fingerprint it had without the key (the golden runs depend on it).
    from xaytune.harness.spec import Harness

    without = Harness(name="h", system_prompt="s")
    with_null = Harness(name="h", system_prompt="s", cost_budget_usd=None)
    assert with_null.fingerprint == without.fingerprint
    assert Harness(name="h", system_prompt="s", cost_budget_usd=0.5).fingerprint != (
        without.fingerprint
    )


def test_a_dollar_budget_is_overridden_without_a_plus(tmp_path, xaytune):
    result = xaytune(
        tmp_path, "+experiment=quickstart", "candidates.a.cost_budget_usd=0.5", "--cfg", "job"
    )
    assert result.returncode == 0, result.describe()
    assert "cost_budget_usd: 0.5" in result.stdout


# --- 7. a tree a live process is writing: tree-busy, not "resume it" ---------------------


def test_a_tree_held_by_a_live_writer_is_busy_and_a_dead_writers_is_not(tmp_path):
    import os

    from xaytune.audit.verify import refuse_busy_tree
    from xaytune.core.errors import XaytuneError
    from xaytune.experiment.tree.layout import LOCK_FILE, tree_lock

    # flock locks belong to the open file: the run's lock (another descriptor) blocks
    # the probe even in this process, exactly as a separate run process would.
    with tree_lock(tmp_path), pytest.raises(XaytuneError) as busy:
        refuse_busy_tree(tmp_path, command="verify")
    assert busy.value.reason == "tree-busy"
    assert f"is being written by process {os.getpid()}" in str(busy.value)
    # The writer is gone: its lock file (with its pid) stays, but nothing holds it.
    assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    refuse_busy_tree(tmp_path, command="verify")
    # A sweep's job directory held by its writer makes the sweep busy too.
    job = tmp_path / "seed-101"
    job.mkdir()
    with tree_lock(job), pytest.raises(XaytuneError) as busy:
        refuse_busy_tree(tmp_path, command="view")
    assert busy.value.reason == "tree-busy"


# The viewer opens a tree being written, marked so, without its lock (issue 32):
# tests/report/test_viewer_runs.py::test_a_live_writer_is_named_and_its_lock_never_taken.
@pytest.mark.parametrize("name", ["verify"])
def test_verify_and_view_refuse_a_tree_being_written_in_one_line(tmp_path, capsys, name):
    import importlib
    import os

    from xaytune.experiment.tree.layout import tree_lock

    tree = tmp_path / "run"
    tree.mkdir()
    main = importlib.import_module(f"xaytune.{name}").main
    with tree_lock(tree):
        assert main([str(tree)]) == 2
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert line == (
        f"error: tree-busy: {tree} is being written by process {os.getpid()}; "
        f"{name} it when that run has ended"
    )
    # Once the writer has ended, the tree is judged by its files again (here: no run).
    main([str(tree)])
    out, err = capsys.readouterr()
    assert "tree-busy" not in err and "tree-busy" not in out
