"""BFCL's ``miss_func``: a held-out function is offered from the turn that reveals it.

One task of ``bfcl-multi-turn-miss-func`` (``multi_turn_miss_func_0``: ``sort`` held
out until user turn 3, whose message is BFCL's "I have updated some more functions you
can choose from. What about now?"), run in process by the runner with a scripted model
that replays the ground truth and, in turn 2 (where the ground truth makes no call: the
model lacks the function), tries ``sort`` anyway. The model is not offered ``sort``
before turn 3, and from turn 3 on it is, listed last (BFCL appends it); the early call
is refused as a tool the harness does not have, and is not in the answer; the answer
scores 1 with ``bfcl-multi-turn``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _bfcl_support import ground_truth_calls

from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.core.harness_evaluation import bind_task
from xaytune.evaluation.scorers.bfcl_multi_turn import bfcl_multi_turn
from xaytune.harness import (
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
    HarnessRunner,
    Toolbox,
    TrajectoryRecordingSpec,
)
from xaytune.harness._answer import AnswerExtraction
from xaytune.harness.evidence import HarnessEvidenceStore
from xaytune.harness.evidence.trajectory import WRITER
from xaytune.models import ModelReply, ModelRequest
from xaytune.models.scripted import ScriptedModel
from xaytune.suites import build_suite

TASK = "multi_turn_miss_func_0"


class Recording(ScriptedModel):
    """The built-in scripted model, keeping every request it was sent."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script=script)
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        return await super().complete(request)


def _one_task_suite(source: SuiteSource, root: Path) -> SuiteSource:
    lines = (source.path / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    task = next(json.loads(line) for line in lines if json.loads(line)["id"] == TASK)
    reference = {"id": TASK, "answer": source.reference(TASK).answer}
    return build_suite(
        root, name="miss-func-one", version="1", tasks=[task], references=[reference]
    )


def test_a_held_out_function_is_offered_from_its_turn_on(bfcl_source, tmp_path: Path):
    source = bfcl_source("bfcl-multi-turn-miss-func")
    task = source.suite.task(TASK)
    assert task.environment.params["held_out"] == {"3": ["sort"]}
    assert task.turns[2] == (
        "I have updated some more functions you can choose from. What about now?"
    )
    assert task.tools[-1].name == "sort"  # appended last, as BFCL appends it
    truth = ground_truth_calls(task, source.reference(TASK))
    assert [len(turn) for turn in truth] == [3, 2, 0, 1, 4]
    assert [call["name"] for call in truth[3]] == ["sort"]
    early = {"name": "sort", "arguments": truth[3][0]["arguments"]}
    script: list[Any] = []
    for index, calls in enumerate(truth):
        for call in [early] if index == 2 else calls:
            script.append({"tool_calls": [call]})
        script.append("Done.")
    model = Recording(script)

    one = _one_task_suite(source, tmp_path / "suite")
    assignment = record_assignment(one.suite, SeededSample(count=1), seed=101)
    bound, binding = bind_task(one.suite, assignment, TASK)
    store = HarnessEvidenceStore(tmp_path / "store")
    harness = Harness(
        name="bfcl-tool-loop",
        system_prompt="Call the functions.",
        max_turns=40,
        answer=AnswerExtraction(kind="full-text"),
    )
    spec = HarnessCompiler().compile(
        harness,
        HarnessCompilationContext(
            task=bound,
            seed=101,
            replicate=0,
            authorized_tools=frozenset(),
            content=HarnessContent(),
            output_uri=str(store.task_output(binding.position)),
            trajectory=TrajectoryRecordingSpec(writer=WRITER),
            task_binding=binding,
            suite=one.suite,
        ),
    )
    result = HarnessRunner().run(
        spec, model=model, toolbox=Toolbox.default(), authorized_tools=spec.tools
    )
    assert result.outcome is not None and result.outcome.terminal == "answer"

    # Which user turn each request belongs to: the number of user messages in it, less 1.
    offered = {}
    for request in model.requests:
        turn = sum(message.role == "user" for message in request.messages) - 1
        offered.setdefault(turn, [tool.name for tool in request.tools])
    assert sorted(offered) == [0, 1, 2, 3, 4]
    for turn in (0, 1, 2):
        assert "sort" not in offered[turn], turn
    for turn in (3, 4):
        assert offered[turn][-1] == "sort"
        assert offered[turn][:-1] == offered[0]

    # 10 ground-truth calls and the early one, which is the one tool error.
    assert (result.spend.tool_calls, result.spend.tool_errors) == (11, 1)
    answer = json.loads(result.outcome.answer)
    assert [len(turn) for turn in answer["turns"]] == [3, 2, 0, 1, 4]  # the early call: refused
    verdict = bfcl_multi_turn(result.outcome.answer, source.reference(TASK).text)
    assert verdict.success, verdict.reason
