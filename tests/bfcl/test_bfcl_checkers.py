"""The BFCL checkers as scorers agree with BFCL's own checkers on the same inputs.

Multi-turn: 25 tasks spread over the suite (every 8th), each with its ground truth
replayed (success on both) and three perturbations (a turn left empty, a changed
argument, a dropped call), each compared with BFCL's ``multi_turn_checker``: the same
verdict, and the same error type as the reason. AST (simple Python): 40 tasks (every
10th), the ground truth and three perturbations each, against BFCL's ``ast_checker``;
and cases worked by hand from the data.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from _bfcl_support import (
    bfcl_ast_checker,
    bfcl_multi_turn_verdict,
    ground_truth_calls,
    multi_turn_answer,
)

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.evaluation.scorers._score import Score
from xaytune.evaluation.scorers.bfcl_ast import bfcl_ast
from xaytune.evaluation.scorers.bfcl_multi_turn import bfcl_multi_turn


def _agree(mine: Score, theirs: dict[str, Any]) -> None:
    assert mine.success == theirs["valid"], (mine, theirs)
    if not mine.success:
        assert mine.reason is not None and mine.reason.startswith(theirs["error_type"] + ":")


def _first_busy_turn(turns: list[list[dict[str, Any]]]) -> int:
    return next(index for index, turn in enumerate(turns) if turn)


def _perturbations(turns: list[list[dict[str, Any]]]) -> dict[str, list[list[dict[str, Any]]]]:
    busy = _first_busy_turn(turns)
    empty = copy.deepcopy(turns)
    empty[busy] = []
    changed = copy.deepcopy(turns)
    for call in changed[busy]:
        strings = [key for key, value in call["arguments"].items() if isinstance(value, str)]
        numbers = [
            key
            for key, value in call["arguments"].items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        ]
        if strings:
            call["arguments"][strings[0]] += "_x"
            break
        if numbers:
            call["arguments"][numbers[0]] += 7
            break
    dropped = copy.deepcopy(turns)
    last = max(index for index, turn in enumerate(dropped) if turn)
    dropped[last] = dropped[last][:-1]
    return {"empty-turn": empty, "changed-argument": changed, "dropped-call": dropped}


def test_the_multi_turn_checker_agrees_with_bfcl(multi_turn: SuiteSource):
    tasks = multi_turn.suite.tasks[::8]
    assert len(tasks) >= 20
    failures: dict[str, int] = {}
    for task in tasks:
        reference = multi_turn.reference(task.id)
        truth = ground_truth_calls(task, reference)
        mine = bfcl_multi_turn(multi_turn_answer(task, truth), reference.text)
        assert mine.success, (task.id, mine.reason)
        _agree(mine, bfcl_multi_turn_verdict(task, reference, truth))
        for kind, turns in _perturbations(truth).items():
            mine = bfcl_multi_turn(multi_turn_answer(task, turns), reference.text)
            _agree(mine, bfcl_multi_turn_verdict(task, reference, turns))
            failures[kind] = failures.get(kind, 0) + (not mine.success)
    # Every emptied turn fails; a changed argument or a dropped call fails on most tasks
    # (not all: a call whose result and effect the ground truth does not check).
    assert failures["empty-turn"] == len(tasks)
    assert failures["changed-argument"] >= 20 and failures["dropped-call"] >= 10


def test_a_multi_turn_reason_names_the_turn_and_the_rule(multi_turn: SuiteSource):
    task = multi_turn.suite.task("multi_turn_base_0")
    reference = multi_turn.reference(task.id)
    truth = ground_truth_calls(task, reference)
    # cd(folder='document'), mkdir(dir_name='temp'), mv(...): make the directory elsewhere.
    assert [call["name"] for call in truth[0]] == ["cd", "mkdir", "mv"]
    wrong = copy.deepcopy(truth)
    wrong[0][1]["arguments"]["dir_name"] = "tmp"
    verdict = bfcl_multi_turn(multi_turn_answer(task, wrong), reference.text)
    assert not verdict.success
    assert verdict.reason.startswith("multi_turn:instance_state_mismatch: turn 0: ")
    # Undecodable arguments are not executed: the turn is empty.
    broken = copy.deepcopy(truth)
    broken[0] = [{**call, "arguments": "cd folder"} for call in broken[0]]
    verdict = bfcl_multi_turn(multi_turn_answer(task, broken), reference.text)
    assert verdict.reason.startswith("multi_turn:empty_turn_model_response: turn 0")


def test_a_scorer_given_another_kind_of_answer_raises(multi_turn: SuiteSource):
    reference = multi_turn.reference("multi_turn_base_0")
    with pytest.raises(ValueError):
        bfcl_multi_turn(json.dumps({"turns": []}), reference.text)
    with pytest.raises(ValueError):
        bfcl_ast(json.dumps({"environment": {"name": "bfcl-multi-turn"}}), "{}")


# -- AST (simple Python) ---------------------------------------------------------------


def _ast_answer(task, calls: list[dict[str, Any]]) -> str:
    environment = {"name": "bfcl-functions", "params": task.environment.params}
    return json.dumps({"environment": environment, "turns": [calls], "text": None})


def _first(allowed: list[Any]) -> Any:
    """The first allowed value that is given ("" means "may be left out"); a dict's
    own values are allowed-value lists too."""
    value = next((x for x in allowed if x != ""), "")
    if isinstance(value, dict):
        return {k: _first(v) for k, v in value.items() if _first(v) != ""}
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        return [{k: _first(v) for k, v in item.items() if _first(v) != ""} for item in value]
    return value


def _ground_truth_arguments(reference) -> tuple[str, dict[str, Any]]:
    (name, allowed), *_ = reference.answer["ground_truth"][0].items()
    given = {k: _first(v) for k, v in allowed.items()}
    return name.replace(".", "_"), {k: v for k, v in given.items() if v != ""}


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "zz"
    return [] if value else [1]


def test_the_ast_checker_agrees_with_bfcl(simple_python: SuiteSource):
    ast_checker, language = bfcl_ast_checker()
    tasks = simple_python.suite.tasks[::10]
    assert len(tasks) >= 20
    failed = 0
    for task in tasks:
        reference = simple_python.reference(task.id)
        functions = task.environment.params["functions"]
        name, arguments = _ground_truth_arguments(reference)
        required = functions[0]["parameters"].get("required", [])
        variants = {"ground-truth": (name, arguments), "wrong-name": (name + "_v2", arguments)}
        if arguments:
            key = sorted(arguments)[0]
            variants["wrong-value"] = (name, {**arguments, key: _changed(arguments[key])})
        if required:
            missing = {k: v for k, v in arguments.items() if k != required[0]}
            variants["missing-required"] = (name, missing)
        for variant, (called, given) in variants.items():
            mine = bfcl_ast(
                _ast_answer(task, [{"name": called, "arguments": given}]), reference.text
            )
            theirs = ast_checker(
                functions,
                [{called: given}],
                reference.answer["ground_truth"],
                language.PYTHON,
                "simple_python",
                "gpt-4o-2024-11-20-FC",
            )
            _agree(mine, theirs)
            if variant == "ground-truth":
                assert mine.success, (task.id, mine.reason)
            failed += not mine.success
    # Every wrong name and missing required parameter fails; a changed value fails
    # unless it is also allowed (both checkers agree on each, above).
    assert failed >= 2 * len(tasks) + 20


@pytest.mark.parametrize(
    ("calls", "success", "reason"),
    [
        # simple_python_0: calculate_triangle_area(base=[10], height=[5], unit=["units", ""])
        ([{"base": 10, "height": 5}], True, None),
        ([{"base": 10, "height": 5, "unit": "Units"}], True, None),  # case-insensitive
        ([{"base": 10}], False, "simple_function_checker:missing_required"),
        ([{"base": 10, "height": 6}], False, "value_error:others"),
        ([{"base": 10.0, "height": 5}], False, "type_error:simple"),  # a float, not an int
        ([{"base": 10, "height": 5, "unit": "cm"}], False, "value_error:string"),
        ([{"base": 10, "height": 5, "color": "red"}], False,
         "simple_function_checker:unexpected_param"),
        ([{"base": 10, "height": 5}, {"base": 10, "height": 5}], False,
         "simple_function_checker:wrong_count"),
        ([], False, "simple_function_checker:wrong_count"),
    ],
)  # fmt: skip
def test_hand_worked_ast_cases(simple_python: SuiteSource, calls, success, reason):
    task = simple_python.suite.task("simple_python_0")
    reference = simple_python.reference(task.id)
    answer = _ast_answer(
        task, [{"name": "calculate_triangle_area", "arguments": args} for args in calls]
    )
    verdict = bfcl_ast(answer, reference.text)
    assert verdict.success is success
    assert (verdict.reason or "").startswith(reason or "")


def test_a_dotted_function_is_called_by_its_underscored_name(simple_python: SuiteSource):
    task = simple_python.suite.task("simple_python_1")  # math.factorial(number=[5])
    assert [tool.name for tool in task.tools] == ["math_factorial"]
    reference = simple_python.reference(task.id)
    good = _ast_answer(task, [{"name": "math_factorial", "arguments": {"number": 5}}])
    dotted = _ast_answer(task, [{"name": "math.factorial", "arguments": {"number": 5}}])
    assert bfcl_ast(good, reference.text).success
    assert bfcl_ast(dotted, reference.text).reason.startswith(
        "simple_function_checker:wrong_func_name"
    )
