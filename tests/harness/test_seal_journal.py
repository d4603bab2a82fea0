"""The seal journal: a committed seal cannot be taken back, and no seal exists uncommitted.

Attack (issue 19, 1): delete the seal line of every attempt that failed, then resume,
so that those tasks run again. Each test keeps its recipe.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from _fixtures_run import refused
from journal_edits import forget_seal, recommit_seal
from test_resume import CountingModel, numbers, parts_of, seal_of

from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence.journal import JOURNAL_NAME, SealJournal, read_journal
from xaytune.models.simulated import SimulatedModel

POSITIONS = (3, 6, 11)


def _strip_seal(run, position: int) -> bytes:
    """The attacker's step: drop the seal line of the task's attempt; return it."""
    parts = parts_of(run, position)
    assert parts.seal is not None
    run.attempt_file(position).write_bytes(replace(parts, seal=None).join())
    return parts.seal


def _journal(run):
    return run.store.root / JOURNAL_NAME


def test_every_seal_of_a_run_is_committed_in_its_journal(verified_run):
    committed = read_journal(verified_run.store.root)
    assert len(committed) == 20
    for position in range(20):
        seal = parts_of(verified_run, position).seal
        assert committed[(position, 1)] == sha256_digest(seal)


def test_stripped_seals_are_refused_by_verify_naming_task_attempt_and_file(verified_run):
    run = verified_run
    for position in POSITIONS:
        _strip_seal(run, position)
    error = refused(run.verify, "seal-missing")
    first = run.attempt_file(POSITIONS[0])
    task = run.assignment.task_ids[POSITIONS[0]]
    assert str(first) in str(error) and f"task {task} attempt 001" in str(error)
    refused(run.assemble, "seal-missing")


def test_resume_after_stripped_seals_gives_back_the_committed_outcomes_and_runs_nothing(
    verified_run,
):
    run = verified_run
    before = {p: parts_of(run, p).seal for p in POSITIONS}
    for position in POSITIONS:
        _strip_seal(run, position)
    counting = CountingModel(SimulatedModel(seed=101))
    runs = run.execute(counting, resume=True)
    assert counting.total == 0 and all(r.skipped for r in runs)  # nothing re-rolled
    for position in POSITIONS:
        assert parts_of(run, position).seal == before[position]  # the very same seal
        assert numbers(run, position) == [1]
    run.verify(run.assemble())


def test_a_kill_between_journal_and_seal_is_completed_on_resume(verified_run):
    """A crash after the commit's journal line and before the seal's append: the
    outcome was committed, so resume appends exactly the listed seal (even the rest of
    a seal line cut short)."""
    run = verified_run
    seal = _strip_seal(run, 4)
    path = run.attempt_file(5)
    cut = _strip_seal(run, 5)
    path.write_bytes(path.read_bytes() + cut[:17])  # the append was cut short
    run.execute(CountingModel(SimulatedModel(seed=101)), resume=True)
    assert parts_of(run, 4).seal == seal and parts_of(run, 5).seal == cut
    assert seal_of(run, 4)["recovered"] is False
    run.verify(run.assemble())


def test_a_stripped_seal_whose_end_event_is_gone_too_is_refused_on_resume(verified_run):
    run, position = verified_run, 6
    parts = parts_of(run, position)
    assert json.loads(parts.events[-1])["type"] == "end"
    run.attempt_file(position).write_bytes(
        replace(parts, events=parts.events[:-1], seal=None).join()
    )
    with pytest.raises(EvidenceError) as caught:
        run.execute(CountingModel(SimulatedModel(seed=101)), resume=True)
    assert caught.value.reason == "seal-missing"
    assert str(run.attempt_file(position)) in str(caught.value)


def test_an_emptied_attempt_file_that_was_committed_is_refused_not_rerun(verified_run):
    run, position = verified_run, 7
    run.attempt_file(position).write_bytes(b"")
    with pytest.raises(EvidenceError) as caught:
        run.execute(CountingModel(SimulatedModel(seed=101)), resume=True)
    assert caught.value.reason == "seal-missing"
    assert run.attempt_file(position).exists()


def test_a_deleted_attempt_file_that_was_committed_is_refused(verified_run):
    run, position = verified_run, 8
    run.attempt_file(position).unlink()
    refused(run.verify, "attempt-missing")  # the evidence recorded it
    error = refused(run.assemble, "seal-missing")  # and so did the journal
    assert str(run.attempt_file(position)) in str(error)


def test_a_seal_the_journal_never_committed_is_refused(verified_run):
    run = verified_run
    forget_seal(run.attempt_file(9))  # sealed, yet never committed: cannot happen
    error = refused(run.verify, "seal-unjournaled")
    assert str(run.attempt_file(9)) in str(error)
    with pytest.raises(EvidenceError) as caught:
        run.execute(CountingModel(SimulatedModel(seed=101)), resume=True)
    assert caught.value.reason == "seal-unjournaled"


def test_a_deleted_journal_is_refused(verified_run):
    _journal(verified_run).unlink()
    refused(verified_run.verify, "seal-unjournaled")


@pytest.mark.parametrize(
    "edit",
    [
        lambda lines: lines[1:],  # a line dropped from the front: the chain breaks
        lambda lines: [lines[0].replace(b'"seals":[[', b'"seals":[[1'), *lines[1:]],
        lambda lines: [lines[0].replace(b"}", b" }", 1), *lines[1:]],  # not canonical
        lambda lines: [*lines, lines[-1]],  # a line twice
    ],
    ids=["dropped", "edited", "reformatted", "duplicated"],
)
def test_an_edited_journal_is_refused(verified_run, edit):
    journal = _journal(verified_run)
    recommit_seal(verified_run.attempt_file(2))  # as if committed in a later batch
    verified_run.verify()
    lines = journal.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 2  # the run's group commits (one or more), then the recommit
    journal.write_bytes(b"".join(edit(lines)))
    error = refused(verified_run.verify, "journal-broken")
    assert str(journal) in str(error)


def test_a_journal_line_cut_short_lists_nothing_and_a_writer_cuts_it_off(verified_run):
    journal = _journal(verified_run)
    whole = journal.read_bytes()
    committed = read_journal(verified_run.store.root)
    journal.write_bytes(whole + b'{"prev":"sha256:')  # a crash mid-append
    assert read_journal(verified_run.store.root) == committed
    verified_run.verify()  # the fragment committed nothing
    SealJournal(journal)  # opened for writing: the fragment goes
    assert journal.read_bytes() == whole


# -- found in review: crash windows and writers that must not brick a store -----------


def test_a_recovery_killed_between_its_commit_and_its_append_is_finished_on_resume(
    verified_run, monkeypatch
):
    from xaytune.harness.evidence import attempt as _attempt
    from xaytune.harness.evidence.store import StoredAttempt

    run, position = verified_run, 4
    path = run.attempt_file(position)
    parts = parts_of(run, position)
    forget_seal(path)  # a crash mid-attempt, before any commit: no end event, no seal
    path.write_bytes(replace(parts, events=parts.events[:-2], seal=None).join())

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("SIGKILL")

    real = _attempt.write_file
    monkeypatch.setattr(_attempt, "write_file", killed)  # after the journal's line
    with pytest.raises(KeyboardInterrupt):
        _attempt.recover_open_attempt(StoredAttempt(position, 1, path))
    monkeypatch.setattr(_attempt, "write_file", real)
    assert (position, 1) in read_journal(run.store.root)
    run.execute(CountingModel(SimulatedModel(seed=101)), resume=True)
    assert seal_of(run, position)["recovered"] is True
    run.verify(run.assemble())


def test_a_deleted_committed_attempt_is_refused_before_anything_runs(verified_run):
    run, position = verified_run, 8
    run.attempt_file(position).unlink()
    counting = CountingModel(SimulatedModel(seed=101))
    with pytest.raises(EvidenceError) as caught:
        run.execute(counting, resume=True)
    assert caught.value.reason == "seal-missing"
    assert str(run.attempt_file(position)) in str(caught.value)
    assert counting.total == 0


def test_tasks_run_one_by_one_on_one_store_keep_one_journal_chain(tmp_path, verified_run):
    import asyncio

    from xaytune.harness import HarnessRunner, Toolbox

    run = verified_run.copy_to(tmp_path / "fresh")
    for path in sorted(run.store.root.rglob("*"), reverse=True):
        if path.is_file():
            path.unlink()
    runner = HarnessRunner()
    model = SimulatedModel(seed=101, latency_s=0.01)

    async def concurrently():
        return await asyncio.gather(
            *(
                runner.run_task(spec, model=model, toolbox=Toolbox.default(),
                                authorized_tools=frozenset({"calculator"}))
                for spec in run.specs()[:5]
            )
        )  # fmt: skip

    asyncio.run(concurrently())
    assert len(read_journal(run.store.root)) == 5  # one chain, every seal in it
