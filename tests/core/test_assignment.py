"""Seeded samples and task assignments: golden, deterministic, tamper-evident."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.core.domain.benchmark import (
    ASSIGNMENT_ALGORITHM,
    BenchmarkSuite,
    SeededSample,
    SuiteSource,
    Task,
    TaskAssignment,
    record_assignment,
)
from xaytune.core.errors import SuiteError
from xaytune.suites import build_suite

GOLDEN_IDS = [f"g{n:02d}" for n in range(1, 9)]

# --- an independent implementation -------------------------------------------------------
# Written from DESIGN.md ("rank task ids by sha256(seed, suite digest, id)") and the
# module docstring, without calling the code under test. For these facts (ASCII keys
# and strings, small ints) sorted compact json.dumps is RFC 8785's canonical form.


def _jcs(facts: dict[str, Any]) -> bytes:
    return json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def independent_selection(seed: int, suite_digest: str, task_ids: list[str], count: int | None):
    def rank(task_id: str) -> str:
        return hashlib.sha256(f"{seed}\x1f{suite_digest}\x1f{task_id}".encode()).hexdigest()

    ranked = sorted(task_ids, key=rank)
    return ranked if count is None else ranked[:count]


def independent_digest(suite: BenchmarkSuite, count: int | None, seed: int) -> str:
    facts = {
        "suite_name": suite.name,
        "suite_digest": suite.digest,
        "sampling": {"count": count},
        "algorithm": "sha256-rank/v1",
        "seed": seed,
        "task_ids": independent_selection(seed, suite.digest, list(suite.task_ids), count),
    }
    return "sha256:" + hashlib.sha256(_jcs(facts)).hexdigest()


# --- the golden suite ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def golden_suite(tmp_path_factory: pytest.TempPathFactory) -> BenchmarkSuite:
    out = tmp_path_factory.mktemp("golden") / "golden"
    build_suite(
        out,
        name="golden",
        version="1",
        tasks=[
            {"id": task_id, "input": {"question": f"What is {n} + {n}?"}}
            for n, task_id in enumerate(GOLDEN_IDS, start=1)
        ],
        references=[
            {"id": task_id, "answer": str(2 * n)} for n, task_id in enumerate(GOLDEN_IDS, start=1)
        ],
    )
    return SuiteSource(out).suite


def test_golden_suite_digest_is_the_digest_of_its_files(golden_suite: BenchmarkSuite):
    # Recomputed from the bytes the builder must write (one canonical record a line),
    # then pinned: e9e3d775... was computed once this way and written here.
    tasks = b"".join(
        b'{"id":"%s","input":{"question":"What is %d + %d?"}}\n' % (task_id.encode(), n, n)
        for n, task_id in enumerate(GOLDEN_IDS, start=1)
    )
    references = b"".join(
        b'{"answer":"%d","id":"%s"}\n' % (2 * n, task_id.encode())
        for n, task_id in enumerate(GOLDEN_IDS, start=1)
    )
    files = {
        "references.jsonl": "sha256:" + hashlib.sha256(references).hexdigest(),
        "tasks.jsonl": "sha256:" + hashlib.sha256(tasks).hexdigest(),
    }
    facts = {
        "schema": "xaytune.suite/v1",
        "name": "golden",
        "version": "1",
        "task_count": 8,
        "files": files,
    }
    expected = "sha256:" + hashlib.sha256(_jcs(facts)).hexdigest()
    assert golden_suite.digest == expected
    assert golden_suite.digest == (
        "sha256:e9e3d7752b28dbc9139f5197e1eb413cf6172a16ee6714bd27d7a26527466c19"
    )


def test_golden_assignment_for_one_suite_sampling_and_seed(golden_suite: BenchmarkSuite):
    assignment = record_assignment(golden_suite, SeededSample(count=3), seed=101)
    # 1. The independent implementation agrees ...
    assert list(assignment.task_ids) == independent_selection(
        101, golden_suite.digest, GOLDEN_IDS, 3
    )
    assert assignment.digest == independent_digest(golden_suite, 3, 101)
    # 2. ... and pins the literals, computed once by it and written here, so a change
    # of algorithm or of canonical form anywhere shows up as a failing golden.
    assert assignment.task_ids == ("g08", "g01", "g06")
    assert assignment.digest == (
        "sha256:95045205299e81d70cc6aca43b60359cb45b3b8d86d678516fe918715fa05378"
    )
    assert assignment.suite_digest == golden_suite.digest
    assert assignment.suite_name == "golden"
    assert assignment.seed == 101
    assert assignment.sampling == SeededSample(count=3)


def test_golden_assignment_of_every_task(golden_suite: BenchmarkSuite):
    assignment = record_assignment(golden_suite, SeededSample(), seed=101)
    assert assignment.task_ids == ("g08", "g01", "g06", "g03", "g04", "g05", "g07", "g02")
    assert assignment.digest == independent_digest(golden_suite, None, 101)
    assert assignment.digest == (
        "sha256:29c953ab0efd5091dae48e9bcbb9d4f501af5a08e4ecf27a40b543e911c81485"
    )


def test_the_algorithm_id_is_recorded(golden_suite: BenchmarkSuite):
    assignment = record_assignment(golden_suite, SeededSample(count=2), seed=7)
    assert assignment.algorithm == ASSIGNMENT_ALGORITHM == "sha256-rank/v1"
    assert assignment.model_dump(mode="json")["algorithm"] == "sha256-rank/v1"


def test_positions_are_the_order_of_the_assignment(golden_suite: BenchmarkSuite):
    assignment = record_assignment(golden_suite, SeededSample(count=3), seed=101)
    assert [assignment.position(t) for t in assignment.task_ids] == [0, 1, 2]
    assert assignment.position("g02") is None


# --- determinism (properties) -------------------------------------------------------------

_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,11}", fullmatch=True)
_suites = st.builds(
    lambda ids, digest: BenchmarkSuite(
        name="prop",
        version="1",
        digest="sha256:" + digest,
        tasks=tuple(Task(id=task_id, input={}) for task_id in sorted(ids)),
    ),
    st.sets(_ids, min_size=1, max_size=12),
    st.text("0123456789abcdef", min_size=64, max_size=64),
)
_seeds = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)


@settings(max_examples=40, deadline=None)
@given(suite=_suites, seed=_seeds, data=st.data())
def test_same_inputs_give_the_same_assignment(suite: BenchmarkSuite, seed: int, data: Any):
    count = data.draw(st.none() | st.integers(min_value=1, max_value=len(suite.tasks)))
    sampling = SeededSample(count=count)
    first = record_assignment(suite, sampling, seed=seed)
    again = record_assignment(suite, SeededSample(count=count), seed=seed)
    assert again == first and again.digest == first.digest
    assert list(first.task_ids) == independent_selection(
        seed, suite.digest, list(suite.task_ids), count
    )
    assert first.digest == independent_digest(suite, count, seed)
    assert len(set(first.task_ids)) == len(first.task_ids)
    assert set(first.task_ids) <= set(suite.task_ids)
    assert len(first.task_ids) == (len(suite.tasks) if count is None else count)
    # The assignment survives its JSON spelling unchanged.
    assert TaskAssignment.model_validate_json(first.model_dump_json()) == first


@settings(max_examples=20, deadline=None)
@given(suite=_suites, seed=_seeds)
def test_count_none_assigns_every_task(suite: BenchmarkSuite, seed: int):
    for sampling in (SeededSample(), SeededSample(count=None)):
        assignment = record_assignment(suite, sampling, seed=seed)
        assert sorted(assignment.task_ids) == sorted(suite.task_ids)


def test_the_order_of_tasks_in_the_suite_does_not_matter():
    def suite(ids: list[str]) -> BenchmarkSuite:
        tasks = tuple(Task(id=task_id, input={}) for task_id in ids)
        return BenchmarkSuite(name="s", version="1", digest="sha256:" + "0" * 64, tasks=tasks)

    sampling = SeededSample(count=3)
    forward = record_assignment(suite(["a", "b", "c", "d", "e"]), sampling, seed=5)
    backward = record_assignment(suite(["e", "d", "c", "b", "a"]), sampling, seed=5)
    assert forward == backward


def test_seed_and_suite_digest_both_move_the_selection(golden_suite: BenchmarkSuite):
    sampling = SeededSample(count=4)
    by_seed = {record_assignment(golden_suite, sampling, seed=s).task_ids for s in range(5)}
    assert len(by_seed) > 1
    other = golden_suite.model_copy(update={"digest": "sha256:" + "0" * 64})
    assert (
        record_assignment(other, sampling, seed=101).task_ids
        != record_assignment(golden_suite, sampling, seed=101).task_ids
    )


# --- refusals ----------------------------------------------------------------------------


def test_a_sample_larger_than_the_suite_is_refused(golden_suite: BenchmarkSuite):
    record_assignment(golden_suite, SeededSample(count=8), seed=1)  # exactly all: fine
    with pytest.raises(SuiteError) as caught:
        record_assignment(golden_suite, SeededSample(count=9), seed=1)
    assert caught.value.reason == "sample-too-large"


@pytest.mark.parametrize("seed", [True, False, 1.0, 101.5, "101", None, 2**53, -(2**53), 2**64])
def test_a_bad_seed_is_refused(golden_suite: BenchmarkSuite, seed: Any):
    with pytest.raises(SuiteError) as caught:
        record_assignment(golden_suite, SeededSample(count=1), seed=seed)
    assert caught.value.reason == "bad-seed"


@pytest.mark.parametrize("seed", [0, -1, 2**53 - 1, -(2**53) + 1])
def test_seeds_at_the_edge_are_accepted(golden_suite: BenchmarkSuite, seed: int):
    assert record_assignment(golden_suite, SeededSample(count=1), seed=seed).seed == seed


@pytest.mark.parametrize("count", [0, -1])
def test_a_sample_of_no_tasks_is_refused(count: int):
    with pytest.raises(ValueError):  # pydantic ValidationError at the boundary
        SeededSample(count=count)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d: {**d, "digest": d["digest"][:-1] + "0"}, id="digest"),
        pytest.param(lambda d: {**d, "task_ids": d["task_ids"][::-1]}, id="order"),
        pytest.param(lambda d: {**d, "task_ids": [*d["task_ids"][:2], "g02"]}, id="task"),
        pytest.param(lambda d: {**d, "seed": d["seed"] + 1}, id="seed"),
        pytest.param(lambda d: {**d, "sampling": {"count": None}}, id="sampling"),
        pytest.param(lambda d: {**d, "algorithm": "sha256-rank/v2"}, id="algorithm"),
        pytest.param(lambda d: {**d, "suite_digest": "sha256:" + "1" * 64}, id="suite"),
    ],
)
def test_an_edited_assignment_is_refused(golden_suite: BenchmarkSuite, edit: Any):
    assignment = record_assignment(golden_suite, SeededSample(count=3), seed=101)
    facts = assignment.model_dump(mode="json")
    if facts["digest"].endswith("0"):
        facts["digest"] = facts["digest"][:-1] + "1"  # keep "digest" a real edit
    edited = edit(facts)
    assert edited != assignment.model_dump(mode="json")
    with pytest.raises(SuiteError) as caught:
        TaskAssignment.model_validate(edited)
    assert caught.value.reason == "digest-mismatch"
    with pytest.raises(SuiteError) as caught:
        TaskAssignment.model_validate_json(json.dumps(edited))
    assert caught.value.reason == "digest-mismatch"


def test_an_assignment_read_back_from_disk_is_accepted(
    golden_suite: BenchmarkSuite, tmp_path: Path
):
    assignment = record_assignment(golden_suite, SeededSample(count=3), seed=101)
    path = tmp_path / "assignment.json"
    path.write_text(assignment.model_dump_json(indent=2))
    assert TaskAssignment.model_validate_json(path.read_text()) == assignment
