"""Attempt errors are never outcomes (issue 29 item 1, issue 31 item 4).

Runs are in process (``run_job`` on a composed config, as tests/app/test_app_looks.py
does): the exit code is ``run_job``'s return value, the terminal is what it prints. The
endpoint that errors is a real aiohttp server on 127.0.0.1; the crashing and stalling
loops are tests/app/_attempt_error_parts.py, imported by dotted path as a user's are.
Expected task ids come from the suite and the seeded assignment directly (which
questions hold a "3"), not from the run's own records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from hydra import compose, initialize_config_module
from threaded_server import ThreadedServer

from xaytune.app.main import resolve_config, run_job
from xaytune.audit.verify import audit_tree
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.experiment.attempt_errors import ERRORS_FILE
from xaytune.suites import builtin_suite_path

HERE = Path(__file__).parent
PARTS = "_attempt_error_parts"


def _run(out: Path, *extra: str, seeds: str = "[1,2,3]") -> int:
    overrides = [
        "+experiment=quickstart",
        "progress=false",
        "sampling.count=4",
        "cache.mode=off",
        f"seeds={seeds}",
        *extra,
    ]
    out.mkdir(parents=True, exist_ok=True)
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        raw = compose(config_name="config", overrides=overrides)
    cfg, plain = resolve_config(raw)
    return run_job(cfg, plain, out, compare=True)


def _marked_tasks(seed: int) -> list[str]:
    """The ids, in assignment order, of the tasks the test loops misbehave on."""
    source = SuiteSource(builtin_suite_path("arith-tools"))
    by_id = {task.id: task for task in source.suite.tasks}
    assignment = record_assignment(source.suite, SeededSample(count=4), seed=seed)
    return [i for i in assignment.task_ids if "3" in by_id[i].input["question"]]


def _problems(tree: Path) -> list[str]:
    problems, _, _ = audit_tree(tree)
    return problems


def _rewrite(tree: Path, relative: str, data: bytes) -> None:
    """Edit a report and its digest in the manifest, as a careful forger would."""
    (tree / relative).write_bytes(data)
    manifest = json.loads((tree / "manifest.json").read_bytes())
    manifest["reports"][relative] = sha256_digest(data)
    (tree / "manifest.json").write_bytes(canonical_bytes(manifest) + b"\n")


class _Endpoint(ThreadedServer):
    """A chat-completions endpoint that refuses (400, a per-request model error) every
    request without tools, i.e. every request of the tool-less ``mental`` candidate,
    and answers the others "ANSWER: 0"."""

    def __init__(self) -> None:
        super().__init__()

    async def _handle(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read() or b"{}")
        if not body.get("tools"):
            return web.json_response({"error": {"message": "no tools, no answer"}}, status=400)
        return web.json_response(
            {
                "model": "served-m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ANSWER: 0"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
            }
        )


@pytest.fixture
def endpoint() -> Iterator[_Endpoint]:
    server = _Endpoint()
    yield server
    server.close()


@pytest.fixture
def withheld_run(tmp_path_factory, endpoint) -> tuple[Path, int, str]:
    """Baseline calculator (a), mental (b, every request refused: 4 of 4 tasks in error
    on each seed) and a second calculator (c), on the erroring endpoint."""
    import contextlib
    import io

    tree = tmp_path_factory.mktemp("withheld") / "run"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = _run(
            tree,
            "model=openai_compatible",
            f"model.base_url={endpoint.url}",
            "model.name=m",
            "model.max_retries=0",
            "+candidate@candidates.c=calculator",
            "candidates.c.name=calculator-2",
        )
    return tree, code, out.getvalue()


def test_a_candidate_over_the_bound_is_not_compared_on_every_surface(withheld_run) -> None:
    tree, code, printed = withheld_run
    assert code == 2, printed
    why = "model errors: mental 12 of 12 tasks"  # 3 seeds x 4 tasks, every one refused

    errors = json.loads((tree / "comparison" / ERRORS_FILE).read_bytes())
    assert errors["not_compared"] == {"b": why}
    assert errors["candidates"]["b"]["over_bound"] and not errors["candidates"]["c"]["over_bound"]
    assert [r["model_errors"] for r in errors["candidates"]["b"]["replicates"]] == [4, 4, 4]

    # The terminal: b's table names why and no verdict; c's is compared.
    assert f"relation: not compared ({why})" in printed
    assert "error: model-errors: mental seed 1: 4 of 4 tasks ended model-error" in printed
    assert "mental is not compared" in printed
    assert printed.count("relation: not compared") == 1

    summary = json.loads((tree / "comparison" / "summary.json").read_bytes())
    assert summary["relations"]["b"] == "not-compared"
    assert summary["relations"]["c"] != "not-compared"
    assert summary["not_compared"] == {"b": why}
    b_rows = [row for row in summary["rows"] if row["challenger"] == "b"]
    assert b_rows and all(
        row["verdict"] == "not-compared"
        and row["mean_difference"] is None
        and row["p_value"] is None
        and row["holm_p_value"] is None
        for row in b_rows
    )
    c_rows = [row for row in summary["rows"] if row["challenger"] == "c"]
    assert all(row["verdict"] != "not-compared" for row in c_rows)
    summary_md = (tree / "comparison" / "summary.md").read_text()
    assert f"| b | **not-compared** ({why}) |" in summary_md
    assert f"not compared ({why})" in summary_md

    b_md = (tree / "comparison" / "b" / "report.md").read_text()
    assert f"**Relation: not compared ({why})**" in b_md
    assert "favors" not in b_md.split("## Errors")[0]
    assert "## Errors" in b_md and "| mental | 1 | 4 | 4 | 0 | 0 | 0 |" in b_md
    assert "model-error: mental seed 1: 4 tasks" in b_md
    b_html = (tree / "comparison" / "b" / "report.html").read_text()
    assert 'data-relation="not-compared"' in b_html and 'id="errors"' in b_html
    assert 'data-verdict="favors-' not in b_html
    assert not list((tree / "comparison" / "b").glob("*.png"))  # no plot of differences
    c_md = (tree / "comparison" / "c" / "report.md").read_text()
    assert "not compared" not in c_md and "## Errors" not in c_md  # no error on its sides
    looks = json.loads((tree / "looks.json").read_bytes())["looks"]
    assert looks[-1]["decisions"]["b"] == {"relation": "not-compared", "verdicts": {}}
    assert "b: not-compared" in (tree / "looks.md").read_text()

    assert _problems(tree) == []


@pytest.mark.parametrize(
    "relative",
    ["comparison/summary.json", "comparison/errors.json", "comparison/b/report.md"],
)
def test_a_published_comparison_that_disagrees_with_the_errors_is_refused(
    withheld_run, tmp_path: Path, relative: str
) -> None:
    import shutil

    tree = tmp_path / "copy"
    shutil.copytree(withheld_run[0], tree)
    data = (tree / relative).read_bytes()
    if relative.endswith("summary.json"):  # b shown as compared, favoured
        summary = json.loads(data)
        summary["relations"]["b"] = "favors-b"
        del summary["not_compared"]
        data = canonical_bytes(summary) + b"\n"
    elif relative.endswith("errors.json"):  # the bound's decision dropped
        errors = json.loads(data)
        errors["not_compared"] = {}
        data = canonical_bytes(errors) + b"\n"
    else:
        data = data.replace(b"not compared (model errors", b"favors-b (model errors")
    assert data != (withheld_run[0] / relative).read_bytes()
    _rewrite(tree, relative, data)
    problems = _problems(tree)
    assert any(
        problem.startswith(str(tree / relative)) and "report-mismatch" in problem
        for problem in problems
    ), problems


def test_a_crashing_loop_is_shown_with_its_exception_and_task_ids(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    tree = tmp_path / "run"
    code = _run(tree, f"candidates.b.loop={PARTS}.crash_on_marked", seeds="[2]")
    printed = capsys.readouterr().out
    assert code == 0  # a crash is the harness's own failure: compared, not gated
    crashed = _marked_tasks(2)
    assert len(crashed) == 2  # 2 of the 4 tasks of seed 2 hold a "3"
    line = (
        f"crash: mental seed 2: 2 tasks ({', '.join(crashed)}): "
        "loop: ZeroDivisionError: division by zero"
    )
    assert line in printed.splitlines()
    assert "2 (2 crash)" in printed  # the table's error count for B
    report = (tree / "comparison" / "report.md").read_text()
    assert "| mental | 2 | 4 | 0 | 0 | 2 | 0 |" in report
    assert f"- {line}" in report
    assert line in (tree / "comparison" / "report.html").read_text()
    assert _problems(tree) == []


def test_a_timed_out_attempt_is_counted_and_the_tree_verifies(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.syspath_prepend(str(HERE))
    tree = tmp_path / "run"
    code = _run(
        tree,
        f"candidates.b.loop={PARTS}.stall_on_marked",
        "candidates.b.attempt_timeout_s=0.2",
        seeds="[1]",
    )
    printed = capsys.readouterr().out
    assert code == 0
    (stalled,) = _marked_tasks(1)
    line = f"attempt-timeout: mental seed 1: 1 task ({stalled}): ran past 0.2 s"
    assert line in printed.splitlines()
    assert "1 (1 timeout)" in printed
    report = (tree / "comparison" / "report.md").read_text()
    assert "| mental | 1 | 4 | 0 | 1 | 0 | 0 |" in report and f"- {line}" in report
    assert _problems(tree) == []


def test_the_bound_is_exceeded_not_reached_and_a_baseline_over_it_withholds_all(
    withheld_run,
) -> None:
    """mental has 4 of 4 tasks in error on each seed: share 1.0. At bound 1.0 it is not
    over (the rule is "exceeds"); with mental as the baseline, every challenger is not
    compared, each naming the baseline's count."""
    from xaytune.experiment.attempt_errors import tree_errors

    tree = withheld_run[0]
    at_one = tree_errors(tree, baseline="a", challengers=("b", "c"), bound=1.0)
    assert at_one.not_compared == {} and not at_one.candidates["b"].over_bound
    below = tree_errors(tree, baseline="a", challengers=("b", "c"), bound=0.99)
    assert below.not_compared == {"b": "model errors: mental 12 of 12 tasks"}
    flipped = tree_errors(tree, baseline="b", challengers=("a", "c"), bound=0.1)
    assert flipped.not_compared == {
        "a": "model errors: mental 12 of 12 tasks",
        "c": "model errors: mental 12 of 12 tasks",
    }


def test_piped_terminal_keeps_the_not_compared_words_and_the_error_counts(withheld_run) -> None:
    """Not a terminal (a CI log, 80 columns): the verdict cell and the relation line
    keep every word; the errors row shows each side's count, 0 included."""
    import io

    from rich.console import Console

    from xaytune.core.harness_comparison import ComparisonReport
    from xaytune.report import terminal_table

    tree = withheld_run[0]
    errors = json.loads((tree / "comparison" / ERRORS_FILE).read_bytes())
    report = ComparisonReport.model_validate_json((tree / "comparison/b/report.json").read_bytes())
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    terminal_table(report, console=console, errors=errors)
    text = out.getvalue()
    why = "not compared (model errors: mental 12 of 12 tasks)"
    rows = [line for line in text.splitlines() if "task_success" in line]
    assert len(rows) == 1 and why in rows[0]
    (count,) = [line for line in text.splitlines() if "errors (tasks)" in line]
    assert "│ 0 " in count and "12 (12 model-error)" in count
    assert f"relation: {why}   claim: exploratory" in text.splitlines()
    assert "calibration" not in text and "favors" not in text


def test_the_gate_names_what_a_baseline_over_the_bound_withholds(withheld_run, capsys) -> None:
    """The gate reads the recorded errors (every replicate of the tree): with mental as
    the baseline, its three replicates (4 of 4 each) are over, and nothing is compared."""
    from xaytune.experiment.attempt_errors import recorded_gate, tree_errors

    tree = withheld_run[0]
    flipped = tree_errors(tree, baseline="b", challengers=("a", "c"), bound=0.1)
    assert recorded_gate(flipped.data()) == 2
    captured = capsys.readouterr()
    counts = [x for x in captured.out.splitlines() if x.startswith("model errors")]
    assert counts == [
        "model errors (tasks ending model-error): calculator seed 1: 0, calculator seed 2: 0, "
        "calculator seed 3: 0, mental seed 1: 4, mental seed 2: 4, mental seed 3: 4, "
        "calculator-2 seed 1: 0, calculator-2 seed 2: 0, calculator-2 seed 3: 0"
    ]
    lines = captured.err.splitlines()
    assert len(lines) == 3 and all(
        line.startswith(f"error: model-errors: mental seed {seed}: 4 of 4 tasks")
        and "no challenger is compared with this baseline" in line
        for seed, line in zip((1, 2, 3), lines, strict=True)
    )
    assert recorded_gate(tree_errors(tree, baseline="a", challengers=("b",), bound=1.0).data()) == 0


def test_comparing_again_at_a_looser_bound_records_its_own_decision(
    tmp_path: Path, endpoint, capsys
) -> None:
    """The bound is a comparison setting: ``python -m xaytune.compare`` at 1.0 compares
    mental (share 1.0 does not exceed 1.0) in its own directory, with its own errors
    record; the run's comparison still withholds it; both verify."""
    from xaytune.audit.recompare import ComparisonOverride, recompare

    tree = tmp_path / "run"
    model = ["model=openai_compatible", f"model.base_url={endpoint.url}", "model.name=m"]
    assert _run(tree, *model, "model.max_retries=0", seeds="[1]") == 2
    directory, _ = recompare(tree, [ComparisonOverride("comparison.max_model_error_share", 1.0)])
    capsys.readouterr()
    again = json.loads((directory / ERRORS_FILE).read_bytes())
    assert again["bound"] == 1.0 and again["not_compared"] == {}
    first = json.loads((tree / "comparison" / ERRORS_FILE).read_bytes())
    assert first["not_compared"] == {"b": "model errors: mental 4 of 4 tasks"}
    assert "not compared (" not in (directory / "report.md").read_text()
    assert "## Errors" in (directory / "report.md").read_text()  # the errors still shown
    assert _problems(tree) == []


def test_a_crash_names_the_part_it_came_from() -> None:
    """The runner records ``environment`` when the exception passed through the
    environment's code, else ``loop`` (the crashing-loop run above shows ``loop``)."""
    from xaytune.harness import environment
    from xaytune.harness.attempt_run import crash_part

    with pytest.raises(ValueError) as through_environment:
        environment._check("{not json", "x")
    assert crash_part(through_environment.value) == "environment"
    with pytest.raises(ZeroDivisionError) as elsewhere:
        _ = 1 / 0
    assert crash_part(elsewhere.value) == "loop"
