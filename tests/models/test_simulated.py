"""The simulated model: deterministic, tool-using, error-prone in the head, a judge."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import defaultdict

import pytest

from xaytune.core.errors import ConfigError
from xaytune.models import (
    ContextOverflowError,
    Message,
    Model,
    ModelRequest,
    SimulatedModel,
    ToolSchema,
    TransientModelError,
)
from xaytune.suites.arith_generator import generate_arith_tools

TASKS, REFERENCES = generate_arith_tools()
ANSWERS = {reference["id"]: reference["answer"] for reference in REFERENCES}
CALCULATOR = ToolSchema(
    name="calculator",
    description="Evaluate an arithmetic expression.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}},
)
EXPRESSION = re.compile(r"(-?\d+) ([-+*/]) (\d+)")


def complete(model: SimulatedModel, request: ModelRequest):
    return asyncio.run(model.complete(request))


def request(question: str, system: str = "Solve the problem.", **options) -> ModelRequest:
    messages = (Message("system", system), Message("user", question))
    return ModelRequest(messages=messages, **options)


def python_calculator(expression: str) -> str:
    """An independent calculator for the test loop: exact Python integers."""
    left, op, right = EXPRESSION.fullmatch(expression).groups()
    a, b = int(left), int(right)
    if op == "/":
        return str(a // b) if a % b == 0 else f"error: {a} / {b} is not exact"
    return str({"+": a + b, "-": a - b, "*": a * b}[op])


async def solve(model, question, *, system, tools=(CALCULATOR,), key="k", tool_result=None):
    """A tiny agent loop: feed calculator calls back until a final text."""
    messages = [Message("system", system), Message("user", question)]
    calls = []
    for turn in range(10):
        reply = await model.complete(
            ModelRequest(messages=tuple(messages), tools=tools, sampling_key=f"{key}:{turn}")
        )
        if not reply.tool_calls:
            return reply, calls
        messages.append(Message("assistant", reply.text, reply.tool_calls))
        for call in reply.tool_calls:
            calls.append(call)
            expression = json.loads(call.arguments)["expression"]
            result = tool_result or python_calculator(expression)
            messages.append(Message("tool", result, tool_call_id=call.id))
    raise AssertionError("the simulated model did not finish in 10 turns")


def last_number(text: str) -> str | None:
    numbers = re.findall(r"-?\d+", text)
    return numbers[-1] if numbers else None


def test_simulated_model_satisfies_the_protocol_with_a_pinned_identity():
    model = SimulatedModel(seed=101, context_window=4000)
    assert isinstance(model, Model)
    identity = model.identity
    assert (identity.provider, identity.model, identity.revision) == (
        "xaytune-sim",
        "simulated-arith",
        "v1",
    )
    assert identity.parameters["seed"] == 101
    assert identity.parameters["context_window"] == 4000
    assert set(identity.parameters) >= {
        "latency_s",
        "transient_error_rate",
        "mental_error_base",
        "judge_noise_rate",
        "judge_malformed_rate",
    }


def test_same_inputs_give_the_same_reply_and_keys_or_seeds_vary_it():
    model = SimulatedModel(seed=101)
    first = complete(model, request(TASKS[5]["input"]["question"], sampling_key="a"))
    assert (
        complete(SimulatedModel(seed=101), request(TASKS[5]["input"]["question"], sampling_key="a"))
        == first
    )
    texts_by_key = set()
    texts_by_seed = set()
    for n in range(30):
        question = TASKS[5]["input"]["question"]  # a 6-operation task
        texts_by_key.add(complete(model, request(question, sampling_key=f"k{n}")).text)
        texts_by_seed.add(complete(SimulatedModel(seed=n), request(question)).text)
    assert len(texts_by_key) > 1
    assert len(texts_by_seed) > 1


def test_calculator_path_solves_every_generated_task():
    model = SimulatedModel(seed=101)
    system = "Use the calculator tool for every step. End with ANSWER: <number>."
    for task in TASKS:
        reply, calls = asyncio.run(solve(model, task["input"]["question"], system=system))
        assert reply.text.splitlines()[-1] == f"ANSWER: {ANSWERS[task['id']]}", task["id"]
        assert len(calls) == task["metadata"]["operations"]
        assert [call.id for call in calls] == [
            f"call_{turn}_1" for turn in range(1, len(calls) + 1)
        ]
        assert all(EXPRESSION.fullmatch(json.loads(c.arguments)["expression"]) for c in calls)


def test_calculator_errors_fall_back_to_mental_arithmetic():
    model = SimulatedModel(seed=101, mental_error_base=0.0)
    task = TASKS[3]
    reply, calls = asyncio.run(
        solve(
            model,
            task["input"]["question"],
            system="Use the calculator.",
            tool_result="error: tool not available",
        )
    )
    assert len(calls) == task["metadata"]["operations"]
    assert last_number(reply.text) == ANSWERS[task["id"]]


def test_calculator_is_used_only_when_offered_and_mentioned():
    model = SimulatedModel(seed=101)
    question = TASKS[2]["input"]["question"]
    unmentioned = complete(model, request(question, tools=(CALCULATOR,)))
    unoffered = complete(model, request(question, system="Use the calculator."))
    assert unmentioned.tool_calls == () and unoffered.tool_calls == ()
    called = complete(model, request(question, system="Use the CALCULATOR.", tools=(CALCULATOR,)))
    assert called.finish_reason == "tool_calls" and called.text is None


def mental_accuracy(model: SimulatedModel, replicates: int = 10) -> dict[int, float]:
    right: dict[int, int] = defaultdict(int)
    total: dict[int, int] = defaultdict(int)
    for replicate in range(replicates):
        for task in TASKS:
            reply = complete(
                model, request(task["input"]["question"], sampling_key=f"r{replicate}:{task['id']}")
            )
            operations = task["metadata"]["operations"]
            right[operations] += last_number(reply.text) == ANSWERS[task["id"]]
            total[operations] += 1
    return {n: right[n] / total[n] for n in total}


def test_mental_error_rate_grows_with_the_number_of_operations():
    accuracy = mental_accuracy(SimulatedModel(seed=101))
    # Designed: P(right) = prod_k (1 - 0.08 (k + 1) / 2) = 0.92, 0.81, 0.68, 0.54, 0.41, 0.30.
    assert accuracy[1] >= 0.85
    assert accuracy[6] <= 0.5
    short = (accuracy[1] + accuracy[2]) / 2
    long = (accuracy[5] + accuracy[6]) / 2
    assert short - long > 0.3


def test_mental_arithmetic_without_slips_is_always_right():
    accuracy = mental_accuracy(SimulatedModel(seed=5, mental_error_base=0.0), replicates=1)
    assert set(accuracy.values()) == {1.0}


def test_answer_marker_is_written_only_when_the_instructions_ask_for_it():
    model = SimulatedModel(seed=101, mental_error_base=0.0)
    task = TASKS[0]
    prose = complete(model, request(task["input"]["question"])).text
    assert "ANSWER:" not in prose
    assert last_number(prose) == ANSWERS[task["id"]]
    marked = complete(
        model, request(task["input"]["question"], system="End with a line ANSWER: <number>.")
    ).text
    assert marked.splitlines()[-1] == f"ANSWER: {ANSWERS[task['id']]}"


def test_unknown_question_gets_a_plain_refusal():
    reply = complete(SimulatedModel(seed=1), request("Write a haiku about the sea."))
    assert reply.text == "I could not work this out."
    assert reply.finish_reason == "stop" and reply.tool_calls == ()


def test_usage_is_estimated_from_characters():
    system, question = "x" * 10, "Start with 4. Add 3. What is the result?"  # 40 chars
    reply = complete(SimulatedModel(seed=1, mental_error_base=0.0), request(question, system))
    assert reply.usage.input_tokens == 13  # ceil(50 / 4)
    assert reply.usage.output_tokens == -(-len(reply.text) // 4)
    with_tools = complete(SimulatedModel(seed=1), request(question, system, tools=(CALCULATOR,)))
    assert with_tools.usage.input_tokens > reply.usage.input_tokens


def test_output_above_max_output_tokens_is_cut_with_finish_length():
    question = TASKS[0]["input"]["question"]
    reply = complete(SimulatedModel(seed=1), request(question, max_output_tokens=2))
    assert reply.finish_reason == "length"
    assert reply.usage.output_tokens == 2 and len(reply.text) <= 8


JUDGE = "You are a grader. Score the candidate against the rubric."


def judge_prompt(candidate: str, reference: str | None = None) -> str:
    lines = [f"Candidate answer: {candidate}"]
    if reference is not None:
        lines.append(f"Reference answer: {reference}")
    lines.append("Reply with exactly: SCORE: <integer from 1 to 5>")
    return "\n".join(lines)


def judge_scores(prompt: str, *, times: int = 200, **options) -> list[str]:
    model = SimulatedModel(seed=3, **options)
    return [
        complete(model, request(prompt, system=JUDGE, sampling_key=f"j{n}")).text
        for n in range(times)
    ]


def test_judge_scores_matching_answers_high_and_mismatches_low():
    matching = judge_scores(judge_prompt("The result is 1,000.\nANSWER: 1000", "1000"))
    assert set(matching) <= {"SCORE: 5", "SCORE: 4"}
    assert 0.1 <= matching.count("SCORE: 4") / len(matching) <= 0.3
    wrong = judge_scores(judge_prompt("I get 998.", "1000"))
    assert set(wrong) <= {"SCORE: 1", "SCORE: 2"}
    assert wrong.count("SCORE: 1") > wrong.count("SCORE: 2")


def test_judge_without_reference_scores_a_bare_number_near_the_middle():
    scores = judge_scores(judge_prompt("387"))
    assert set(scores) <= {"SCORE: 2", "SCORE: 3", "SCORE: 4"}
    assert scores.count("SCORE: 3") > len(scores) / 2


def test_judge_can_be_made_to_reply_malformed():
    assert all(
        "SCORE:" not in text
        for text in judge_scores(judge_prompt("387"), times=20, judge_malformed_rate=1.0)
    )


def test_transient_errors_are_seeded_and_raise_model_transient():
    with pytest.raises(TransientModelError) as caught:
        complete(SimulatedModel(seed=1, transient_error_rate=1.0), request("Start with 1."))
    assert caught.value.reason == "model-transient" and caught.value.retries == 0
    model = SimulatedModel(seed=1, transient_error_rate=0.3)
    failures = 0
    for n in range(400):
        try:
            complete(
                model, request("Start with 2. Add 2. What is the result?", sampling_key=f"t{n}")
            )
        except TransientModelError:
            failures += 1
    assert 0.2 <= failures / 400 <= 0.4


def test_input_beyond_the_context_window_raises_context_overflow():
    with pytest.raises(ContextOverflowError) as caught:
        complete(SimulatedModel(seed=1, context_window=5), request(TASKS[0]["input"]["question"]))
    assert caught.value.reason == "context-overflow"


@pytest.mark.parametrize(
    "options",
    [
        {"transient_error_rate": 1.5},
        {"mental_error_base": -0.1},
        {"latency_s": -1.0},
        {"context_window": 0},
        {"judge_malformed_rate": 2.0},
    ],
)
def test_invalid_simulator_options_are_refused(options):
    with pytest.raises(ConfigError) as caught:
        SimulatedModel(seed=1, **options)
    assert caught.value.reason == "model-config"


def test_latency_is_awaited_so_calls_overlap():
    model = SimulatedModel(seed=1, latency_s=0.1)

    async def many():
        return await asyncio.gather(
            *(
                model.complete(
                    request("Start with 2. Add 2. What is the result?", sampling_key=str(n))
                )
                for n in range(20)
            )
        )

    started = time.perf_counter()
    replies = asyncio.run(many())
    assert len(replies) == 20
    assert time.perf_counter() - started < 1.0  # 20 sequential calls would take 2 s


# -- playing the built-in loops (plan-then-act, self-check) ---------------------------

PLAN = "Before solving, write a short numbered plan of the steps you will take."
CHECK = "Check your answer against the question, step by step. Reply in the same format."
SYSTEM = "Solve the problem step by step in your head. End with a final line ANSWER: <number>."


def follow_ups(model: SimulatedModel, question: str, key: str, *, mode: str) -> str:
    """The final text of a tool-free plan-then-act or self-check exchange."""
    messages = [Message("system", SYSTEM), Message("user", question)]
    if mode == "plan":
        messages.append(Message("user", PLAN))
        plan = complete(model, ModelRequest(messages=tuple(messages), sampling_key=f"{key}:0"))
        messages += [Message("assistant", plan.text), Message("user", "Now carry out your plan.")]
    else:
        first = complete(model, ModelRequest(messages=tuple(messages), sampling_key=f"{key}:0"))
        messages += [Message("assistant", first.text), Message("user", CHECK)]
    return complete(model, ModelRequest(messages=tuple(messages), sampling_key=f"{key}:1")).text


def test_a_plan_request_gets_a_numbered_plan_of_the_steps_and_no_answer():
    model = SimulatedModel(seed=3)
    task = next(t for t in TASKS if t["metadata"]["operations"] == 3)
    messages = (Message("system", SYSTEM), Message("user", task["input"]["question"]))
    reply = complete(model, ModelRequest(messages=(*messages, Message("user", PLAN))))
    lines = reply.text.splitlines()
    assert lines[0] == "Plan:" and len(lines) == 1 + 4  # start + three operations
    assert lines[1].startswith("1. Start from ") and "ANSWER" not in reply.text


def test_a_check_request_restates_the_answer_in_the_asked_format():
    model = SimulatedModel(seed=3, mental_error_base=0.0)
    task = TASKS[0]
    text = follow_ups(model, task["input"]["question"], "k", mode="check")
    assert text.startswith("Checking each step again") and text.endswith(
        f"ANSWER: {ANSWERS[task['id']]}"
    )


def designed_accuracy(care: float, base: float = 0.08) -> float:
    """The mean over the suite of prod_k (1 - care * base * (k + 1) / 2), k = 1..n."""
    total = 0.0
    for task in TASKS:
        p = 1.0
        for k in range(1, task["metadata"]["operations"] + 1):
            p *= 1 - min(0.9, base * (k + 1) / 2) * care
        total += p
    return total / len(TASKS)


@pytest.mark.parametrize(("mode", "care"), [("plan", 0.5), ("check", 0.5)])
def test_planning_and_checking_cut_slips_as_designed_and_deterministically(mode, care):
    model = SimulatedModel(seed=101)
    right = 0
    for task in TASKS:
        text = follow_ups(model, task["input"]["question"], task["id"], mode=mode)
        assert text == follow_ups(model, task["input"]["question"], task["id"], mode=mode)
        right += last_number(text) == ANSWERS[task["id"]]
    plain = mental_accuracy(model, replicates=1)
    plain_mean = sum(plain[t["metadata"]["operations"]] for t in TASKS) / len(TASKS)
    measured = right / len(TASKS)
    # 240 tasks: one binomial standard error is about 0.02 at these rates.
    assert abs(measured - designed_accuracy(care)) < 0.07
    assert measured > plain_mean
