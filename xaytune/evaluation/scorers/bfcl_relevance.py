"""``bfcl-relevance``: BFCL's relevance and irrelevance checks, as a scorer.

Categories: ``irrelevance`` and ``live_irrelevance`` (none of the offered functions
fits the question: the model must not call one), ``live_relevance`` (one fits: the
model must call some function; which one, and with what, is not checked, as in BFCL).
A task of another category is refused when the evaluation is bound, before any model
call (``scorer-unsuited``: see :func:`bfcl_relevance_accepts`).

The answer is a ``bfcl-functions`` call record (see ``bfcl_ast``); the reference is
``{"expect": "no-call"}`` (irrelevance) or ``{"expect": "call"}`` (relevance). As
BFCL's ``_evaluate_single_relevance_entry`` decides it for a function-calling model,
the answer *contains a function call* when it made at least one call and every call's
arguments decode (``json.loads``) to an object: a reply of text only, or a call whose
arguments do not decode, is no call.

- irrelevance: success when there is no call, else
  ``irrelevance_error:decoder_success``;
- relevance: success when there is one, else ``relevance_error:decoder_failed``.

An answer that is not a ``bfcl-functions`` call record, or a reference that expects
otherwise than the task's category, makes the scorer raise (``scorer-failed``).
"""

from __future__ import annotations

import json
from typing import Any

from xaytune.evaluation.scorers._bfcl_calls import decoded_call, single_call_refusal
from xaytune.evaluation.scorers._score import Score
from xaytune.plugins import scorer

__all__ = ["RELEVANCE_CATEGORIES", "bfcl_relevance", "bfcl_relevance_accepts"]

# category -> what its reference expects
RELEVANCE_CATEGORIES = {
    "irrelevance": "no-call",
    "live_irrelevance": "no-call",
    "live_relevance": "call",
}


@scorer(name="bfcl-relevance")
def bfcl_relevance(answer: str, reference: str) -> Score:
    """BFCL's relevance rule for one task (module docstring)."""
    record = json.loads(answer)
    environment = record.get("environment") if isinstance(record, dict) else None
    if not isinstance(environment, dict) or environment.get("name") != "bfcl-functions":
        raise ValueError("the answer is not a bfcl-functions call record")
    category = (environment.get("params") or {}).get("category")
    expect = json.loads(reference)["expect"]
    if RELEVANCE_CATEGORIES.get(category) != expect:
        raise ValueError(f"category {category!r} does not expect {expect!r}")
    calls = [call for turn in record.get("turns") or [] for call in turn]
    called = bool(calls) and all(not isinstance(decoded_call(call), str) for call in calls)
    if expect == "no-call":
        if called:
            return Score(
                success=False,
                reason="irrelevance_error:decoder_success: Valid syntax. Successfully decode "
                f"AST when it should not ({len(calls)} call(s)).",
            )
        return Score(success=True)
    if not called:
        return Score(
            success=False,
            reason="relevance_error:decoder_failed: Invalid syntax. Failed to decode AST when "
            "it should have (no call whose arguments are a JSON object).",
        )
    return Score(success=True)


def bfcl_relevance_accepts(task: Any) -> str | None:
    """None when ``task`` is a task this scorer checks; else why not (one line)."""
    return single_call_refusal(task, RELEVANCE_CATEGORIES, scorer="bfcl-relevance")


bfcl_relevance.__xaytune_accepts__ = bfcl_relevance_accepts  # type: ignore[attr-defined]
bfcl_relevance.__xaytune_sources__ = ("xaytune.evaluation.scorers._bfcl_calls",)  # type: ignore[attr-defined]
bfcl_relevance.__xaytune_version__ = "1"  # type: ignore[attr-defined]
