"""The terminal a person reads (issue 32, item 3): the calibration and power prose once
per run, summaries as tables, log lines above the progress bars, reused replicates
that say so with their numbers, and the model each page names."""

from __future__ import annotations

import io
import json
import logging
from types import SimpleNamespace

import pytest
from rich.console import Console

from xaytune.app import progress as progress_module
from xaytune.experiment.config import OpenAICompatibleModelConfig, SimulatedModelConfig
from xaytune.experiment.models_run import MODELS_DIR, print_models
from xaytune.experiment.reports import MODELS_DIR as REPORTS_MODELS_DIR
from xaytune.experiment.reports import page_model
from xaytune.experiment.summary import SUMMARY_HEADER, print_summary
from xaytune.report._terminal import PROSE_ELSEWHERE

PROSE = "calibration: If A and B were the same harness (A/A)"


def _cells(text: str) -> list[list[str]]:
    """The body rows of the tables rich drew in ``text`` (│-separated cells)."""
    return [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in text.splitlines()
        if line.startswith("│")
    ]


# --- a run with two challengers ----------------------------------------------------------


@pytest.fixture(scope="module")
def two_challengers(tmp_path_factory, xaytune):
    """The quickstart with a third candidate (terse), 4 tasks."""
    cwd = tmp_path_factory.mktemp("terminal")
    tree = cwd / "run"
    result = xaytune(
        cwd, "+experiment=quickstart", "+candidate@candidates.c=terse", "sampling.count=4",
        "progress=false", f"hydra.run.dir={tree}",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    return tree, result


@pytest.mark.slow
def test_the_prose_is_printed_once_in_a_two_challenger_run(two_challengers):
    _, result = two_challengers
    out = result.stdout
    assert out.count("A = calculator   B = ") == 2  # two comparison tables
    assert out.count(PROSE) == 1
    # (At 4 tasks task_success has no spread on one side: no power figures to word.)
    assert out.count("power, total_tokens: k·se") == 1
    assert out.count("power, task_success: k·se") <= 1
    # The other table gets one short line instead, and each names its report.
    assert out.count(PROSE_ELSEWHERE) == 1
    assert out.count("report: ") == 2
    # The family-wise A/A rate, in full, once.
    assert out.count("Family-wise A/A: if all 2 challengers were the same harness") == 1


@pytest.mark.slow
def test_the_summary_is_printed_as_tables_not_markdown(two_challengers):
    tree, result = two_challengers
    out = result.stdout
    assert "|---|" not in out and "**" not in out and "\n# " not in out
    assert "Summary: 2 challengers against calculator" in out
    summary = json.loads((tree / "comparison" / "summary.json").read_bytes())
    rows = _cells(out)
    # The relations table: one row per challenger, name and label, its relation.
    for label, relation in summary["relations"].items():
        name = next(r["name"] for r in summary["rows"] if r["challenger"] == label)
        assert [f"{name} ({label})", relation] in rows
    # The grid: a row per challenger x objective, its verdict whole.
    header = next(line for line in out.splitlines() if line.startswith("┃") and "Holm p" in line)
    assert [c.strip() for c in header.strip("┃").split("┃")] == list(SUMMARY_HEADER)
    grid = _cells(out[out.index(header) :])
    assert [(row[0], row[2].split()[0]) for row in grid] == [
        (f"{r['name']} ({r['challenger']})", r["verdict"]) for r in summary["rows"]
    ]


@pytest.mark.parametrize("prose", [True, False])
def test_print_summary_keeps_whole_verdicts_in_a_narrow_log(prose):
    family = {
        "challengers": 2, "replicates": 3, "k": 2.0, "trials": 20000, "method": "m",
        "seed_digest": "sha256:x", "objectives": [{"metric": "task_success", "model":
        "binomial-lattice", "sd": None}], "exact_objectives": ["task_success"],
        "per_objective": {"task_success": 0.2}, "any_objective": 0.2,
        "any_objective_low": 0.2, "any_objective_high": 0.2, "one_challenger": 0.1,
    }  # fmt: skip
    row = {
        "name": "mental", "challenger": "b", "metric": "task_success", "direction":
        "maximize", "verdict": "inconclusive", "mean_difference": 0.1, "threshold": 0.2,
        "interval": [-0.1, 0.3], "p_value": 0.2, "holm_p_value": 0.4, "se_zero": False,
    }  # fmt: skip
    data = {
        "baseline": {"name": "calculator"},
        "relations": {"b": "inconclusive", "c": "favors-a"},
        "rows": [row, {**row, "challenger": "c", "name": "terse", "verdict": "favors-a"}],
        "family": family,
        "note": "the note",
    }
    buffer = io.StringIO()
    print_summary(data, prose=prose, console=Console(file=buffer, width=40))
    text = buffer.getvalue()
    assert "…" not in text
    assert ["mental (b)", "inconclusive"] in _cells(text)
    assert ["terse (c)", "favors-a"] in _cells(text)
    grid = [r for r in _cells(text) if len(r) == len(SUMMARY_HEADER)]
    assert [r[2] for r in grid] == ["inconclusive", "favors-a"]
    # 20.0% for at least one of 2 challengers; in full, or in one line.
    flat = " ".join(text.split())  # the prose wraps at the console's width
    assert ("would name a side 20.0% (exact)" in flat) is prose
    assert ("would name a side 20.0% of the time" in flat) is not prose
    assert ("the note" in flat) is prose


def test_the_models_summary_is_a_table_with_a_verdict_per_model():
    data = {
        "baseline": {"name": "calculator"},
        "models": ["careful", "sloppy"],
        "rows": [
            {
                "challenger": "b", "name": "mental", "metric": "task_success",
                "verdicts": {"careful": "inconclusive", "sloppy": "favors-a"},
                "favors_challenger": 0, "favors_baseline": 1, "aa_any_model": 0.19,
                "aa_expected_per_side": 0.1, "aa_upper_bound": False,
            }
        ],
        "note": "Each verdict is one model's harness comparison.",
    }  # fmt: skip
    buffer = io.StringIO()
    print_models(data, console=Console(file=buffer, width=50))
    text = buffer.getvalue()
    assert "Across 2 models: challengers against calculator" in text and "|" not in text
    assert _cells(text) == [
        [
            "mental (b)", "task_success", "inconclusive", "favors-a",
            "favors calculator on 1 of 2 models", "19.0% for ≥ 1 of 2; 0.10 expected per side",
        ]
    ]  # fmt: skip


# --- the model a page names ----------------------------------------------------------------


def test_page_model_names_a_models_run_by_its_label(tmp_path):
    assert REPORTS_MODELS_DIR == MODELS_DIR
    careful = SimpleNamespace(model=SimulatedModelConfig(kind="simulated", mental_error_base=0.04))
    (tmp_path / "manifest.json").write_text("{}")
    sub = tmp_path / MODELS_DIR / "careful"
    sub.mkdir(parents=True)
    assert page_model(careful, sub) == "careful: simulated (mental_error_base 0.04)"
    assert page_model(careful, tmp_path) == "simulated (mental_error_base 0.04)"
    assert page_model(careful) == "simulated (mental_error_base 0.04)"
    # A directory called models that is no run's: no label is claimed.
    (tmp_path / "manifest.json").unlink()
    assert page_model(careful, sub) == "simulated (mental_error_base 0.04)"
    served = SimpleNamespace(
        model=OpenAICompatibleModelConfig(
            kind="openai_compatible", name="qwen", base_url="http://127.0.0.1:9/v1"
        )
    )
    assert page_model(served) == "openai_compatible qwen (base_url http://127.0.0.1:9/v1)"


# --- progress ------------------------------------------------------------------------------


def test_a_reused_replicate_logs_reused_with_its_numbers(caplog):
    caplog.set_level(logging.INFO, logger="xaytune.progress")
    with progress_module.replicate_progress("calc seed 1", total=20, enabled=True) as progress:
        progress.reused(tasks=20, errors=0, tokens=16_728)
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0] == "replicate calc seed 1: started, 20 tasks"
    assert lines[-1].startswith(
        "replicate calc seed 1: reused 20/20 tasks from the evidence cache, 0 errors, "
        "16,728 tokens when run"
    )


def _plain(screen: io.StringIO) -> list[str]:
    """What a terminal shows of ``screen``, line by line (colours and cursor moves out)."""
    from rich.text import Text

    return Text.from_ansi(screen.getvalue()).plain.splitlines()


class _Terminal(io.StringIO):
    """A stream that says it is a terminal (as Hydra's console handler's is)."""

    def isatty(self) -> bool:
        return True


def test_a_reused_replicate_fills_its_bar_and_says_reused():
    screen = _Terminal()
    console = Console(file=screen, force_terminal=True, width=100)
    with progress_module.replicate_progress(
        "calc seed 1", total=20, enabled=True, console=console
    ) as progress:
        progress.reused(tasks=20, errors=0, tokens=16_728)
    last = [line for line in _plain(screen) if line.strip()][-1]  # the bar as it was left
    assert "calc seed 1 (reused)" in last and "20/20" in last and "tokens 16,728" in last


def test_log_lines_are_printed_above_the_bar_not_into_it():
    screen = _Terminal()
    console = Console(file=screen, force_terminal=True, width=100)
    stream = _Terminal()  # the handler's own terminal stream
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("xaytune.test-terminal")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        with progress_module.replicate_progress(
            "calc seed 1", total=2, enabled=True, console=console
        ):
            logger.info("evidence cache: reused sha256:abc for the replicate")
        # Through the bar's console (which prints it above the bar), whole, on its own
        # line; nothing went to the handler's stream behind the bar's back.
        assert stream.getvalue() == ""
        lines = [line.strip() for line in _plain(screen)]
        assert any(
            line.endswith("evidence cache: reused sha256:abc for the replicate")
            and "calc seed 1" not in line
            for line in lines
        )
        # After the bar, the handler writes to its own stream again.
        assert handler.stream is stream
        logger.info("after the bar")
        assert stream.getvalue() == "after the bar\n"
    finally:
        logger.removeHandler(handler)


@pytest.mark.slow
def test_a_run_from_the_cache_says_reused_per_replicate(tmp_path, xaytune):
    cache = (f"cache.dir={tmp_path / 'c'}", "cache.mode=read-write")  # off in tests otherwise
    overrides = ("+experiment=quickstart", "sampling.count=4", *cache)
    first = xaytune(tmp_path, *overrides, f"hydra.run.dir={tmp_path / 'one'}")
    assert first.returncode == 0, first.describe()
    again = xaytune(tmp_path, *overrides, f"hydra.run.dir={tmp_path / 'two'}")
    assert again.returncode == 0, again.describe()
    output = again.stdout + again.stderr
    for name in ("calculator", "mental"):
        for seed in (101, 102, 103):
            line = f"replicate {name} seed {seed}: reused 4/4 tasks from the evidence cache"
            assert line in output
            assert f"replicate {name} seed {seed}: finished 0/4" not in output
    # The tokens it reports are the evidence's: the first run counted the same.
    first_out = first.stdout + first.stderr
    for seed in (101, 102, 103):
        ran = _tokens(first_out, f"replicate calculator seed {seed}: finished 4/4 tasks")
        reused = _tokens(output, f"replicate calculator seed {seed}: reused 4/4 tasks")
        assert ran == reused > 0


def _tokens(output: str, start: str) -> int:
    line = next(line for line in output.splitlines() if start in line)
    before = line.split(" tokens")[0]
    return int(before.rsplit(" ", 1)[1].replace(",", ""))
