"""Verification's fast paths (issue 33, item 4), each held to the path it replaces.

- the seal journal's seals added in one ``dict.update`` a line, a seal committed
  twice found afterwards (``journal._parse``), against the loop a seal it replaced;
- a whole file read without ``fstat`` below 64 KiB (``_io.read_file``), against
  ``Path.read_bytes``;
- a store's task directories listed in one loop, one attempt alone unparsed
  (``HarnessEvidenceStore.attempt_listings``), against ``attempt_paths`` per task;
- the evidence's task list compared whole before looking for what differs
  (``verify._check_claims``), against the checks one task at a time it replaced;
- each task's attempt numbers compared for all tasks at once when each has one
  (``verify._one_attempt_each``), against the loop a task;
- the attempt file compared as bytes with its claim (``_claimed.check_claimed``):
  no edit of whole lines (dropped, doubled, swapped, joined, split) is taken.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from _fixtures_run import refused
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence import _io, journal
from xaytune.harness.evidence import verify as verify_module
from xaytune.harness.evidence._claimed import check_claimed
from xaytune.harness.evidence.store import (
    ATTEMPT_SUFFIX,
    HarnessEvidenceStore,
    attempt_paths,
)
from xaytune.harness.evidence.verify import _check_claims

# -- the journal ------------------------------------------------------------------------

_GENESIS = sha256_digest(b"xaytune.seal-journal/v1")


def _reference_parse(data: bytes, where: str) -> dict[tuple[int, int], str]:
    """The seals a journal lists, a seal at a time (the loop ``_parse`` had): the
    first seal committed twice is refused by its line, position and attempt."""
    committed: dict[tuple[int, int], str] = {}
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        for position, attempt, digest in json.loads(line)["seals"]:
            if (position, attempt) in committed:
                raise EvidenceError(
                    "journal-broken",
                    f"{where}: line {number}: position {position} attempt {attempt:03d} "
                    "is committed twice",
                )
            committed[(position, attempt)] = digest
    return committed


def _journal(batches: list[list[tuple[int, int, int]]]) -> bytes:
    """A journal of the writer's form (hash-chained canonical lines) of ``batches`` of
    (position, attempt, seed of the digest)."""
    head, lines = _GENESIS, []
    for batch in batches:
        seals = [[p, a, sha256_digest(b"%d" % seed)] for p, a, seed in batch]
        line = canonical_bytes({"prev": head, "seals": seals}) + b"\n"
        lines.append(line)
        head = sha256_digest(line)
    return b"".join(lines)


_SEAL = st.tuples(
    st.integers(0, 6), st.integers(1, 3), st.integers(0, 3)
)  # few values: seals committed twice (across lines and within one) are common


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(st.lists(_SEAL, min_size=1, max_size=6), max_size=5))
def test_the_journal_lists_what_the_loop_a_seal_listed_and_refuses_alike(batches):
    data = _journal(batches)
    try:
        expected = _reference_parse(data, "j")
    except EvidenceError as error:
        with pytest.raises(EvidenceError) as raised:
            journal._parse(data, "j")
        assert raised.value.reason == error.reason == "journal-broken"
        assert str(raised.value) == str(error)  # the same seal, line and attempt named
        return
    committed, _, whole = journal._parse(data, "j")
    assert committed == expected
    assert list(committed) == list(expected)  # (and in the same order)
    assert whole == len(data)


def test_a_seal_committed_twice_on_one_line_is_named():
    data = _journal([[(1, 1, 0)], [(2, 1, 0), (3, 1, 0), (2, 1, 1)]])
    with pytest.raises(EvidenceError) as raised:
        journal._parse(data, "j")
    assert raised.value.reason == "journal-broken"
    assert "line 2: position 2 attempt 001 is committed twice" in str(raised.value)


def test_a_seal_committed_again_on_a_later_line_is_named():
    data = _journal([[(1, 1, 0), (4, 2, 0)], [(5, 1, 0), (4, 2, 0), (1, 1, 1)]])
    with pytest.raises(EvidenceError) as raised:
        journal._parse(data, "j")
    assert raised.value.reason == "journal-broken"
    assert "line 2: position 4 attempt 002 is committed twice" in str(raised.value)


# -- reading a file ----------------------------------------------------------------------

_BOUNDARY = _io._FIRST_READ


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    size=st.sampled_from([0, 1, _BOUNDARY - 1, _BOUNDARY, _BOUNDARY + 1, 3 * _BOUNDARY + 7])
    | st.integers(0, 4 * _BOUNDARY),
    seed=st.integers(0, 255),
)
def test_a_file_is_read_whole_at_any_size(tmp_path, size, seed):
    path = tmp_path / "file"
    data = bytes((seed + i * 7) % 256 for i in range(size))
    path.write_bytes(data)
    assert _io.read_file(path) == data == path.read_bytes()


# -- listing a store -----------------------------------------------------------------------

# What a task directory may hold: attempt files (first alone, several, unsorted), none,
# no directory at all, a name that is not an attempt's.
_NAMES = st.lists(
    st.sampled_from(["001", "002", "003", "010", "1000", "01", "abc", "001.json", ".tmp"]).map(
        lambda stem: stem if "." in stem[1:] or stem.startswith(".") else stem + ATTEMPT_SUFFIX
    ),
    unique=True,
    max_size=3,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tasks=st.lists(st.none() | _NAMES, min_size=1, max_size=5), data=st.data())
def test_a_store_is_listed_as_attempt_paths_lists_each_task(tmp_path_factory, tasks, data):
    store = HarnessEvidenceStore(tmp_path_factory.mktemp("store"))
    for position, names in enumerate(tasks):
        if names is None:
            continue  # no directory: no attempts
        directory = store.root / "tasks" / f"{position:06d}"
        directory.mkdir(parents=True)
        for name in names:
            (directory / name).write_bytes(b"")
    count = data.draw(st.integers(1, len(tasks)))
    try:
        expected = [tuple(store.attempt_paths(position)) for position in range(count)]
    except EvidenceError as error:
        with pytest.raises(EvidenceError) as raised:
            store.attempt_listings(count)
        assert raised.value.reason == error.reason == "unexpected-file"
        assert str(raised.value) == str(error)
        return
    listings = store.attempt_listings(count)
    assert listings == expected
    for position, listing in enumerate(listings):
        directory = os.path.join(store.root, "tasks", f"{position:06d}")
        assert listing == tuple(attempt_paths(Path(directory)))


# -- the evidence's task list -------------------------------------------------------------


def _reference_claims(evidence, assignment) -> None:
    """The task-list checks of ``_check_claims``, a task at a time (as they were)."""
    listed = [entry.task_id for entry in evidence.entries]
    assigned = set(assignment.task_ids)
    for task_id in listed:
        if task_id not in assigned:
            raise EvidenceError("task-added", f"task {task_id} is in the evidence but not assigned")
    listed_set = set(listed)
    for task_id in assignment.task_ids:
        if task_id not in listed_set:
            raise EvidenceError(
                "task-omitted", f"task {task_id} is assigned but not in the evidence"
            )
    if listed != list(assignment.task_ids) or any(
        entry.position != i for i, entry in enumerate(evidence.entries)
    ):
        raise EvidenceError("task-list-mismatch", "evidence entries are not in assignment order")
    for entry in evidence.entries:
        if not entry.attempts:
            raise EvidenceError("no-attempts", f"task {entry.task_id}: the entry lists no attempts")


_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["drop", "double", "swap", "rename", "reposition", "empty", "add"]),
        st.integers(0, 19),
        st.integers(0, 19),
    ),
    max_size=3,
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=_EDITS)
def test_the_task_list_is_refused_as_the_checks_one_task_at_a_time_refused_it(verified_run, edits):
    evidence = verified_run.evidence
    entries = list(evidence.entries)
    for kind, i, j in edits:
        if not entries:
            break
        i, j = i % len(entries), j % len(entries)
        entry = entries[i]
        if kind == "drop":
            del entries[i]
        elif kind == "double":
            entries.insert(j, entry)
        elif kind == "swap":
            entries[i], entries[j] = entries[j], entries[i]
        elif kind == "rename":
            entries[i] = entry.model_copy(update={"task_id": f"unassigned-{j}"})
        elif kind == "reposition":
            entries[i] = entry.model_copy(update={"position": j})
        elif kind == "empty":
            entries[i] = entry.model_copy(update={"attempts": ()})
        else:
            entries.insert(j, entry.model_copy(update={"task_id": f"added-{i}"}))
    edited = evidence.model_copy(update={"entries": tuple(entries)})
    assignment = verified_run.assignment
    try:
        _reference_claims(edited, assignment)
    except EvidenceError as error:
        raised = refused(
            lambda: _check_claims(edited, verified_run.suite, verified_run.source), error.reason
        )
        assert str(raised) == str(error)
        return
    assert _check_claims(edited, verified_run.suite, verified_run.source) == assignment


_NUMBERS = st.lists(st.integers(1, 3), max_size=3)


@settings(max_examples=300, deadline=None)
@given(tasks=st.lists(st.tuples(_NUMBERS, _NUMBERS), max_size=6))
def test_one_attempt_each_is_what_the_loop_a_task_finds(tasks):
    # (claimed numbers, stored numbers) per task: the bulk check says "one attempt,
    # alike" exactly when the loop a task would (which then compares nothing).
    entries = [
        SimpleNamespace(attempts=tuple(SimpleNamespace(attempt=n) for n in claimed))
        for claimed, _ in tasks
    ]
    listings = [tuple((n, f"{n:03d}.jsonl") for n in stored) for _, stored in tasks]
    loop = all(
        len(stored) == len(entry.attempts) == 1 and stored[0][0] == entry.attempts[0].attempt
        for entry, stored in zip(entries, listings, strict=True)
    )
    assert verify_module._one_attempt_each(entries, listings) == (loop and bool(tasks))


# -- the attempt file against its claim -----------------------------------------------------


def _line_edits(lines: list[bytes]) -> list[list[bytes]]:
    """Every file made of the same lines but one whole-line edit."""
    edits = []
    for i in range(len(lines)):
        edits.append(lines[:i] + lines[i + 1 :])  # dropped
        edits.append(lines[: i + 1] + lines[i:])  # doubled
        if i + 1 < len(lines):
            swapped = list(lines)
            swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
            edits.append(swapped)
            edits.append([*lines[:i], lines[i][:-1] + lines[i + 1], *lines[i + 2 :]])  # joined
        cut = len(lines[i]) // 2
        edits.append([*lines[:i], lines[i][:cut] + b"\n", lines[i][cut:], *lines[i + 1 :]])  # split
    return edits


def test_no_whole_line_edit_of_an_attempt_file_is_taken_as_claimed(verified_run):
    position = 5
    entry = verified_run.evidence.entries[position]
    data = verified_run.attempt_file(position).read_bytes()
    lines = data.splitlines(keepends=True)
    record = lines[1]
    spec = lines[0][:-1]

    def check(candidate: bytes):
        return check_claimed(
            candidate,
            entry.attempts[0],
            record=record,
            spec_fingerprint=entry.spec_fingerprint,
            first_spec=None,
        )

    assert check(data) == spec
    for edited in _line_edits(lines):
        candidate = b"".join(edited)
        assert candidate == data or check(candidate) is None
    # A task's later attempt must carry its first attempt's spec line, byte for byte.
    assert (
        check_claimed(
            data,
            entry.attempts[0],
            record=record,
            spec_fingerprint=entry.spec_fingerprint,
            first_spec=spec[:-1] + b" ",
        )
        is None
    )
