"""seal_problem, the one check of a parsed seal's form, against pydantic's own.

Verification compares a parsed seal value by value; assembly types it with
``AttemptSeal``. Both refuse what ``seal_problem`` names, so it must accept exactly
the seals strict validation accepts and gives back unchanged (no key defaulted,
none added), with counts canonical JSON writes exactly.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.harness.evidence._seal import seal_facts, seal_problem
from xaytune.harness.evidence.store import AttemptSeal, SpendRecord

SPEND = {name: i for i, name in enumerate(SpendRecord.model_fields)}
VALID = seal_facts(
    number=1,
    status="complete",
    outcome={"terminal": "answer", "answer": "42", "detail": None},
    spend=SPEND,
    events=9,
    bytes=1200,
    head="sha256:" + "0" * 64,
    record_digest="sha256:" + "1" * 64,
    recovered=False,
)

# Values a forger might put anywhere: other JSON types, near-misses, edge counts.
ODD = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        -1,
        2**53 - 1,
        2**53,
        1.0,
        0.5,
        "",
        "1",
        "complete",
        "partial",
        "answer",
        "gave-up",
        "xaytune.attempt-seal/v1",
        [],
        [1],
        {},
        {"a": 1},
    ]
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            paths += _paths(item, (*prefix, key))
    return paths


PATHS = _paths(VALID)


@st.composite
def edited_seals(draw: st.DrawFn) -> dict:
    seal = copy.deepcopy(VALID)
    if draw(st.booleans()):
        seal.update(status="partial", outcome=None)
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(PATHS))
        *parents, last = path
        holder = seal
        for key in parents:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict):
            continue
        action = draw(st.sampled_from(["set", "drop", "add"]))
        if action == "set":
            holder[last] = draw(ODD)
        elif action == "drop":
            holder.pop(last, None)
        else:
            holder["extra"] = draw(ODD)
    return seal


def pydantic_accepts(seal: dict) -> bool:
    try:
        typed = AttemptSeal.model_validate(seal, strict=True)
    except ValueError:
        return False
    counts = [typed.attempt, typed.trajectory.events, typed.trajectory.bytes]
    # cached_tokens and reasoning_tokens may be null (not reported): not a count then.
    counts += [v for v in typed.spend.model_dump().values() if v is not None]
    return (
        typed.model_dump(mode="json", by_alias=True) == seal
        and all(0 <= count < 2**53 for count in counts)
        and typed.trajectory.writer == VALID["trajectory"]["writer"]
    )


def test_the_writers_seal_has_no_problem():
    assert seal_problem(VALID) is None
    assert pydantic_accepts(VALID)


@settings(max_examples=1500, deadline=None)
@given(edited_seals())
def test_seal_problem_accepts_exactly_what_strict_validation_gives_back(seal):
    assert (seal_problem(seal) is None) == pydantic_accepts(seal), seal
