"""Multi-turn tasks with task-scoped tools implemented by an environment.

The environment (``_counter_env.Counter``, named by dotted path) is built fresh for
every attempt; its tools are called through the runner (trajectory, budgets,
timeouts); each user turn is appended once the agent has finished the one before;
the attempt's answer is what the agent did to the environment.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import _counter_env
import pytest
from _fixtures_run import Bench, read_attempt

from xaytune.core.errors import ExecutionError, PluginError, SuiteError, XaytuneError
from xaytune.harness import Harness, HarnessRunner, Toolbox
from xaytune.harness._answer import AnswerExtraction
from xaytune.models import ModelReply, ModelRequest
from xaytune.models.scripted import ScriptedModel
from xaytune.suites import build_suite

ENV = "_counter_env.Counter"
TURNS = ["Add two more.", "Now read it."]


def _task(**changes: Any) -> dict[str, Any]:
    task = {
        "id": "count",
        "input": {"question": "Add one."},
        "turns": TURNS,
        "tools": _counter_env.TOOLS,
        "environment": {"name": ENV, "params": {"start": 10}},
    }
    return {**task, **changes}


def _build(root: Path, task: dict[str, Any] | None = None):
    tasks = [task or _task(), {"id": "plain", "input": {"question": "Say hi."}}]
    references = [{"id": "count", "answer": {"value": 13}}, {"id": "plain", "answer": "hi"}]
    return build_suite(root, name="counter", version="1", tasks=tasks, references=references)


def _harness(**changes: Any) -> Harness:
    fields: dict[str, Any] = {
        "name": "counting",
        "system_prompt": "Use the tools.",
        "max_turns": 12,
        "answer": AnswerExtraction(kind="full-text"),
        **changes,
    }
    return Harness(**fields)


class Recording(ScriptedModel):
    """The built-in scripted model, keeping every request it was sent."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script=script)
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        return await super().complete(request)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


COUNTING = [
    _call("increment", by=1),
    "added one",
    _call("increment", by=2),
    "added two",
    _call("read"),
    "ANSWER: 13",
]


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return Bench(_build(tmp_path / "suite"), tmp_path / "store", count=2)


def _spec(bench: Bench, harness: Harness, *, replicate: int = 0, tools=()):
    position = bench.assignment.task_ids.index("count")
    return bench.spec(harness, position, tools=tools, replicate=replicate)


def _run(bench: Bench, model, harness: Harness | None = None, toolbox=None, **kwargs: Any):
    spec = _spec(bench, harness or _harness(), **kwargs)
    result = HarnessRunner().run(
        spec, model=model, toolbox=toolbox or Toolbox.default(), authorized_tools=spec.tools
    )
    _, events = read_attempt(result.path)
    return result, events


def _kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event["v"] for event in events if event["type"] == kind]


def test_each_user_turn_follows_the_last_and_the_answer_is_the_call_record(bench: Bench):
    model = Recording(COUNTING)
    result, events = _run(bench, model)
    assert result.outcome is not None and result.outcome.terminal == "answer"
    answer = json.loads(result.outcome.answer)
    assert answer == {
        "environment": {"name": ENV, "params": {"start": 10}},
        # Each call's arguments exactly as the model sent them (its JSON text).
        "turns": [
            [{"name": "increment", "arguments": '{"by": 1}'}],
            [{"name": "increment", "arguments": '{"by": 2}'}],
            [{"name": "read", "arguments": "{}"}],
        ],
        "text": "ANSWER: 13",
    }
    # The later turns are recorded, and each turn ends with the environment's state.
    assert [(e["turn"], e["text"]) for e in _kinds(events, "user_turn")] == [
        (1, TURNS[0]),
        (2, TURNS[1]),
    ]
    states = [(e["turn"], e["state"]) for e in _kinds(events, "environment_state")]
    assert states == [(0, {"value": 11}), (1, {"value": 13}), (2, {"value": 13})]
    results = _kinds(events, "tool_result")
    assert [r["content"] for r in results] == ["value is 11", "value is 13", '{"value":13}']
    assert result.spend.tool_calls == 3 and result.spend.turns == 6
    # The model was offered the task's tools, and a later turn continues the conversation.
    assert [tool.name for tool in model.requests[0].tools] == ["increment", "read", "fail", "slow"]
    last = [(m.role, m.content) for m in model.requests[-2].messages if m.role == "user"]
    assert [content for _, content in last] == ["Add one.", *TURNS]


def test_a_fresh_environment_for_every_attempt(bench: Bench, tmp_path: Path):
    before = len(_counter_env.INSTANCES)
    # Three replicates of the task, run concurrently in one process (a store each).
    benches = [Bench(bench.source, tmp_path / f"store-{r}", count=2) for r in (0, 1, 2)]
    specs = [_spec(each, _harness(), replicate=r) for r, each in enumerate(benches)]
    runs = asyncio.run(
        HarnessRunner().run_many(
            specs, model=ScriptedModel(script=COUNTING), toolbox=Toolbox.default(),
            authorized_tools=(),
        )
    )  # fmt: skip
    assert len(_counter_env.INSTANCES) == before + 3
    for run in runs:
        _, events = read_attempt(run.last.path)
        # Every attempt starts from the task's initial state, never from another's.
        assert _kinds(events, "environment_state")[0]["state"] == {"value": 11}


def test_environment_tool_errors_and_argument_checks_are_the_models_to_see(bench: Bench):
    script = [
        _call("fail"),
        _call("increment", by="two"),
        _call("increment", by=5),  # enum is for the model to read, not checked
        _call("jump"),
        "done",
        "ok",
        "ok",
    ]
    result, events = _run(bench, ScriptedModel(script=script))
    results = _kinds(events, "tool_result")
    assert [(r["ok"], r["error"]) for r in results] == [
        (False, "tool-error"),
        (False, "bad-arguments"),
        (True, None),
        (False, "unauthorized-tool"),
    ]
    assert results[0]["content"] == "error: ValueError: the counter refuses"
    assert result.spend.tool_errors == 3
    turns = json.loads(result.outcome.answer)["turns"]
    assert [call["name"] for call in turns[0]] == ["fail", "increment", "increment"]


def test_a_timed_out_call_abandons_the_environment(bench: Bench):
    script = [_call("slow"), _call("increment", by=1), "stopped", "ok", "ok"]
    _, events = _run(bench, ScriptedModel(script=script), _harness(tool_timeout_s=0.2))
    first, second = _kinds(events, "tool_result")
    assert first["error"] == "tool-timeout"
    assert second["error"] == "tool-error" and "abandoned" in second["content"]


def test_the_tool_call_budget_counts_environment_calls(bench: Bench):
    result, _ = _run(bench, ScriptedModel(script=COUNTING), _harness(tool_call_budget=1))
    assert result.outcome.terminal == "budget-stop"
    assert result.spend.tool_calls == 1


def test_a_plain_task_in_the_same_suite_is_unchanged(bench: Bench):
    position = bench.assignment.task_ids.index("plain")
    spec = bench.spec(_harness(), position, tools=())
    assert set(spec.config["task"]) == {"binding", "input"}
    result = HarnessRunner().run(
        spec, model=ScriptedModel(script=["hi"]), toolbox=Toolbox.default(), authorized_tools=()
    )
    assert result.outcome.answer == "hi"
    _, events = read_attempt(result.path)
    assert not _kinds(events, "user_turn") and not _kinds(events, "environment_state")


# -- pinning and refusals ------------------------------------------------------------


def test_the_suite_pins_the_environment_code(tmp_path: Path, monkeypatch):
    first = _build(tmp_path / "one")
    line = json.loads((tmp_path / "one" / "tasks.jsonl").read_text().splitlines()[0])
    code = line["environment"]["code"]
    assert code["kind"] == "environment" and code["target"] == ENV
    assert code["source_sha256"].startswith("sha256:")
    assert _build(tmp_path / "two").digest == first.digest  # deterministic
    monkeypatch.setattr(_counter_env.Counter, "version", "2")
    assert _build(tmp_path / "three").digest != first.digest  # another cohort


def test_running_a_suite_whose_environment_changed_is_refused(bench: Bench, monkeypatch):
    monkeypatch.setattr(_counter_env.Counter, "version", "2")
    with pytest.raises(ExecutionError) as caught:
        _spec(bench, _harness())
    assert caught.value.reason == "code-mismatch" and "count" in str(caught.value)


def test_a_task_tool_named_like_a_harness_tool_is_refused(bench: Bench):
    # A harness tool "read" (authorized) beside the task's own "read".
    with pytest.raises(ExecutionError) as caught:
        _spec(bench, _harness(tools=("read",)), tools=("read",))
    assert caught.value.reason == "duplicate-tool"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"tools": [*_counter_env.TOOLS, {"name": "jump", "parameters": {"type": "object"}}]},
         "unknown-tool"),
        ({"environment": {"name": ENV, "params": {"start": "ten"}}}, "bad-part-params"),
        ({"environment": {"name": ENV, "params": {"stop": 1}}}, "bad-part-params"),
        ({"environment": {"name": "nosuch_module.Env"}}, "unknown-part"),
        ({"environment": {"name": "_counter_env.Opaque"},
          "tools": [{"name": "read", "parameters": {"type": "object"}}]}, "bad-record"),
        ({"environment": None}, "bad-record"),
        ({"tools": []}, "bad-record"),
        ({"tools": [{"name": "no spaces", "parameters": {"type": "object"}}]}, "bad-record"),
        ({"environment": {"name": ENV, "params": {"start": 1},
                          "code": {"kind": "environment", "name": ENV, "target": ENV,
                                   "version": "0", "source_sha256": "sha256:00"}}},
         "code-mismatch"),
    ],
)  # fmt: skip
def test_building_a_suite_refuses_an_environment_that_does_not_fit(
    tmp_path: Path, changes: dict[str, Any], reason: str
):
    task = {k: v for k, v in _task(**changes).items() if v is not None}
    with pytest.raises(XaytuneError) as caught:
        _build(tmp_path / "suite", task)
    assert isinstance(caught.value, SuiteError | PluginError)
    assert caught.value.reason == reason, str(caught.value)
    assert "count" in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "suite").exists()


def test_a_multi_turn_environment_run_assembles_and_verifies(bench: Bench):
    from xaytune.harness.evidence import assemble_evidence, verify_run_evidence

    harness = _harness()
    specs = bench.specs(harness, tools=())
    script = {"Add one.": COUNTING, "Say hi.": ["hi"]}
    asyncio.run(
        HarnessRunner().run_many(
            specs, model=ScriptedModel(script=script), toolbox=Toolbox.default(),
            authorized_tools=(),
        )
    )  # fmt: skip
    evidence = assemble_evidence(
        specs, bench.suite, bench.sampling, bench.assignment, bench.source, bench.store
    )
    verify_run_evidence(evidence, bench.suite, bench.source, bench.store)
    assert all(entry.attested is not None for entry in evidence.entries)
