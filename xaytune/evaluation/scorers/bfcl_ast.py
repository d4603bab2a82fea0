"""``bfcl-ast``: BFCL's AST checker for the single-call categories, as a scorer.

Categories: ``simple_python``, ``simple_java``, ``simple_javascript``, ``multiple``,
``parallel``, ``parallel_multiple`` and their live versions (``live_simple``,
``live_multiple``, ``live_parallel``, ``live_parallel_multiple``). A task of another
category (relevance, irrelevance, multi-turn, or not a BFCL task) is refused when the
evaluation is bound, before any model call (``scorer-unsuited``: see
:func:`bfcl_ast_accepts`).

The answer is an environment task's call record (``{"environment": {"name":
"bfcl-functions", "params": {"functions": [<BFCL function document>], "category":
<BFCL category>}}, "turns": [[{"name", "arguments"}, ...]], "text": ...}``); the
reference is ``{"ground_truth": [{<function name>: {<parameter>: [<allowed value>,
...]}}, ...]}`` (BFCL's ``possible_answer``; ``""`` among a parameter's values means it
may be left out).

The calls are read as BFCL's function-calling handlers decode a model's reply
(``decode_ast``), every call of every turn in order: each call's arguments are the JSON
text the model sent, read with ``json.loads`` (``5.0`` a float, ``5`` an integer).
BFCL's single-turn inference reads the model's first reply only; here every call the
attempt made counts (a harness that keeps calling after the recorded results is
checked on all of its calls: its loop is part of what is measured).

- Arguments that are not JSON: ``ast_decoder:decoder_failed``; JSON that is not an
  object: ``ast_decoder:decoder_wrong_output_format``.
- No call at all: the reply was text, which BFCL cannot decode
  (``ast_decoder:decoder_failed``), unless there is no text either (an empty list of
  calls, which the category's count check fails).
- Otherwise BFCL's ``ast_checker`` for the category
  (:func:`xaytune.evaluation.scorers._bfcl_ast_rules.ast_check`: one call for
  ``simple``, the named function for ``multiple``, any order for ``parallel``).

The reason is BFCL's error type and message. An answer that is not a ``bfcl-functions``
call record makes the scorer raise (``scorer-failed``).
"""

from __future__ import annotations

import json
from typing import Any

from xaytune.evaluation.scorers._bfcl_ast_rules import CONVERTER_MODULES, ast_check
from xaytune.evaluation.scorers._bfcl_calls import (
    bfcl_language,
    decoded_call,
    single_call_refusal,
)
from xaytune.evaluation.scorers._score import Score
from xaytune.plugins import scorer

__all__ = ["AST_CATEGORIES", "bfcl_ast", "bfcl_ast_accepts"]

AST_CATEGORIES = frozenset(
    {
        "simple_python",
        "simple_java",
        "simple_javascript",
        "multiple",
        "parallel",
        "parallel_multiple",
        "live_simple",
        "live_multiple",
        "live_parallel",
        "live_parallel_multiple",
    }
)
# A suite built before categories were recorded holds simple_python tasks only.
_DEFAULT_CATEGORY = "simple_python"


def _record(answer: str) -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
    record = json.loads(answer)
    environment = record.get("environment") if isinstance(record, dict) else None
    if not isinstance(environment, dict) or environment.get("name") != "bfcl-functions":
        raise ValueError("the answer is not a bfcl-functions call record")
    calls = [call for turn in record.get("turns") or [] for call in turn]
    return environment.get("params") or {}, calls, record.get("text")


@scorer(name="bfcl-ast")
def bfcl_ast(answer: str, reference: str) -> Score:
    """BFCL's AST rule for one single-call task (module docstring)."""
    params, calls, text = _record(answer)
    category = params.get("category", _DEFAULT_CATEGORY)
    if category not in AST_CATEGORIES:
        raise ValueError(f"bfcl-ast does not check the BFCL category {category!r}")
    truth = json.loads(reference)["ground_truth"]
    if not calls and text:
        return Score(
            success=False,
            reason="ast_decoder:decoder_failed: Invalid syntax. The reply was text, not a call.",
        )
    output = []
    for call in calls:
        decoded = decoded_call(call)
        if isinstance(decoded, str):
            return Score(success=False, reason=decoded)
        output.append(decoded)
    result = ast_check(
        params["functions"], output, truth, category, language=bfcl_language(category)
    )
    if result["valid"]:
        return Score(success=True)
    return Score(success=False, reason=f"{result['error_type']}: {_message(result['error'])}")


def _message(errors: list[Any]) -> str:
    return " ".join(str(error) for error in errors)


def bfcl_ast_accepts(task: Any) -> str | None:
    """None when ``task`` is a task this scorer checks; else why not (one line)."""
    return single_call_refusal(task, AST_CATEGORIES, scorer="bfcl-ast")


bfcl_ast.__xaytune_accepts__ = bfcl_ast_accepts  # type: ignore[attr-defined]
# Its rule runs BFCL's Java and JavaScript converters: their code is part of its identity.
bfcl_ast.__xaytune_sources__ = (  # type: ignore[attr-defined]
    "xaytune.evaluation.scorers._bfcl_calls",
    "xaytune.evaluation.scorers._bfcl_ast_rules",
    *CONVERTER_MODULES,
)
bfcl_ast.__xaytune_version__ = "2"  # type: ignore[attr-defined]
