"""Verification's fast path: an attempt file compared, as bytes, with its claim.

``verify_run_evidence`` takes a task as claimed when each attempt file is byte for
byte what its claimed attempt implies (``_claimed.check_claimed``), and rebuilds
any other task in full. These tests hold the fast path to that: it takes the file
the writer wrote for any facts, and no other file and no other claim, so every
refusal stays the full rebuild's.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.harness.evidence import AttemptEvidence
from xaytune.harness.evidence import _rebuild as rebuild_module
from xaytune.harness.evidence._claimed import check_claimed
from xaytune.harness.evidence._seal import seal_line
from xaytune.harness.evidence.rebuild_attempt import Expected
from xaytune.harness.evidence.store import Outcome, SpendRecord, Terminal
from xaytune.harness.evidence.trajectory import _encode

POSITION = 3
OTHER = "sha256:" + "ab" * 32


def _record_line(run, position: int, number: int = 1) -> bytes:
    """The record line the replicate's facts give, as verification builds it."""
    evidence = run.evidence
    entry = evidence.entries[position]
    expected = Expected(
        run.suite,
        run.assignment,
        evidence.harness_fingerprint,
        evidence.replicate,
        intent=evidence.intent,
    )
    expected.learn_model(evidence.model)
    assert expected.records is not None
    return expected.records.line(
        number, task_id=entry.task_id, position=position, spec_fingerprint=entry.spec_fingerprint
    )


def _check(run, data: bytes, claim: AttemptEvidence | None = None, position: int = POSITION):
    entry = run.evidence.entries[position]
    return check_claimed(
        data,
        entry.attempts[0] if claim is None else claim,
        record=_record_line(run, position),
        spec_fingerprint=entry.spec_fingerprint,
        first_spec=None,
    )


def test_an_untouched_run_is_verified_as_claimed(verified_run, monkeypatch):
    # Every task but the first (whose record teaches verification the model) is
    # taken as claimed; nothing is rebuilt in full but that one.
    rebuilt, taken = [], []
    full, fast = rebuild_module._rebuild_task, rebuild_module.check_claimed

    def counting_full(position, *args, **kwargs):
        rebuilt.append(position)
        return full(position, *args, **kwargs)

    def counting_fast(*args, **kwargs):
        taken.append(fast(*args, **kwargs) is not None)
        return taken[-1]

    monkeypatch.setattr(rebuild_module, "_rebuild_task", counting_full)
    monkeypatch.setattr(rebuild_module, "check_claimed", counting_fast)
    verified_run.verify()
    assert rebuilt == [0]
    assert taken == [True] * (len(verified_run.evidence.entries) - 1)


def test_a_run_verifies_alike_when_every_task_is_rebuilt_in_full(verified_run, monkeypatch):
    monkeypatch.setattr(rebuild_module, "check_claimed", lambda *args, **kwargs: None)
    verified_run.verify()


def test_the_fast_path_takes_the_written_file_and_no_other(verified_run):
    # Any byte changed, any byte added or cut: the full rebuild decides (and names it).
    data = verified_run.attempt_file(POSITION).read_bytes()
    spec_line = data[: data.index(b"\n")]
    assert _check(verified_run, data) == spec_line
    for at in range(len(data)):
        edited = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]
        assert _check(verified_run, edited) is None, f"byte {at} edited"
    for cut in range(len(data)):
        assert _check(verified_run, data[:cut]) is None, f"cut at {cut}"
    for extra in (b"\n", b" ", b"{}\n", data[-200:]):
        assert _check(verified_run, data + extra) is None
        assert _check(verified_run, extra + data) is None


def _spend_plus_one(attempt: AttemptEvidence) -> SpendRecord:
    return attempt.spend.model_copy(update={"turns": attempt.spend.turns + 1})


FORGED = {
    "status": lambda a: {"status": "partial"},
    "outcome answer": lambda a: {"outcome": a.outcome.model_copy(update={"answer": "-1"})},
    "outcome terminal": lambda a: {
        "outcome": a.outcome.model_copy(update={"terminal": "budget-stop"})
    },
    "no outcome": lambda a: {"outcome": None},
    "no outcome, partial": lambda a: {"outcome": None, "status": "partial"},
    "spend": lambda a: {"spend": _spend_plus_one(a)},
    "negative spend": lambda a: {"spend": a.spend.model_copy(update={"turns": -1})},
    "unreported count that must be reported": lambda a: {
        "spend": a.spend.model_copy(update={"turns": None})
    },
    "record digest": lambda a: {"record_digest": OTHER},
    "seal digest": lambda a: {"seal_digest": OTHER},
    "head": lambda a: {"trajectory_head": OTHER},
    "events": lambda a: {"trajectory_events": a.trajectory_events + 1},
    "recovered": lambda a: {"recovered": True},
    "attempt number": lambda a: {"attempt": 2},
}


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("forgery", sorted(FORGED))
def test_a_claim_that_is_not_the_file_is_left_to_the_full_rebuild(verified_run, forgery):
    data = verified_run.attempt_file(POSITION).read_bytes()
    claim = verified_run.evidence.entries[POSITION].attempts[0]
    forged = claim.model_copy(update=FORGED[forgery](claim))
    assert _check(verified_run, data, forged) is None


def test_an_attempt_sealed_partial_is_taken_as_claimed(partial_run, partial_position):
    # (A recovered one never is: see the "recovered" forgery above.)
    data = partial_run.attempt_file(partial_position).read_bytes()
    seal = json.loads(data.splitlines()[-1])
    assert (seal["status"], seal["outcome"], seal["recovered"]) == ("partial", None, False)
    assert _check(partial_run, data, position=partial_position) == data[: data.index(b"\n")]


# -- any facts: the writer's own lines ------------------------------------------------

_COUNT = st.integers(min_value=0, max_value=2**53 - 1)
_TEXT = st.none() | st.text(max_size=40)
_OUTCOMES = st.builds(
    Outcome, terminal=st.sampled_from(Terminal.__args__), answer=_TEXT, detail=_TEXT
)
_SPENDS = st.builds(
    SpendRecord,
    **{
        name: (st.none() | _COUNT) if name in ("cached_tokens", "reasoning_tokens") else _COUNT
        for name in SpendRecord.model_fields
    },
)
_PAYLOADS = st.dictionaries(
    st.text(max_size=8), st.integers() | st.text(max_size=20) | st.none(), max_size=3
)
_EVENTS = st.lists(
    st.tuples(st.sampled_from(["model_reply", "tool_call", "tool_result"]), _PAYLOADS),
    max_size=4,
)


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@settings(max_examples=150, deadline=None)
@given(
    outcome=st.none() | _OUTCOMES,
    spend=_SPENDS,
    events=_EVENTS,
    number=st.integers(min_value=1, max_value=999),
)
def test_the_fast_path_takes_what_the_writer_writes_for_any_facts(outcome, spend, events, number):
    # Built with the writer's own functions (the trajectory encoder, seal_line), as an
    # attempt writes them: the templates spell every value as the writer does.
    status = "partial" if outcome is None else "complete"
    spec = b'{"spec":"any"}'
    record = b'{"record":"any"}\n'
    head = _sha(record)
    lines = []
    end = {
        "status": status,
        "outcome": None if outcome is None else outcome.model_dump(mode="json"),
        "spend": spend.model_dump(mode="json"),
    }
    for seq, (kind, payload) in enumerate([*events, ("end", end)]):
        line = _encode(head, seq, kind, payload)
        lines.append(line)
        head = _sha(line)
    seal = seal_line(
        number=number,
        status=status,
        outcome=end["outcome"],
        spend=end["spend"],
        events=len(lines),
        bytes=sum(map(len, lines)),
        head=head,
        record_digest=_sha(record),
        recovered=False,
    )
    data = spec + b"\n" + record + b"".join(lines) + seal
    claim = AttemptEvidence(
        attempt=number,
        status=status,
        outcome=outcome,
        spend=spend,
        record_digest=_sha(record),
        seal_digest=_sha(seal),
        trajectory_head=head,
        trajectory_events=len(lines),
        recovered=False,
    )
    found = check_claimed(data, claim, record=record, spec_fingerprint=_sha(spec), first_spec=None)
    assert found == spec
    other_first = check_claimed(
        data, claim, record=record, spec_fingerprint=_sha(spec), first_spec=b"another"
    )
    assert other_first is None
