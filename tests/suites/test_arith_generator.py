"""The arith-tools generator: deterministic, parsable, solvable, evenly spread."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.core.domain.arithmetic import Step, evaluate_steps, parse_question
from xaytune.core.domain.benchmark import Task
from xaytune.core.errors import SuiteError
from xaytune.suites.arith_generator import generate_arith_tools

TASKS, REFERENCES = generate_arith_tools()
ANSWERS = {reference["id"]: reference["answer"] for reference in REFERENCES}


def test_generator_golden_tasks_for_the_default_seed():
    # Answers worked by hand from the question text:
    # 0001: 1 kg = 1000 g.
    # 0006: 3 weeks = 21 d = 504 h = 30240 min; + 9 = 30249 min = 1814940 s; + 47.
    # 0024: 26 + 45 = 71; * 6 = 426; / 6 = 71; + 8 = 79; * 3 = 237; / 3 = 79.
    golden = {
        "arith-0001": ("Convert 1 kilogram to grams.", "1000"),
        "arith-0006": ("Convert 3 weeks, 9 minutes and 47 seconds to seconds.", "1814987"),
        "arith-0024": (
            "Start with 26. Add 45. Multiply by 6. Divide by 6. Add 8. Multiply by 3. "
            "Divide by 3. What is the result?",
            "79",
        ),
    }
    by_id = {task["id"]: task for task in TASKS}
    for task_id, (question, answer) in golden.items():
        assert by_id[task_id]["input"]["question"] == question
        assert ANSWERS[task_id] == answer


def test_generator_is_deterministic_and_seed_dependent():
    assert generate_arith_tools() == (TASKS, REFERENCES)
    other, _ = generate_arith_tools(seed=7)
    assert [t["input"] for t in other] != [t["input"] for t in TASKS]


def test_every_question_parses_and_evaluates_to_its_reference():
    for task in TASKS:
        steps = parse_question(task["input"]["question"])
        assert str(evaluate_steps(steps)) == ANSWERS[task["id"]]
        assert len(steps) - 1 == task["metadata"]["operations"]
        assert 0 <= int(ANSWERS[task["id"]]) < 10**7


def test_task_records_have_the_suite_shape():
    for task in TASKS:
        assert set(task) == {"id", "input", "attachments", "metadata"}
        assert task["attachments"] == []
        Task.model_validate(task)
    assert [r["id"] for r in REFERENCES] == [t["id"] for t in TASKS]
    assert all(set(r) == {"id", "answer"} for r in REFERENCES)


def test_ids_are_unique_and_numbered():
    ids = [task["id"] for task in TASKS]
    assert len(set(ids)) == len(ids) == 240
    assert ids[0] == "arith-0001" and ids[-1] == "arith-0240"


def test_operations_are_spread_evenly_and_kinds_mixed_seventy_thirty():
    operations = Counter(task["metadata"]["operations"] for task in TASKS)
    assert operations == {n: 40 for n in range(1, 7)}
    kinds = Counter(task["metadata"]["kind"] for task in TASKS)
    assert kinds == {"arithmetic": 168, "conversion": 72}
    for task in TASKS:
        expected = "Start with" if task["metadata"]["kind"] == "arithmetic" else "Convert"
        assert task["input"]["question"].startswith(expected)


def test_parse_question_finds_the_question_inside_a_prompt():
    prompt = (
        "Solve the problem below.\n\nQuestion: Start with 17. Add 25. Subtract 38. "
        "Multiply by 3. What is the result?\n\nEnd with ANSWER: <number>."
    )
    steps = parse_question(prompt)
    assert steps == [Step("start", 17), Step("+", 25), Step("-", 38), Step("*", 3)]
    assert evaluate_steps(steps) == 12  # (17 + 25 - 38) * 3


def test_parse_conversion_to_a_larger_unit_divides_rung_by_rung():
    steps = parse_question("Convert 7200 seconds to hours.")
    assert steps == [Step("start", 7200), Step("/", 60), Step("/", 60)]
    assert evaluate_steps(steps) == 2
    assert evaluate_steps(parse_question("Convert 2 kilometers and 5 meters to meters.")) == 2005


@pytest.mark.parametrize(
    "text",
    [
        "What is the capital of France?",
        "Convert 3 hours and 2 metres to seconds.",
        "Convert 3 minutes and 2 hours to seconds.",
        "Convert 3 parsecs to metres.",
        "Convert 3 hours and 20 minutes to hours.",
    ],
)
def test_parse_question_refuses_text_outside_the_grammar(text):
    with pytest.raises(SuiteError) as caught:
        parse_question(text)
    assert caught.value.reason == "question-unparsable"


def test_evaluate_steps_refuses_inexact_division_and_negatives():
    with pytest.raises(SuiteError) as inexact:
        evaluate_steps([Step("start", 7), Step("/", 2)])
    assert inexact.value.reason == "arith-inexact"
    with pytest.raises(SuiteError) as negative:
        evaluate_steps([Step("start", 7), Step("-", 9)])
    assert negative.value.reason == "arith-negative"
    with pytest.raises(SuiteError) as headless:
        evaluate_steps([Step("+", 1)])
    assert headless.value.reason == "arith-step"


@pytest.mark.parametrize("count", [0, 10_000])
def test_generator_refuses_counts_outside_the_id_range(count):
    with pytest.raises(SuiteError) as caught:
        generate_arith_tools(count=count)
    assert caught.value.reason == "bad-count"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**40))
def test_any_seed_gives_solvable_questions(seed):
    tasks, references = generate_arith_tools(count=36, seed=seed)
    for task, reference in zip(tasks, references, strict=True):
        steps = parse_question(task["input"]["question"])
        assert len(steps) - 1 == task["metadata"]["operations"]
        assert str(evaluate_steps(steps)) == reference["answer"]
