"""Helpers for the BFCL tests: ground truth as model calls, and BFCL's own checkers.

BFCL's checkers are imported from the installed wheel. The multi-turn checker imports
with the standard library; the AST checker's module imports the model-handler table
(``bfcl_eval.constants.model_config``, which pulls in every provider's client), used
only to ask whether a model's endpoint turns dots in names into underscores: it is
imported here with that one module stubbed to say yes (what BFCL says for every
OpenAI-compatible function-calling model), so the checker that runs is BFCL's code.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
import types
import uuid
from types import SimpleNamespace
from typing import Any

from xaytune.core.domain.benchmark import Reference, Task
from xaytune.suites.bfcl.environment import BfclMultiTurnEnvironment


@functools.cache
def _wheel_file(category: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from xaytune.suites.bfcl import CATEGORIES, require_bfcl

    built = next(c for c in CATEGORIES.values() if c.name == category)
    data = require_bfcl() / "data"
    entries = {e["id"]: e for e in map(json.loads, (data / built.file).read_text().splitlines())}
    answers = data / "possible_answer" / built.file
    truths = (
        {e["id"]: e["ground_truth"] for e in map(json.loads, answers.read_text().splitlines())}
        if answers.exists()
        else {}
    )
    return entries, truths


def wheel_entry(task: Task) -> tuple[dict[str, Any], Any]:
    """``task``'s entry and ground truth (None for relevance) as the wheel ships them."""
    entries, truths = _wheel_file(task.metadata["bfcl_category"])
    return entries[task.id], truths.get(task.id)


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


def _fc_decode_execute_steps(calls: list[dict[str, Any]]) -> list[list[str]]:
    """A turn's calls as BFCL's function-calling evaluation decodes them, each call one
    step (one reply): ``convert_to_function_call`` (model_handler/utils.py, which
    imports tenacity and the prompt parsers: restated), and a step whose decoding
    raises (arguments that are not a JSON object) skipped, as
    ``_evaluate_single_multi_turn_entry`` skips it."""
    steps = []
    for call in calls:
        arguments = call["arguments"]
        try:
            value = json.loads(arguments) if isinstance(arguments, str) else arguments
            step = [f"{call['name']}({','.join(f'{k}={v!r}' for k, v in value.items())})"]
        except Exception:
            continue
        steps.append(step)
    return steps


def bfcl_multi_turn_verdict(
    task: Task, reference: Reference, turns: list[list[dict[str, Any]]]
) -> dict[str, Any]:
    """BFCL's ``multi_turn_checker`` on the same calls (each call one step) against the
    ground truth as BFCL ships it."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    # The entry and its ground truth as the wheel's files hold them (not the suite's
    # canonical copy): BFCL's side reads BFCL's data.
    entry, truth = wheel_entry(task)
    decoded = [_fc_decode_execute_steps(turn) for turn in turns]
    # BFCL keeps its instances in module globals by model name: a fresh name each time.
    return multi_turn_checker(
        decoded, truth, copy.deepcopy(entry), "multi_turn_base", f"m{uuid.uuid4().hex}"
    )


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


# -- BFCL's single-call evaluation path, from the wheel ----------------------------------


def stubbed_bfcl_utils():
    """``bfcl_eval.utils`` (its ``is_function_calling_format_output`` and
    ``is_empty_output``): the module imports ``filelock`` for its result writers, which
    the [bfcl] extra does not install; a stand-in lets the checker helpers import."""
    if "filelock" not in sys.modules:
        try:
            import filelock  # noqa: F401
        except ModuleNotFoundError:
            stub = types.ModuleType("filelock")
            stub.FileLock = object  # type: ignore[attr-defined]
            sys.modules["filelock"] = stub
    import bfcl_eval.utils

    return bfcl_eval.utils


def fc_model_result(calls: list[dict[str, Any]], text: str | None) -> Any:
    """What BFCL's OpenAI function-calling handler records for one reply: its tool calls
    as ``[{name: <arguments JSON text>}]``, or, without calls, the reply's text."""
    if calls:
        return [
            {call["name"]: call["arguments"] if isinstance(call["arguments"], str)
             else json.dumps(call["arguments"])}
            for call in calls
        ]  # fmt: skip
    return text or ""


def _fc_decode_ast(result: Any) -> list[dict[str, Any]]:
    """``OpenAICompletionsHandler.decode_ast`` for a function-calling model (bfcl-eval
    2026.3.23, model_handler/api_inference/openai_completion.py): the handler module
    imports the ``openai`` client, so its four lines are restated here."""
    decoded = []
    for invoked in result:
        name = list(invoked.keys())[0]  # noqa: RUF015 (BFCL's line, as it is)
        decoded.append({name: json.loads(invoked[name])})
    return decoded


def bfcl_single_call_verdict(
    category: str, functions: list[dict[str, Any]], truth: Any, model_result: Any
) -> dict[str, Any]:
    """BFCL's ``_evaluate_single_ast_entry`` (AST categories) or
    ``_evaluate_single_relevance_entry`` (relevance, irrelevance) on ``model_result``
    (eval_checker/eval_runner.py, which imports pandas and every model handler: its
    control flow is restated here around the wheel's own decoder checks and
    ``ast_checker``)."""
    utils = stubbed_bfcl_utils()
    if "relevance" in category:
        try:
            decoded = _fc_decode_ast(model_result)
            called = not utils.is_empty_output(decoded)
        except Exception:
            called = False
        success = not called if "irrelevance" in category else called
        if success:
            return {"valid": True}
        word = (
            "irrelevance_error:decoder_success"
            if "irrelevance" in category
            else ("relevance_error:decoder_failed")
        )
        return {"valid": False, "error_type": word}
    try:
        decoded = _fc_decode_ast(model_result)
    except Exception:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed"}
    if not utils.is_function_calling_format_output(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format"}
    ast_checker, language = bfcl_ast_checker()
    if "javascript" in category:
        lang = language.JAVASCRIPT
    elif "java" in category:
        lang = language.JAVA
    else:
        lang = language.PYTHON
    return ast_checker(functions, decoded, truth, lang, category, "gpt-4o-2024-11-20-FC")


def bfcl_multi_turn_entry_verdict(
    task: Task, reference: Reference, turns: list[list[dict[str, Any]]]
) -> dict[str, Any]:
    """BFCL's ``_evaluate_single_multi_turn_entry``: a run with another turn count than
    the ground truth is ``multi_turn:force_terminated``; otherwise
    ``multi_turn_checker`` (each turn one step; the category from the task id, as BFCL
    reads it: long-context scenarios for ``multi_turn_long_context``)."""
    if len(turns) != len(reference.answer["turns"]):
        return {"valid": False, "error_type": "multi_turn:force_terminated"}
    return bfcl_multi_turn_verdict(task, reference, turns)


# -- ground truth as a model's calls -------------------------------------------------


def _first(allowed: list[Any]) -> Any:
    """The first allowed value that is given ("" means "may be left out"); a dict's
    own values are allowed-value lists too (or, in a few live answers, a value)."""
    if not isinstance(allowed, list):
        return allowed
    value = next((x for x in allowed if x != ""), "")
    if isinstance(value, dict):
        return {k: _first(v) for k, v in value.items() if _first(v) != ""}
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        return [{k: _first(v) for k, v in item.items() if _first(v) != ""} for item in value]
    return value


def _as_string(value: Any) -> str:
    """A Java/JavaScript value as the string a model sends for it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value)


def truth_calls(truth: list[Any], language: str) -> list[dict[str, Any]]:
    """A single-call ground truth as the calls a model makes (the first allowed value
    of each parameter; in Java and JavaScript each value written as a string)."""
    calls = []
    for entry in truth:
        (name, allowed), *_ = entry.items()
        arguments = {k: _first(v) for k, v in allowed.items() if _first(v) != ""}
        if language != "python":
            arguments = {k: _as_string(v) for k, v in arguments.items()}
        calls.append({"name": name.replace(".", "_"), "arguments": arguments})
    return calls
