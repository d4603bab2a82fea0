"""The words of attempt errors (xaytune.report._errors), from a hand-written errors
record: counts, cause lines, task ids beyond the shown ones, and who is withheld."""

from __future__ import annotations

from types import SimpleNamespace

from xaytune.report import cause_lines, error_cells
from xaytune.report._errors import errors_markdown, not_compared_text, shows_errors


def _replicate(seed: int, **counts) -> dict:
    base = {"seed": seed, "tasks": 8, "model_errors": 0, "timeouts": 0, "crashes": 0}
    return {**base, "other": 0, "causes": [], **counts}


ERRORS = {
    "schema": "xaytune.attempt-errors/v1",
    "bound": 0.1,
    "baseline": "a",
    "candidates": {
        "a": {"name": "calc", "over_bound": False, "replicates": [_replicate(1)]},
        "b": {
            "name": "loopy",
            "over_bound": True,
            "replicates": [
                _replicate(
                    1,
                    model_errors=1,
                    crashes=7,
                    causes=[
                        {
                            "kind": "crash",
                            "part": "loop",
                            "cause": "ValueError: a | b",
                            "tasks": 7,
                            "task_ids": ["t1", "t2", "t3", "t4", "t5"],
                        },
                        {
                            "kind": "model-error",
                            "part": None,
                            "cause": "model-error: HTTP 400",
                            "tasks": 1,
                            "task_ids": ["t8"],
                        },
                    ],
                )
            ],
        },
    },
    "not_compared": {"b": "model errors: loopy 1 of 8 tasks"},
}
REPORT = SimpleNamespace(a=SimpleNamespace(name="calc"), b=SimpleNamespace(name="loopy"))


def test_counts_and_cause_lines_name_kind_seed_ids_part_and_cause() -> None:
    assert error_cells(ERRORS, "calc") == "0"
    assert error_cells(ERRORS, "loopy") == "8 (1 model-error, 7 crash)"  # 1 + 7 by hand
    assert error_cells(ERRORS, "nobody") == "—"
    assert cause_lines(ERRORS, ("calc", "loopy")) == [
        "crash: loopy seed 1: 7 tasks (t1, t2, t3, t4, t5 and 2 more): loop: ValueError: a | b",
        "model-error: loopy seed 1: 1 task (t8): model-error: HTTP 400",
    ]


def test_the_errors_section_escapes_table_pipes_and_says_why_it_is_withheld() -> None:
    assert not_compared_text(ERRORS, REPORT) == "not compared (model errors: loopy 1 of 8 tasks)"
    assert shows_errors(ERRORS, REPORT)
    lines = errors_markdown(ERRORS, REPORT)
    assert "| loopy | 1 | 8 | 1 | 0 | 7 | 0 |" in lines
    assert any(line.endswith("loop: ValueError: a \\| b") for line in lines)
    assert lines[-1].startswith("**loopy: not compared (model errors: loopy 1 of 8 tasks)**")


def test_a_clean_comparison_has_no_errors_section() -> None:
    clean = {**ERRORS, "candidates": {"a": ERRORS["candidates"]["a"]}, "not_compared": {}}
    report = SimpleNamespace(a=SimpleNamespace(name="calc"), b=SimpleNamespace(name="calc-2"))
    assert not shows_errors(clean, report) and not_compared_text(clean, report) is None
