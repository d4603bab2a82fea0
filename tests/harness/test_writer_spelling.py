"""The writer spells an attempt's record, end event and seal without an encoder.

``AttemptSession`` fills the replicate's record template, and spells the outcome and
spend once for the end event and the seal (``_spelled``, ``end_event_line``,
``seal_line_of``). Each fast spelling must be the bytes the general path writes: the
record ``record_bytes(attribution_of(...))``, the end event the trajectory encoder's
(``_encode``), the seal ``seal_line`` (``canonical_bytes``, itself held to ``rfc8785``
by tests/core/test_canonical.py); here hypothesis draws the values and ``rfc8785``
is the independent referee for the canonical parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import rfc8785
from _fixtures_run import Bench, make_source
from hypothesis import given, settings
from hypothesis import strategies as st

from xaytune.core.canonical import MAX_SAFE_INTEGER, canonical_bytes, sha256_digest
from xaytune.core.errors import FingerprintError
from xaytune.harness import Harness
from xaytune.harness.evidence import attempt as attempt_module
from xaytune.harness.evidence._seal import seal_line, seal_line_of
from xaytune.harness.evidence.attempt import AttemptSession, _spelled
from xaytune.harness.evidence.attempt_record import (
    attribution_of,
    record_bytes,
    record_line,
    spec_bytes,
)
from xaytune.harness.evidence.store import Outcome, Spend
from xaytune.harness.evidence.trajectory import _encode, end_event_line

_FAST = settings(max_examples=150, deadline=None)

# Text as models write it: any code point, surrogates included (no canonical JSON:
# the spelling must decline them, not write them).
_text = st.text(max_size=30) | st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=12
)
_count = st.integers(min_value=0, max_value=MAX_SAFE_INTEGER) | st.integers(
    min_value=-(2**60), max_value=2**60
)
_digest = st.from_regex(r"sha256:[0-9a-f]{64}", fullmatch=True) | _text


@st.composite
def outcomes(draw: st.DrawFn) -> Outcome | None:
    if draw(st.booleans()):
        return None
    return Outcome(
        terminal=draw(st.sampled_from(["answer", "budget-stop", "cancelled"])),
        answer=draw(st.none() | _text),
        detail=draw(st.none() | _text),
    )


_safe = st.integers(min_value=0, max_value=MAX_SAFE_INTEGER)


@st.composite
def spends(draw: st.DrawFn) -> Spend:
    """Spends as the writer keeps them; sometimes one count no writer records (below
    zero, beyond 2^53), which the spelling must decline."""
    spend = Spend()
    for name in Spend.__dataclass_fields__:
        nullable = name in ("cached_tokens", "reasoning_tokens")
        setattr(spend, name, draw(st.none() | _safe if nullable else _safe))
    if draw(st.integers(0, 4)) == 0:
        name = draw(st.sampled_from(sorted(Spend.__dataclass_fields__)))
        setattr(spend, name, draw(_count))
    return spend


def _payload(status: str, outcome: Outcome | None, spend: Spend) -> dict:
    return {
        "status": status,
        "outcome": None if outcome is None else outcome.model_dump(mode="json"),
        "spend": spend.as_dict(),
    }


@_FAST
@given(outcome=outcomes(), spend=spends())
def test_spelled_outcome_and_spend_are_canonical_and_the_trajectorys_json(outcome, spend):
    payload = _payload("complete", outcome, spend)
    spelled = _spelled(outcome, spend)
    try:
        expected = (rfc8785.dumps(payload["outcome"]), rfc8785.dumps(payload["spend"]))
    except (rfc8785.CanonicalizationError, UnicodeError):
        expected = None  # a lone surrogate, or a count beyond I-JSON: no canonical bytes
    if spelled is None:
        # Declined only where no canonical spelling exists, or a negative count
        # (which no writer records: the general path writes it).
        counts = [v for v in payload["spend"].values() if v is not None]
        assert expected is None or min(counts) < 0
        return
    assert spelled == expected
    # The trajectory's encoder (sorted, compact stdlib JSON) writes the same bytes.
    assert spelled == (
        json.dumps(
            payload["outcome"], sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode(),
        json.dumps(payload["spend"], sort_keys=True, separators=(",", ":")).encode(),
    )


@_FAST
@given(
    outcome=outcomes(),
    spend=spends(),
    status=st.sampled_from(["complete", "partial"]),
    prev=st.from_regex(r"sha256:[0-9a-f]{64}", fullmatch=True),
    seq=st.integers(min_value=0, max_value=10**6),
)
def test_the_end_event_line_is_the_encoders(outcome, spend, status, prev, seq):
    spelled = _spelled(outcome, spend)
    if spelled is None:
        return
    line = end_event_line(
        prev, seq, status=json.dumps(status).encode(), outcome=spelled[0], spend=spelled[1]
    )
    assert line == _encode(prev, seq, "end", _payload(status, outcome, spend))


@_FAST
@given(
    outcome=outcomes(),
    spend=spends(),
    status=st.sampled_from(["complete", "partial"]) | _text,
    number=_count,
    events=_count,
    size=_count,
    head=_digest,
    record=_digest,
)
def test_seal_line_of_is_seal_line(outcome, spend, status, number, events, size, head, record):
    spelled = _spelled(outcome, spend)
    if spelled is None:
        return
    payload = _payload(status, outcome, spend)
    facts = dict(
        number=number, status=status, events=events, bytes=size, head=head, record_digest=record
    )
    try:
        slow = seal_line(
            outcome=payload["outcome"], spend=payload["spend"], recovered=False, **facts
        )
    except FingerprintError as error:  # no canonical bytes: the fast path writes none
        try:
            declined = seal_line_of(outcome=spelled[0], spend=spelled[1], **facts)
        except FingerprintError as fast_error:
            assert fast_error.reason == error.reason
        else:
            assert declined is None  # and the caller's seal_line refuses as above
        return
    fast = seal_line_of(outcome=spelled[0], spend=spelled[1], **facts)
    if fast is None:
        # Declined: only for a status no writer writes or a count beyond 2^53.
        assert status not in ("complete", "partial") or max(number, events, size) > MAX_SAFE_INTEGER
        return
    assert fast == slow
    assert fast == rfc8785.dumps(json.loads(slow)) + b"\n"


HARNESS = Harness(name="plain", system_prompt="Answer.", tools=())


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    root = tmp_path_factory.mktemp("spelling")
    return Bench(make_source(root / "suite", count=4), root / "store")


@pytest.mark.parametrize("intent", [None, "sha256:" + "1" * 64])
@pytest.mark.parametrize("number", [1, 7, 123])
def test_the_record_template_line_is_record_bytes(bench: Bench, number: int, intent) -> None:
    model = canonical_bytes({"model": "m", "revision": "r"})
    for position in range(4):
        spec = bench.spec(HARNESS, position)
        expected = record_bytes(number, attribution_of(spec, intent=intent), model)
        assert record_line(spec, number, model, intent) == expected
        assert record_line(spec, number, model, intent) == expected  # from the cache


def _attempt_bytes(spec, outcome, spend) -> tuple[bytes, bytes]:
    session = AttemptSession(spec, durable=False, journal=None)
    session.open({"model": "m"})
    session.event("start", {"task_id": spec.task_id})
    pending = session.prepare_seal(outcome=outcome, spend=spend)
    assert pending is not None
    pending.append(durable=False)
    data = Path(pending.path).read_bytes()
    Path(pending.path).unlink()  # the next attempt is number 1 again
    return data, pending.line


@pytest.mark.parametrize(
    ("outcome", "spend"),
    [
        (Outcome(terminal="answer", answer="42"), Spend(turns=1, model_calls=1, input_tokens=9)),
        (Outcome(terminal="budget-stop", answer=None, detail='caf\u00e9 "q" \\'), Spend()),
        (None, Spend(cached_tokens=None, reasoning_tokens=3, wall_time_us=10**9)),
        (Outcome(terminal="answer", answer="\U0001f600 \x01"), Spend(turns=2**53 - 1)),
    ],
)
def test_an_attempt_file_is_the_same_bytes_by_either_path(
    bench: Bench, monkeypatch: pytest.MonkeyPatch, outcome, spend
) -> None:
    spec = bench.spec(HARNESS, 2)
    fast = _attempt_bytes(spec, outcome, spend)
    assert _spelled(outcome, spend) is not None  # these took the fast path
    monkeypatch.setattr(attempt_module, "_spelled", lambda outcome, spend: None)
    monkeypatch.setattr(
        attempt_module,
        "record_line",
        lambda spec, number, model, intent: record_bytes(
            number, attribution_of(spec, intent=intent), model
        ),
    )
    assert _attempt_bytes(spec, outcome, spend) == fast


def test_the_spec_and_record_go_out_with_the_first_event_or_at_close(bench: Bench) -> None:
    spec = bench.spec(HARNESS, 3)
    model = {"model": "m"}
    head = spec_bytes(spec) + record_line(spec, 1, canonical_bytes(model), None)
    # Closed before any event (a failure before the loop started): an open attempt
    # with its spec and record, as before they were written with the first event.
    session = AttemptSession(spec, durable=False, journal=None)
    session.open(model)
    path = Path(session.path)
    assert path.read_bytes() == b""  # an empty claim until then
    session.close()
    assert path.read_bytes() == head
    path.unlink()
    # With an event: spec, record and event in the file once that event is written.
    session = AttemptSession(spec, durable=False, journal=None)
    session.open(model)
    session.event("start", {"task_id": spec.task_id})
    event = _encode(
        sha256_digest(head[len(spec_bytes(spec)) :]),
        0,
        "start",
        {"task_id": spec.task_id},
    )
    assert Path(session.path).read_bytes() == head + event
    session.close()
    assert Path(session.path).read_bytes() == head + event
    Path(session.path).unlink()
