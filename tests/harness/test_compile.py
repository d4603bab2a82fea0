"""Compiling a harness: plain and task-bound specs, every refusal, the fingerprint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _fixtures_run import SEED, Bench, make_source
from pydantic import ValidationError

from xaytune.core.canonical import fingerprint, sha256_digest
from xaytune.core.domain.benchmark import SeededSample, record_assignment
from xaytune.core.errors import ExecutionError, SuiteError
from xaytune.core.harness_evaluation import TaskBinding, bind_task
from xaytune.harness import (
    AgentExecutionSpec,
    AnswerExtraction,
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
    TrajectoryRecordingSpec,
)
from xaytune.harness.evidence.trajectory import WRITER
from xaytune.models import ModelIdentity
from xaytune.suites import build_suite
from xaytune.suites.arith_generator import generate_arith_tools

HARNESS = Harness(
    name="calc",
    system_prompt="{content.persona} Use the calculator for every step. End with ANSWER: <n>.",
    user_prompt="Question: {question}",
    tools=("calculator",),
)
CONTENT = HarnessContent(blobs={"persona": "You are careful."})
TOOLS = frozenset({"calculator"})


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    root = tmp_path_factory.mktemp("compile")
    return Bench(make_source(root / "suite", count=8), root / "store", count=4)


def bound_context(bench: Bench, position: int = 0, **changes) -> HarnessCompilationContext:
    task, binding = bind_task(bench.suite, bench.assignment, bench.assignment.task_ids[position])
    fields = {
        "task": task,
        "seed": SEED,
        "replicate": 0,
        "authorized_tools": TOOLS,
        "content": CONTENT,
        "output_uri": f"/nowhere/tasks/{position:06d}",
        "trajectory": TrajectoryRecordingSpec(writer=WRITER),
        "task_binding": binding,
        "suite": bench.suite,
    }
    fields.update(changes)
    return HarnessCompilationContext(**fields)


def compile_(harness: Harness, context: HarnessCompilationContext) -> AgentExecutionSpec:
    return HarnessCompiler().compile(harness, context)


def refusal(harness: Harness, context: HarnessCompilationContext) -> ExecutionError:
    with pytest.raises(ExecutionError) as caught:
        compile_(harness, context)
    assert "\n" not in str(caught.value)
    return caught.value


# -- plain and bound specs ----------------------------------------------------------


def test_unbound_compile_is_the_plain_spec(bench: Bench) -> None:
    task = bench.suite.tasks[0]
    spec = compile_(
        HARNESS,
        HarnessCompilationContext(task=task, seed=7, authorized_tools=TOOLS, content=CONTENT),
    )
    assert spec.config == {}
    assert "task" not in spec.config
    assert spec.binding is None and spec.task_id is None
    assert spec.trajectory is None  # a plain spec need not record
    assert spec.system_message.startswith("You are careful. Use the calculator")
    assert spec.user_message == f"Question: {task.input['question']}"
    assert spec.tools == ("calculator",)
    assert spec.authorized_tools == ("calculator",)
    assert spec.seed == 7 and spec.replicate == 0
    assert spec.harness == HARNESS and spec.harness_fingerprint == HARNESS.fingerprint


def test_unbound_compile_without_a_task() -> None:
    harness = Harness(name="plain", system_prompt="Be brief.", user_prompt="Say hello.")
    spec = compile_(harness, HarnessCompilationContext())
    assert (spec.system_message, spec.user_message, spec.config) == ("Be brief.", "Say hello.", {})
    assert spec.tools == () and spec.authorized_tools == ()


def test_bound_compile_carries_binding_and_input(bench: Bench) -> None:
    context = bound_context(bench, 2)
    spec = compile_(HARNESS, context)
    task, binding = context.task, context.task_binding
    assert spec.config == {
        "task": {"binding": binding.model_dump(mode="json"), "input": dict(task.input)}
    }
    assert spec.binding == binding
    assert spec.task_id == task.id == bench.assignment.task_ids[2]
    assert spec.trajectory == TrajectoryRecordingSpec(writer=WRITER)
    assert spec.output_uri == "/nowhere/tasks/000002"
    assert spec.content_digests == {"persona": sha256_digest(b"You are careful.")}


def test_spec_is_frozen(bench: Bench) -> None:
    spec = compile_(HARNESS, bound_context(bench))
    with pytest.raises(ValidationError):
        spec.seed = 5  # type: ignore[misc]


def test_a_bound_spec_never_contains_the_reference(bench: Bench) -> None:
    spec = compile_(HARNESS, bound_context(bench))
    answer = bench.source.reference(spec.task_id).answer
    dumped = spec.model_dump_json(by_alias=True)
    assert f'"{answer}"' not in dumped and f"ANSWER: {answer}" not in dumped


# -- refusals -----------------------------------------------------------------------


def test_refuses_a_bound_spec_without_trajectory(bench: Bench) -> None:
    error = refusal(HARNESS, bound_context(bench, trajectory=None))
    assert error.reason == "trajectory-required"
    assert bench.assignment.task_ids[0] in str(error)


def test_refuses_a_task_with_attachments(tmp_path: Path) -> None:
    tasks, references = generate_arith_tools()
    tasks, references = tasks[:3], references[:3]
    tasks[1] = {**tasks[1], "attachments": [{"name": "table.csv", "media_type": "text/csv"}]}
    suite = build_suite(
        tmp_path / "suite", name="arith-att", version="1", tasks=tasks, references=references
    ).suite
    assignment = record_assignment(suite, SeededSample(), seed=SEED)
    with pytest.raises(SuiteError) as caught:  # bind_task refuses it first
        bind_task(suite, assignment, "arith-0002")
    assert caught.value.reason == "task-has-attachments"
    task = suite.task("arith-0002")
    binding = TaskBinding(  # so the compiler's own refusal is reached
        suite_digest=suite.digest,
        assignment_digest=assignment.digest,
        task_id=task.id,
        position=assignment.position(task.id),
        seed=SEED,
    )
    context = HarnessCompilationContext(
        task=task,
        seed=SEED,
        authorized_tools=TOOLS,
        content=CONTENT,
        output_uri=str(tmp_path / "out"),
        trajectory=TrajectoryRecordingSpec(),
        task_binding=binding,
        suite=suite,
    )
    error = refusal(HARNESS, context)
    assert error.reason == "task-has-attachments"
    assert "arith-0002" in str(error)


@pytest.mark.parametrize("authorized", [frozenset(), frozenset({"search"})])
def test_refuses_an_unauthorized_tool(bench: Bench, authorized: frozenset[str]) -> None:
    error = refusal(HARNESS, bound_context(bench, authorized_tools=authorized))
    assert error.reason == "unauthorized-tool"
    assert "'calculator'" in str(error)
    # and the same without a binding: authorization is not a property of binding
    plain = HarnessCompilationContext(
        task=bench.suite.tasks[0], authorized_tools=authorized, content=CONTENT
    )
    assert refusal(HARNESS, plain).reason == "unauthorized-tool"


def test_refuses_a_binding_from_another_suite(bench: Bench, tmp_path: Path) -> None:
    tasks, references = generate_arith_tools()
    other = build_suite(
        tmp_path / "other",
        name="arith-tools",
        version="2",
        tasks=tasks[:8],
        references=references[:8],
    ).suite
    assert other.digest != bench.suite.digest
    error = refusal(HARNESS, bound_context(bench, suite=other))
    assert error.reason == "suite-mismatch"
    assert bench.suite.digest in str(error) and other.digest in str(error)
    assert refusal(HARNESS, bound_context(bench, suite=None)).reason == "suite-mismatch"


def test_refuses_a_missing_template_field(bench: Bench) -> None:
    harness = Harness(name="typo", system_prompt="Solve {questoin}.", tools=("calculator",))
    error = refusal(harness, bound_context(bench))
    assert error.reason == "template-field-missing"
    assert "{questoin}" in str(error) and "typo" in str(error)
    # a plain spec refuses it too: a {question} field and no task to fill it
    asks = Harness(name="asks", system_prompt="Be brief.", user_prompt="{question}")
    error = refusal(asks, HarnessCompilationContext())
    assert error.reason == "template-field-missing" and "{question}" in str(error)


def test_refuses_missing_content(bench: Bench) -> None:
    error = refusal(HARNESS, bound_context(bench, content=HarnessContent()))
    assert error.reason == "content-missing"
    assert "'persona'" in str(error)
    other = HarnessContent(blobs={"style": "terse"})
    assert refusal(HARNESS, bound_context(bench, content=other)).reason == "content-missing"


def test_refuses_the_wrong_task_or_seed(bench: Bench) -> None:
    other_task = bench.suite.task(bench.assignment.task_ids[1])
    assert refusal(HARNESS, bound_context(bench, task=other_task)).reason == "task-mismatch"
    fixed = Harness(name="fixed", system_prompt="Hello.", user_prompt="Go.")
    assert refusal(fixed, bound_context(bench, task=None)).reason == "task-mismatch"
    assert refusal(HARNESS, bound_context(bench, seed=SEED + 1)).reason == "seed-mismatch"


# -- fingerprint --------------------------------------------------------------------


def test_fingerprint_is_its_contents_recomputed_independently(bench: Bench) -> None:
    spec = compile_(HARNESS, bound_context(bench))
    dumped = spec.model_dump(mode="json", by_alias=True)
    assert dumped["schema"] == "xaytune.agent-execution-spec/v1"
    del dumped["output_uri"], dumped["fingerprint"]
    assert spec.fingerprint == fingerprint(dumped)
    assert spec.fingerprint.startswith("sha256:") and len(spec.fingerprint) == 71
    assert HARNESS.fingerprint == fingerprint(HARNESS.model_dump(mode="json"))


def test_same_config_same_fingerprint(bench: Bench) -> None:
    one = compile_(HARNESS, bound_context(bench))
    two = HarnessCompiler().compile(
        Harness.model_validate(HARNESS.model_dump()), bound_context(bench)
    )
    assert one.fingerprint == two.fingerprint
    assert one.model_dump(by_alias=True) == two.model_dump(by_alias=True)


def test_fingerprint_ignores_output_uri(bench: Bench) -> None:
    here = compile_(HARNESS, bound_context(bench, output_uri="/a/tasks/000000"))
    there = compile_(HARNESS, bound_context(bench, output_uri="/b/elsewhere"))
    nowhere = compile_(HARNESS, bound_context(bench, output_uri=None))
    assert here.fingerprint == there.fingerprint == nowhere.fingerprint


@pytest.mark.parametrize(
    "change",
    [
        {"system_prompt": "Use the calculator. {content.persona}"},
        {"user_prompt": "Q: {question}"},
        {"max_turns": 3},
        {"token_budget": 1000},
        {"tool_call_budget": 4},
        {"context_window": 4096},
        {"max_output_tokens": 256},
        {"model_retries": 0},
        {"attempts_per_task": 2},
        {"answer": AnswerExtraction(kind="last-number", marker=None)},
        {"tools": ()},
        {"name": "calc-b"},
    ],
)
def test_fingerprint_changes_with_every_harness_field(bench: Bench, change: dict) -> None:
    base = compile_(HARNESS, bound_context(bench))
    variant = Harness.model_validate({**HARNESS.model_dump(), **change})
    assert variant.fingerprint != HARNESS.fingerprint
    spec = compile_(variant, bound_context(bench))
    assert spec.harness_fingerprint == variant.fingerprint
    assert spec.fingerprint != base.fingerprint


def test_fingerprint_follows_a_copied_harness(bench: Bench) -> None:
    # A candidate derived with model_copy must not keep its parent's fingerprint.
    variant = HARNESS.model_copy(update={"max_turns": 3})
    assert variant.fingerprint == fingerprint(variant.model_dump(mode="json"))
    assert variant.fingerprint != HARNESS.fingerprint
    spec = compile_(variant, bound_context(bench))
    assert spec.harness_fingerprint == variant.fingerprint


def test_fingerprint_changes_with_seed_replicate_content_model(bench: Bench) -> None:
    task = bench.suite.tasks[0]

    def plain(**changes) -> str:
        fields = {"task": task, "seed": 1, "authorized_tools": TOOLS, "content": CONTENT}
        fields.update(changes)
        return compile_(HARNESS, HarnessCompilationContext(**fields)).fingerprint

    base = plain()
    assert plain() == base
    assert plain(seed=2) != base
    assert plain(replicate=1) != base
    assert plain(content=HarnessContent(blobs={"persona": "You are quick."})) != base
    assert plain(authorized_tools=TOOLS | {"search"}) != base
    assert plain(task=bench.suite.tasks[1]) != base
    identity = ModelIdentity(provider="p", model="m", revision="r")
    assert plain(model=identity) != base
    # a bound spec differs from the plain one, and across replicates and positions
    bound = compile_(HARNESS, bound_context(bench)).fingerprint
    assert bound != compile_(HARNESS, bound_context(bench, replicate=1)).fingerprint
    assert bound != compile_(HARNESS, bound_context(bench, 1)).fingerprint
    # a seed is bound with its assignment: another seed means another binding
    assignment = record_assignment(bench.suite, bench.sampling, seed=SEED + 1)
    task, binding = bind_task(bench.suite, assignment, assignment.task_ids[0])
    reseeded = bound_context(bench, task=task, task_binding=binding, seed=SEED + 1)
    assert compile_(HARNESS, reseeded).fingerprint != bound


def test_a_stored_spec_round_trips_and_refuses_edits(bench: Bench) -> None:
    spec = compile_(HARNESS, bound_context(bench))
    raw = spec.model_dump_json(by_alias=True)
    again = AgentExecutionSpec.model_validate_json(raw)
    assert again.fingerprint == spec.fingerprint and again == spec
    edited = json.loads(raw)
    edited["seed"] = SEED + 1
    with pytest.raises(ValidationError, match="fingerprint is not its contents'"):
        AgentExecutionSpec.model_validate(edited)
    mislabelled = json.loads(raw)
    mislabelled["harness_fingerprint"] = "sha256:" + "0" * 64
    mislabelled.pop("fingerprint")
    with pytest.raises(ValidationError, match="harness"):
        AgentExecutionSpec.model_validate(mislabelled)


_PROBE = """
import sys
from xaytune.harness import Harness, HarnessCompilationContext, HarnessCompiler, HarnessContent
from xaytune.core.domain.benchmark import Task
h = Harness(name="calc", system_prompt="{content.p} End with ANSWER: <n>.",
            user_prompt="Q: {question}", tools=("calculator",))
t = Task(id="t-1", input={"question": "What is 2 + 3?"})
spec = HarnessCompiler().compile(h, HarnessCompilationContext(
    task=t, seed=11, replicate=2, authorized_tools={"calculator", "zeta", "alpha"},
    content=HarnessContent(blobs={"p": "Hi.", "q": "unused"}), output_uri=sys.argv[1]))
print(spec.fingerprint)
"""


def test_fingerprint_is_the_same_in_other_processes(tmp_path: Path) -> None:
    """Same config -> same fingerprint, whatever the hash seed and output tree."""
    outputs = set()
    for hash_seed, out in (("1", "/x"), ("4242", str(tmp_path))):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, out], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1
    assert outputs.pop().startswith("sha256:")
