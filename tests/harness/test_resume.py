"""Interrupting a run and resuming it: nothing is overwritten, every attempt counts."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from journal_edits import forget_seal

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import EvidenceError
from xaytune.harness import HarnessRunner, Toolbox
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.models.protocol import ModelIdentity, ModelReply, ModelRequest
from xaytune.models.simulated import SimulatedModel

TOOLS = frozenset({"calculator"})
DONE_BEFORE = 5  # tasks that finish before the interruption
CONCURRENCY = 8  # so some tasks never start before the interruption


def question_of(request: ModelRequest) -> str:
    return next(m.content or "" for m in request.messages if m.role == "user")


class CountingModel:
    """Counts the calls made per task question."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}

    @property
    def identity(self) -> ModelIdentity:
        return self.inner.identity

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    async def complete(self, request: ModelRequest) -> ModelReply:
        question = question_of(request)
        self.calls[question] = self.calls.get(question, 0) + 1
        return await self.inner.complete(request)


class TrippingModel(CountingModel):
    """Serves calls until the (after_tasks + 1)-th task's second call; from then on
    every call sets ``tripped`` and blocks until it is cancelled."""

    def __init__(self, inner, *, after_tasks: int) -> None:
        super().__init__(inner)
        self.after_tasks = after_tasks
        self.served = 0
        self.tripped = asyncio.Event()

    async def complete(self, request: ModelRequest) -> ModelReply:
        question = question_of(request)
        self.calls[question] = self.calls.get(question, 0) + 1
        if self.tripped.is_set() or (
            len(self.calls) > self.after_tasks and self.calls[question] >= 2
        ):
            self.tripped.set()
            await asyncio.Event().wait()  # until the run is cancelled
        self.served += 1
        return await self.inner.complete(request)


def parts_of(run, position: int, number: int = 1) -> AttemptParts:
    path = run.attempt_file(position, number)
    return AttemptParts.of(path.read_bytes(), str(path))


def seal_of(run, position: int, number: int = 1) -> dict:
    seal = parts_of(run, position, number).seal
    assert seal is not None, f"attempt {position:06d}/{number:03d} is open"
    return json.loads(seal)


def numbers(run, position: int) -> list[int]:
    return [a.number for a in run.store.attempts(position)]


def interrupt(run, model: TrippingModel) -> None:
    """run_many over the run's specs, cancelled from outside once the model trips."""

    async def main() -> None:
        job = asyncio.ensure_future(
            HarnessRunner().run_many(
                run.specs(),
                model=model,
                toolbox=Toolbox.default(),
                authorized_tools=TOOLS,
                concurrency=CONCURRENCY,
            )
        )
        await asyncio.wait_for(model.tripped.wait(), timeout=10)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(main())


@pytest.fixture
def empty_run(verified_run, tmp_path):
    """The verified run's suite, harness and seed, with an empty store."""
    return replace(verified_run, store=HarnessEvidenceStore(tmp_path / "resumed"), evidence=None)


def test_interrupted_run_resumes_without_overwriting(empty_run):
    run = empty_run
    tripping = TrippingModel(SimulatedModel(seed=101), after_tasks=DONE_BEFORE)
    interrupt(run, tripping)

    # Which tasks finished, were in flight or never started depends on scheduling
    # (seals are group-committed); classify them by what the store holds.
    done, in_flight, never_started = [], [], []
    for position in range(20):
        found = numbers(run, position)
        assert found in ([], [1])
        if not found:
            never_started.append(position)
        elif seal_of(run, position)["status"] == "complete":
            done.append(position)
        else:
            in_flight.append(position)
    assert len(done) >= DONE_BEFORE and in_flight and never_started
    assert len(in_flight) <= CONCURRENCY
    for position in in_flight:
        seal = seal_of(run, position)
        assert (seal["status"], seal["outcome"], seal["recovered"]) == ("partial", None, False)
        events = parts_of(run, position).events
        assert [json.loads(e)["type"] for e in events][-2:] == ["interrupted", "end"]
    # The task that tripped the model had spent one model call (and its tool call).
    spends = [seal_of(run, p)["spend"] for p in in_flight]
    assert {"model_calls": 1, "tool_calls": 1} in [
        {k: s[k] for k in ("model_calls", "tool_calls")} for s in spends
    ]
    partial_bytes = {p: run.attempt_file(p).read_bytes() for p in in_flight}

    counting = CountingModel(SimulatedModel(seed=101))
    runs = run.execute(counting, resume=True, concurrency=CONCURRENCY)

    # Only tasks without an attested attempt ran again.
    unattested = {run.question(p) for p in [*in_flight, *never_started]}
    assert set(counting.calls) == unattested
    assert [r.skipped for r in runs] == [p in done for p in range(20)]
    assert counting.total == sum(a.spend.model_calls for r in runs for a in r.attempts)
    for position in in_flight:
        assert numbers(run, position) == [1, 2]
        assert run.attempt_file(position).read_bytes() == partial_bytes[position]
        assert seal_of(run, position, 2)["status"] == "complete"
    for position in never_started:
        assert numbers(run, position) == [1]

    evidence = run.assemble()
    run.verify(evidence)
    for entry in evidence.entries:
        assert entry.status == "attested"
        if entry.position in in_flight:
            first, second = entry.attempts
            assert (first.attempt, first.status, second.attempt) == (1, "partial", 2)
            assert first.spend.model_dump() == seal_of(run, entry.position)["spend"]
            assert entry.attested is second
    # Every call that was answered is in the evidence's spend, the partial ones too.
    spent = sum(a.spend.model_calls for e in evidence.entries for a in e.attempts)
    assert spent == tripping.served + counting.total

    # Resuming a finished run runs nothing.
    again = CountingModel(SimulatedModel(seed=101))
    assert all(r.skipped for r in run.execute(again, resume=True))
    assert again.total == 0
    assert run.assemble() == evidence


def _kill_before_seal(run, position: int, *, torn: bytes = b"") -> dict:
    """Mimic SIGKILL before sealing: no seal line, no end event, ``torn`` left
    unterminated at the end of the attempt file, nothing committed; return the old seal."""
    path = run.attempt_file(position)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    assert parts.seal is not None and parts.tail == b""
    seal = json.loads(parts.seal)
    assert json.loads(parts.events[-1])["type"] == "end"
    path.write_bytes(replace(parts, events=parts.events[:-1], seal=None, tail=torn).join())
    forget_seal(path)
    return seal


def _unseal(run, position: int, *, committed: bool = False) -> None:
    """Mimic SIGKILL between the end event and the seal: the seal line is not there;
    with ``committed``, the kill came after the journal listed it."""
    parts = parts_of(run, position)
    assert parts.seal is not None
    run.attempt_file(position).write_bytes(replace(parts, seal=None).join())
    if not committed:
        forget_seal(run.attempt_file(position))


@pytest.mark.parametrize("torn", [b"", b'{"prev":"sha256:0f3a","seq":'])
def test_open_attempt_left_by_a_crash_is_recovered_partial(verified_run, torn):
    run, position = verified_run, 6
    old_seal = _kill_before_seal(run, position, torn=torn)
    killed = run.attempt_file(position).read_bytes()
    with pytest.raises(EvidenceError) as caught:
        run.verify()
    assert caught.value.reason == "open-attempt"

    counting = CountingModel(SimulatedModel(seed=101))
    runs = run.execute(counting, resume=True)
    assert set(counting.calls) == {run.question(position)}
    assert [r.skipped for r in runs] == [p != position for p in range(20)]

    recovered = seal_of(run, position)
    assert (recovered["status"], recovered["outcome"]) == ("partial", None)
    assert recovered["recovered"] is True
    # The spend is what its whole events record: all of it, as the lost seal had it,
    # but its wall time, which only the lost seal knew: the recorded calls' time is
    # what is known to have elapsed (a lower bound).
    spend, lost = dict(recovered["spend"]), dict(old_seal["spend"])
    wall_time = spend.pop("wall_time_us")
    assert wall_time == spend["model_time_us"] + spend["tool_time_us"]
    assert wall_time <= lost.pop("wall_time_us")
    assert spend == lost
    assert recovered["trajectory"]["events"] == old_seal["trajectory"]["events"] - 1
    # Nothing was rewritten: the fragment is terminated and left in place, outside
    # the sealed bytes, and the seal is appended after it.
    parts = parts_of(run, position)
    terminator = b"\n" if torn else b""
    assert parts.join() == killed + terminator + parts.seal
    data = b"".join(parts.events)
    assert data.endswith(torn + terminator)
    assert recovered["trajectory"]["bytes"] == len(data) - len(torn + terminator)
    assert numbers(run, position) == [1, 2]
    assert seal_of(run, position, 2)["status"] == "complete"

    evidence = run.assemble()
    run.verify(evidence)
    entry = evidence.entries[position]
    assert entry.status == "attested"
    assert [(a.attempt, a.status, a.recovered) for a in entry.attempts] == [
        (1, "partial", True),
        (2, "complete", False),
    ]


def test_torn_tail_is_tolerated_only_for_recovered_attempts(verified_run):
    run, position = verified_run, 6
    fragment = b'{"prev":"sha256:0f'
    _kill_before_seal(run, position, torn=fragment)
    run.execute(CountingModel(SimulatedModel(seed=101)), resume=True)
    evidence = run.assemble()
    path = run.attempt_file(position)
    # Claiming the recovered seal was a normal one does not tolerate the fragment.
    raw = path.read_bytes()
    parts = AttemptParts.of(raw, str(path))
    assert parts.events[-1] == fragment + b"\n"
    claimed = parts.seal.replace(b'"recovered":true', b'"recovered":false')
    assert claimed != parts.seal
    path.write_bytes(replace(parts, seal=claimed).join())
    with pytest.raises(EvidenceError) as caught:
        run.verify(evidence)
    # The fragment's line is then read as an event of the chain, and does not follow.
    assert caught.value.reason == "chain-broken"
    assert str(path) in str(caught.value)
    path.write_bytes(raw)
    run.verify(evidence)
    # A fragment added to a normally sealed attempt is refused: before its seal it is
    # a line of the chain that does not follow; after its seal, a torn tail.
    other_path = run.attempt_file(position + 1)
    other_raw = other_path.read_bytes()
    other = AttemptParts.of(other_raw, str(other_path))
    assert json.loads(other.seal)["recovered"] is False
    torn = replace(other, events=(*other.events, fragment + b"\n"))
    other_path.write_bytes(torn.join())
    with pytest.raises(EvidenceError) as caught:
        run.verify(evidence)
    assert caught.value.reason == "chain-broken"
    other_path.write_bytes(other_raw + fragment)
    with pytest.raises(EvidenceError) as caught:
        run.verify(evidence)
    assert caught.value.reason == "trajectory-torn"
    assert str(other_path) in str(caught.value)


def test_recovered_seal_cannot_claim_a_complete_outcome(verified_run):
    run, position = verified_run, 6
    _kill_before_seal(run, position)
    run.execute(CountingModel(SimulatedModel(seed=101)), resume=True)
    evidence = run.assemble()
    parts = parts_of(run, position)
    seal = json.loads(parts.seal)
    assert seal["recovered"] is True
    seal.update(status="complete", outcome={"terminal": "answer", "answer": "1", "detail": None})
    claimed = replace(parts, seal=canonical_bytes(seal) + b"\n")
    run.attempt_file(position).write_bytes(claimed.join())
    with pytest.raises(EvidenceError) as caught:
        run.verify(evidence)
    assert caught.value.reason == "false-complete"


def test_attempt_that_ended_but_was_never_sealed_is_recovered_partial_and_rerun(verified_run):
    """A crash between the end event and the seal: the outcome was never attested.

    Resume seals it partial and recovered, with the spend its end event recorded,
    and runs the task again as attempt 002; the evidence lists both and verifies.
    """
    run, position = verified_run, 6
    _unseal(run, position)
    counting = CountingModel(SimulatedModel(seed=101))
    run.execute(counting, resume=True)
    seal = seal_of(run, position)
    assert (seal["status"], seal["outcome"], seal["recovered"]) == ("partial", None, True)
    assert seal["spend"]["model_calls"] >= 1
    assert numbers(run, position) == [1, 2]
    evidence = run.assemble()
    entry = evidence.entries[position]
    assert [a.status for a in entry.attempts] == ["partial", "complete"]
    assert entry.attempts[0].recovered and entry.attempts[0].spend.model_calls >= 1


@pytest.mark.parametrize("recorded", ["nothing", "half-written"])
def test_empty_claim_left_by_a_crash_is_removed_on_resume(verified_run, recorded):
    run, position = verified_run, 6
    parts = parts_of(run, position)
    # Claimed, then killed before the spec and record lines were whole: nothing recorded.
    left = b"" if recorded == "nothing" else parts.spec + parts.record[: len(parts.record) // 2]
    run.attempt_file(position).write_bytes(left)
    forget_seal(run.attempt_file(position))
    counting = CountingModel(SimulatedModel(seed=101))
    run.execute(counting, resume=True)
    assert set(counting.calls) == {run.question(position)}
    assert numbers(run, position) == [1]
    evidence = run.assemble()
    run.verify(evidence)
    assert [a.attempt for a in evidence.entries[position].attempts] == [1]
