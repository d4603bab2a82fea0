"""``bfcl-multi-turn``: BFCL's multi-turn checker as a scorer.

Categories: ``multi_turn_base``, ``multi_turn_miss_func``, ``multi_turn_miss_param``,
``multi_turn_long_context`` (the environment ``bfcl-multi-turn``); a task of another
kind is refused when the evaluation is bound, before any model call
(``scorer-unsuited``: see :func:`bfcl_multi_turn_accepts`). The environment params
carry what BFCL reads of the category: ``long_context`` (the scenarios load their long
versions) and ``held_out`` (functions offered from a later turn on; the checker runs
every call the model made, as BFCL's does).

The answer is an environment task's call record (``xaytune.harness.environment``:
``{"environment": {"name": "bfcl-multi-turn", "params"}, "turns": [[{"name",
"arguments"}, ...], ...]}``); the reference is ``{"turns": [[<ground-truth call>, ...],
...]}`` (BFCL's ``possible_answer``: Python call strings with literal arguments).

The rule is BFCL's ``multi_turn_checker`` (bfcl-eval 2026.3.23), on two fresh
environments built from the answer's environment params (the task's initial state):
for each user turn, in order,

1. the model's calls of the turn are executed on the model's environment, and the
   ground-truth calls on the ground-truth environment, each as BFCL's evaluation run
   executes a call (a failure is the result ``"Error during execution: ..."``); a model
   call's arguments are its JSON text read as BFCL reads it (``json.loads``: ``20.0`` is
   a float, ``20`` an integer); arguments that are not a JSON object cannot be decoded,
   and the call is not executed (BFCL decodes one reply's calls together and skips the
   whole reply when one fails: the call record keeps calls, not replies, so each call
   is decoded on its own here; the tests check agreement with one call per reply);
2. a turn with ground-truth calls in which the model made none fails
   (``multi_turn:empty_turn_model_response``); a turn without ground-truth calls is not
   checked (its calls still change the state the next turn starts from);
3. every class's public attributes must equal the ground truth's
   (``multi_turn:instance_state_mismatch``, naming the class and the attributes);
4. every ground-truth result of the turn must be among the model's results of this
   turn and the turns before, each matched once, in any order
   (``multi_turn:execution_response_mismatch``, naming how many are missing).

An answer with another number of turns than the ground truth (the attempt stopped
before the last user turn) fails ``multi_turn:force_terminated``, as BFCL fails a run
its inference loop cut short. Success when every turn passes; the reason names the
first failure (turn index from 0). An answer that is not a ``bfcl-multi-turn`` call
record, or a reference that is not parseable ground truth, makes the scorer raise
(``scorer-failed``): the suite and the scorer do not belong together.
"""

from __future__ import annotations

import json
from typing import Any

from xaytune.evaluation.scorers._bfcl_calls import decoded_arguments
from xaytune.evaluation.scorers._score import Score
from xaytune.plugins import scorer
from xaytune.suites.bfcl.environment import BfclMultiTurnEnvironment, parse_call

__all__ = ["bfcl_multi_turn", "bfcl_multi_turn_accepts"]


def _record(answer: str) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
    record = json.loads(answer)
    environment = record.get("environment") if isinstance(record, dict) else None
    if not isinstance(environment, dict) or environment.get("name") != "bfcl-multi-turn":
        raise ValueError("the answer is not a bfcl-multi-turn call record")
    return environment.get("params") or {}, record.get("turns") or []


def _missing(expected: list[str], found: list[str]) -> list[str]:
    """The items of ``expected`` not in ``found``, each found item used once."""
    left = list(found)
    missing = []
    for item in expected:
        try:
            left.remove(item)
        except ValueError:
            missing.append(item)
    return missing


@scorer(name="bfcl-multi-turn")
def bfcl_multi_turn(answer: str, reference: str) -> Score:
    """BFCL's multi-turn rule (module docstring)."""
    params, turns = _record(answer)
    truth = json.loads(reference)["turns"]
    calls = [[parse_call(source) for source in turn] for turn in truth]
    if len(turns) != len(truth):
        return Score(
            success=False,
            reason=f"multi_turn:force_terminated: the answer has {len(turns)} turns, the "
            f"ground truth {len(truth)}",
        )
    mine, expected = BfclMultiTurnEnvironment(**params), BfclMultiTurnEnvironment(**params)
    results_so_far: list[str] = []
    for index, truth_calls in enumerate(calls):
        made = turns[index] if index < len(turns) else []
        decoded = [(c["name"], args) for c in made if (args := decoded_arguments(c)) is not None]
        results_so_far += [mine.execute(name, (), args) for name, args in decoded]
        truth_results = [
            expected.execute(name, args, kwargs) for name, args, kwargs in calls[index]
        ]
        if not truth_calls:
            continue
        if not decoded:
            return Score(
                success=False,
                reason=f"multi_turn:empty_turn_model_response: turn {index}: no call was made",
            )
        differences = mine.differences(expected)
        if differences:
            cls, attributes = next(iter(differences.items()))
            return Score(
                success=False,
                reason=f"multi_turn:instance_state_mismatch: turn {index}: {cls} "
                f"{', '.join(attributes)} differ from the ground truth's",
            )
        missing = _missing(truth_results, results_so_far)
        if missing:
            return Score(
                success=False,
                reason=f"multi_turn:execution_response_mismatch: turn {index}: {len(missing)} of "
                f"{len(truth_results)} ground-truth results are not among the model's",
            )
    return Score(success=True)


def bfcl_multi_turn_accepts(task: Any) -> str | None:
    """None when ``task`` is a task this scorer checks; else why not (one line)."""
    environment = getattr(task, "environment", None)
    if environment is None or environment.name != "bfcl-multi-turn":
        return "not a BFCL multi-turn task (environment bfcl-multi-turn)"
    return None


bfcl_multi_turn.__xaytune_accepts__ = bfcl_multi_turn_accepts  # type: ignore[attr-defined]
# Its rule runs BFCL's API classes: their code is part of this scorer's identity.
bfcl_multi_turn.__xaytune_sources__ = (  # type: ignore[attr-defined]
    "xaytune.evaluation.scorers._bfcl_calls",
    "xaytune.suites.bfcl.environment",
    *BfclMultiTurnEnvironment.__xaytune_sources__,
)
bfcl_multi_turn.__xaytune_version__ = "2"  # type: ignore[attr-defined]
