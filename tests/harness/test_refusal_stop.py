"""A definitive refusal of the endpoint stops a run from starting further tasks.

``model-auth`` (and every word in DEFINITIVE_REASONS) is the endpoint's answer to every
call alike: another attempt, or another task, would only be refused again. A transient
failure or an ordinary per-request model error does not stop the run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _fixtures_run import Bench, ScriptedModel, make_source, reply

from xaytune.harness import Harness, HarnessRunner
from xaytune.harness.runner import refusal_of
from xaytune.harness.toolbox import Toolbox
from xaytune.models import DEFINITIVE_REASONS, ModelError

TOOLS = frozenset({"calculator"})
HARNESS = Harness(name="h", system_prompt="Answer. End with ANSWER: <number>.", tools=())


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    return make_source(tmp_path_factory.mktemp("refusal") / "suite", count=5)


def _run(source, root: Path, model: ScriptedModel, *, concurrency: int = 1):
    bench = Bench(source, root, count=5)
    harness = HARNESS.model_copy(update={"attempts_per_task": 3})
    specs = bench.specs(harness, tools=())
    return asyncio.run(
        HarnessRunner(durability="none").run_many(
            specs,
            model=model,
            toolbox=Toolbox.default(),
            authorized_tools=TOOLS,
            concurrency=concurrency,
        )
    )


def test_model_auth_ends_the_task_and_starts_no_further_task(source, tmp_path: Path) -> None:
    model = ScriptedModel(default=ModelError("model-auth", "401 from http://x/v1"))
    runs = _run(source, tmp_path / "store", model)
    first, *rest = runs
    # One call in all: no second attempt of the refused task (attempts_per_task=3), no
    # further task.
    assert len(model.requests) == 1
    assert len(first.attempts) == 1 and first.attempts[0].status == "partial"
    assert first.refused and refusal_of(first.attempts[0]) == "model-auth"
    assert [run.not_started for run in rest] == [True] * 4
    assert all(run.attempts == () and run.last is None for run in rest)


def test_tasks_in_flight_finish_when_another_is_refused(source, tmp_path: Path) -> None:
    """Concurrency 2: the refusal stops new tasks; the task already running keeps its
    outcome (here an answer), and only the never-started ones have no attempt."""
    calls: list[int] = []

    def answer_then_refuse(request):
        calls.append(1)
        if len(calls) == 1:
            raise ModelError("model-unknown", "404 model 'm' at http://x/v1")
        return reply("ANSWER: 1")

    model = ScriptedModel(default=answer_then_refuse, delay_s=0.01)  # both calls in flight
    runs = _run(source, tmp_path / "store", model, concurrency=2)
    started = [run for run in runs if not run.not_started]
    assert sum(run.refused for run in runs) == 1
    assert len(started) == 2 and sum(run.not_started for run in runs) == 3
    assert any(run.last is not None and run.last.outcome is not None for run in started)


@pytest.mark.parametrize("reason", ["model-error", "script-exhausted"])
def test_a_per_request_error_does_not_stop_the_run(source, tmp_path: Path, reason) -> None:
    assert reason not in DEFINITIVE_REASONS
    model = ScriptedModel(default=ModelError(reason, "bad request"))
    runs = _run(source, tmp_path / "store", model)
    assert not any(run.not_started or run.refused for run in runs)
    assert all(run.last is not None and run.last.outcome is not None for run in runs)
    assert {run.last.outcome.terminal for run in runs} == {"model-error"}
