"""The evidence's canonical bytes spelled from its records, without an encoder.

``HarnessRunEvidence.canonical_chunks`` spells each entry (``_records._entry_bytes``)
and a statement spells its subjects (``publish._subject_chunks``) by ``%`` into
layouts taken from ``canonical_bytes``. These tests hold both to the general path:
``canonical_bytes`` of the records' JSON dump (itself held to ``rfc8785`` by
tests/core/test_canonical_fastpath.py), for any values validation gives, and for
records made without validation (a value of another type, a subclass, an unsafe
integer), which the general path must decide (same bytes, or the same refusal).

Loading a statement validates its entries from their bytes, cut where one entry
ends and the next opens (``publish._evidence_cut``); held here to the predicate
parsed whole, and to falling back to that for any other layout.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.core.canonical import MAX_SAFE_INTEGER, canonical_bytes
from xaytune.core.errors import FingerprintError
from xaytune.harness.evidence import _records, publish
from xaytune.harness.evidence._records import AttemptEvidence, EvidenceEntry
from xaytune.harness.evidence.store import Outcome, SpendRecord, Terminal

_COUNT = st.integers(min_value=0, max_value=MAX_SAFE_INTEGER)
# Any text but lone surrogates (not I-JSON): quotes, backslashes, control characters,
# DEL, non-ASCII and astral characters are all in.
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
_DIGEST = st.binary(min_size=1, max_size=8).map(
    lambda data: "sha256:" + hashlib.sha256(data).hexdigest()
)
_OUTCOMES = st.builds(
    Outcome,
    terminal=st.sampled_from(Terminal.__args__),
    answer=st.none() | _TEXT,
    detail=st.none() | _TEXT,
)
_SPENDS = st.builds(
    SpendRecord,
    **{
        name: (st.none() | _COUNT) if name in ("cached_tokens", "reasoning_tokens") else _COUNT
        for name in SpendRecord.model_fields
    },
)
_ATTEMPTS = st.builds(
    AttemptEvidence,
    attempt=st.integers(min_value=1, max_value=999),
    status=st.sampled_from(["complete", "partial"]),
    outcome=st.none() | _OUTCOMES,
    spend=_SPENDS,
    record_digest=_DIGEST | _TEXT,
    seal_digest=_DIGEST,
    trajectory_head=_DIGEST,
    trajectory_events=_COUNT,
    recovered=st.booleans(),
)
_ENTRIES = st.builds(
    EvidenceEntry,
    task_id=_TEXT,
    position=_COUNT,
    spec_fingerprint=_DIGEST | _TEXT,
    status=st.sampled_from(["attested", "no-attested-result"]),
    attempts=st.lists(_ATTEMPTS, max_size=3).map(tuple),
)


def _general(entries: list[EvidenceEntry]) -> bytes:
    """The entries array as the general path writes it."""
    return canonical_bytes(_records._ENTRY_LIST.dump_python(entries, mode="json", by_alias=True))


def _spelled(entries: list[EvidenceEntry]) -> bytes:
    return b"".join(_records._entries_chunks(tuple(entries)))


@settings(max_examples=300, deadline=None)
@given(st.lists(_ENTRIES, max_size=4))
def test_entries_spelled_from_validated_records_are_their_canonical_bytes(entries):
    assert _spelled(entries) == _general(entries)


def test_entries_are_spelled_a_batch_at_a_time_across_batch_ends(monkeypatch):
    entry = EvidenceEntry(
        task_id="t",
        position=0,
        spec_fingerprint="s",
        status="no-attested-result",
        attempts=(),
    )
    entries = [entry.model_copy(update={"position": i}) for i in range(7)]
    monkeypatch.setattr(_records, "_BATCH", 3)  # batches of 3, 3 and 1
    assert _spelled(entries) == _general(entries)
    assert _spelled([]) == b"[]" == _general([])


_SPEND = SpendRecord(
    **{name: None if name == "cached_tokens" else 1 for name in SpendRecord.model_fields}
)


def _attempt(**changes: object) -> AttemptEvidence:
    facts = {
        "attempt": 1,
        "status": "complete",
        "outcome": Outcome(terminal="answer", answer="8", detail=None),
        "spend": _SPEND,
        "record_digest": "sha256:" + "a" * 64,
        "seal_digest": "sha256:" + "b" * 64,
        "trajectory_head": "sha256:" + "c" * 64,
        "trajectory_events": 2,
        "recovered": False,
    }
    return AttemptEvidence.model_construct(**{**facts, **changes})


class _Text(str):
    """A str subclass: validation never gives one; the general path writes str(value)."""

    def __str__(self) -> str:
        return "other"


class _Count(int):
    pass


# Records made without validation: each holds one value the spelling must not write
# itself (the general path decides, and may refuse).
_UNVALIDATED = {
    "bool-for-int": lambda: _attempt(attempt=True),
    "int-subclass": lambda: _attempt(trajectory_events=_Count(3)),
    "float-count": lambda: _attempt(trajectory_events=2.0),
    "unsafe-integer": lambda: _attempt(attempt=MAX_SAFE_INTEGER + 1),
    "str-subclass": lambda: _attempt(record_digest=_Text("sha256:x")),
    "int-for-bool": lambda: _attempt(recovered=0),
    "negative-spend": lambda: _attempt(
        spend=SpendRecord.model_construct(**{**_SPEND.__dict__, "turns": -1})
    ),
    "spend-of-floats": lambda: _attempt(
        spend=SpendRecord.model_construct(**{**_SPEND.__dict__, "turns": 1.5})
    ),
    "outcome-dict": lambda: _attempt(outcome={"terminal": "answer"}),
    "unknown-terminal": lambda: _attempt(
        outcome=Outcome.model_construct(terminal="other", answer=None, detail=None)
    ),
    "lone-surrogate": lambda: _attempt(status="\ud800"),
}


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("case", sorted(_UNVALIDATED))
def test_a_record_validation_would_not_give_is_left_to_the_general_path(case):
    attempt = _UNVALIDATED[case]()
    entry = EvidenceEntry.model_construct(
        task_id="t", position=0, spec_fingerprint="s", status="attested", attempts=(attempt,)
    )
    with pytest.raises((_records._Unspelled, FingerprintError)):
        _records._entry_bytes(entry)
    try:
        expected: bytes | str = _general([entry])
    except FingerprintError as error:
        expected = error.reason
    try:
        got: bytes | str = _spelled([entry])
    except FingerprintError as error:
        got = error.reason
    assert got == expected


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_an_entry_that_is_not_exactly_an_evidence_entry_is_left_to_the_general_path():
    class Entry(EvidenceEntry):
        pass

    entry = Entry(task_id="t", position=0, spec_fingerprint="s", status="attested", attempts=())
    with pytest.raises(_records._Unspelled):
        _records._entry_bytes(entry)
    wrong_tuple = EvidenceEntry.model_construct(
        task_id="t", position=0, spec_fingerprint="s", status="attested", attempts=[_attempt()]
    )
    with pytest.raises(_records._Unspelled):
        _records._entry_bytes(wrong_tuple)
    assert _spelled([entry, wrong_tuple]) == _general([entry, wrong_tuple])


@settings(max_examples=100, deadline=None)
@given(st.lists(_ENTRIES, max_size=4), _DIGEST | _TEXT)
def test_subjects_spelled_are_the_canonical_bytes_of_the_subject_list(entries, digest):
    evidence = publish.HarnessRunEvidence.model_construct(digest=digest, entries=tuple(entries))
    expected = canonical_bytes(list(publish._subjects(evidence)))
    assert b"".join(publish._subject_chunks(evidence)) == expected


# -- loading: the entries validated from their bytes, cut where entries meet --------


def _predicate_bytes(evidence: publish.HarnessRunEvidence) -> bytes:
    return b"".join(evidence.canonical_chunks())


def _whole(predicate: bytes) -> publish.HarnessRunEvidence:
    """The predicate parsed whole (the path the cut falls back to)."""
    return publish.HarnessRunEvidence.model_validate(json.loads(predicate))


@pytest.mark.parametrize("batch", [1, 3, 1024])
def test_a_predicate_cut_into_entries_gives_the_evidence_parsed_whole(
    verified_run, monkeypatch, batch
):
    monkeypatch.setattr(publish, "_ENTRY_BATCH", batch)
    evidence = verified_run.evidence
    predicate = _predicate_bytes(evidence)
    cut = publish._evidence_cut(predicate)
    assert cut == _whole(predicate) == evidence
    assert _predicate_bytes(cut) == predicate


def test_text_that_spells_an_entry_boundary_does_not_cut_the_entries(verified_run):
    # Inside a JSON string a quote is escaped, so the bytes where entries meet cannot
    # occur in an answer: the entry holding it is one entry still.
    evidence = verified_run.evidence
    entry = evidence.entries[0]
    attempt = entry.attempts[0]
    answer = '},{"attempts":[ ],"harness_fingerprint": ,"entries":['
    outcome = attempt.outcome.model_copy(update={"answer": answer})
    forged = evidence.model_copy(
        update={
            "entries": (
                entry.model_copy(
                    update={"attempts": (attempt.model_copy(update={"outcome": outcome}),)}
                ),
                *evidence.entries[1:],
            )
        }
    )
    predicate = _predicate_bytes(forged)
    cut = publish._evidence_cut(predicate)
    assert cut.entries[0].attempts[0].outcome.answer == answer
    assert cut == _whole(predicate)


def test_a_predicate_not_in_the_canonical_layout_is_parsed_whole(verified_run):
    evidence = verified_run.evidence
    data = json.loads(_predicate_bytes(evidence))
    for spelled in (
        json.dumps(data).encode(),  # spaces after separators
        json.dumps(dict(reversed(data.items())), separators=(",", ":")).encode(),
        json.dumps({**data, "entries": []}, separators=(",", ":")).encode(),
    ):
        with pytest.raises((ValueError, KeyError, TypeError)):
            publish._evidence_cut(spelled)
        assert publish._evidence_of(spelled) == _whole(spelled)


def test_an_entry_the_cut_leaves_invalid_falls_back_to_the_whole_parse(verified_run):
    # An extra member after an entry's attempts: the cut pieces still parse, the
    # records refuse it, and the whole parse refuses it the same way.
    predicate = _predicate_bytes(verified_run.evidence)
    edited = predicate.replace(b'{"attempts":[', b'{"x":1,"attempts":[', 1)
    with pytest.raises(ValueError):
        publish._evidence_cut(edited)
    with pytest.raises(ValueError):
        publish._evidence_of(edited)
