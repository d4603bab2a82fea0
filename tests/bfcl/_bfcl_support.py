"""Helpers for the BFCL tests: ground truth as model calls, and BFCL's own checkers.

BFCL's checkers are imported from the installed wheel. The multi-turn checker imports
with the standard library; the AST checker's module imports the model-handler table
(``bfcl_eval.constants.model_config``, which pulls in every provider's client), used
only to ask whether a model's endpoint turns dots in names into underscores: it is
imported here with that one module stubbed to say yes (what BFCL says for every
OpenAI-compatible function-calling model), so the checker that runs is BFCL's code.
"""

from __future__ import annotations

import json
import sys
import types
import uuid
from types import SimpleNamespace
from typing import Any

from xaytune.core.domain.benchmark import Reference, Task
from xaytune.suites.bfcl._environment import BfclMultiTurnEnvironment, _decode_big_ints


def ground_truth_calls(task: Task, reference: Reference) -> list[list[dict[str, Any]]]:
    """The ground truth of a multi-turn task as tool calls, per user turn."""
    assert task.environment is not None
    environment = BfclMultiTurnEnvironment(**task.environment.params)
    return [
        [environment.as_tool_call(source) for source in turn] for turn in reference.answer["turns"]
    ]


def multi_turn_answer(task: Task, turns: list[list[dict[str, Any]]]) -> str:
    """An environment task's answer (what the runner records) holding ``turns``."""
    assert task.environment is not None
    environment = {"name": "bfcl-multi-turn", "params": task.environment.params}
    return json.dumps({"environment": environment, "turns": turns, "text": None})


def call_source(call: dict[str, Any]) -> str:
    """A tool call as BFCL's decoded call string: ``name(key=value, ...)``."""
    arguments = ", ".join(f"{key}={value!r}" for key, value in call["arguments"].items())
    return f"{call['name']}({arguments})"


def bfcl_multi_turn_verdict(
    task: Task, reference: Reference, turns: list[list[dict[str, Any]]]
) -> dict[str, Any]:
    """BFCL's ``multi_turn_checker`` on the same calls (each turn one step) against the
    ground truth as BFCL ships it."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    assert task.environment is not None
    params = task.environment.params
    entry = {
        "id": task.id,
        "initial_config": _decode_big_ints(params["initial_config"]),
        "involved_classes": params["involved_classes"],
    }
    decoded = [[[call_source(call) for call in turn]] for turn in turns]
    truth = reference.answer["turns"]
    # BFCL keeps its instances in module globals by model name: a fresh name each time.
    return multi_turn_checker(decoded, truth, entry, "multi_turn_base", f"m{uuid.uuid4().hex}")


def bfcl_ast_checker():
    """BFCL's ``ast_checker`` and its ``Language`` (module docstring)."""
    name = "bfcl_eval.constants.model_config"
    held = sys.modules.get(name)
    stub = types.ModuleType(name)

    class _EveryModel(dict):
        def __missing__(self, key: str) -> SimpleNamespace:
            return SimpleNamespace(underscore_to_dot=True)

    stub.MODEL_CONFIG_MAPPING = _EveryModel()  # type: ignore[attr-defined]
    sys.modules[name] = stub
    try:
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    finally:
        if held is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = held
    return ast_checker, Language
