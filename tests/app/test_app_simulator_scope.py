"""The simulated model says what it can answer: run on a suite whose tasks hold no
arith-tools question, the run warns (``simulator-scope``) instead of letting a 0-vs-0
comparison pass for a result."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from xaytune.experiment.config import OpenAICompatibleModelConfig, SimulatedModelConfig
from xaytune.experiment.simulator_scope import simulator_scope
from xaytune.models import SimulatedModel
from xaytune.suites import build_suite


def _suite(root: Path, questions: dict[str, str]):
    return build_suite(
        root / "suite",
        name="mine",
        version="1",
        tasks=[{"id": k, "input": {"question": q}} for k, q in questions.items()],
        references=[{"id": k, "answer": "x"} for k in questions],
    )


def test_tasks_without_an_arith_question_are_counted_and_named(tmp_path: Path) -> None:
    source = _suite(
        tmp_path,
        {"capital": "What is the capital of France?", "unit": "Convert 9 weeks to hours."},
    )
    assert SimulatedModel.can_answer("Convert 9 weeks to hours.")
    assert not SimulatedModel.can_answer("What is the capital of France?")
    warning = simulator_scope(SimpleNamespace(model=SimulatedModelConfig(kind="simulated")), source)
    assert warning is not None and warning.startswith("simulator-scope: 1 of 2 tasks of suite mine")
    endpoint = OpenAICompatibleModelConfig(
        kind="openai_compatible", base_url="http://127.0.0.1:1/v1", name="m"
    )
    assert simulator_scope(SimpleNamespace(model=endpoint), source) is None


def test_the_built_in_suite_needs_no_warning(tmp_path: Path) -> None:
    source = _suite(tmp_path, {"a": "Convert 1 kilogram to grams."})
    assert (
        simulator_scope(SimpleNamespace(model=SimulatedModelConfig(kind="simulated")), source)
        is None
    )
