"""``python -m xaytune.verify``: a tampered output tree is refused, naming the file."""

from __future__ import annotations

import dataclasses

import pytest

from xaytune.harness.attempt_file import AttemptParts

pytestmark = pytest.mark.slow

# What a flipped event byte breaks: an early byte (the first event's "prev") or a
# middle one breaks the chain; a byte of the last event only moves the chain's head
# away from the one its seal names.
FLIP_REASONS = {"start": "chain-broken", "middle": "chain-broken", "end": "chain-head-mismatch"}


def _attempt_files(tree):
    """Every attempt file of every evidence store in an output tree."""
    return sorted(tree.glob("candidates/*/seed-*/evidence/tasks/*/*.jsonl"))


def _parts(path):
    return AttemptParts.of(path.read_bytes(), str(path))


def _flip_one_event_byte(path, offset):
    """Flip one bit of the byte at ``offset`` into the attempt's events (its chain)."""
    parts = _parts(path)
    events = bytearray(b"".join(parts.events))
    events[offset] ^= 0x01
    path.write_bytes(
        dataclasses.replace(parts, events=tuple(bytes(events).splitlines(keepends=True))).join()
    )


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_one_flipped_byte_in_a_trajectory_is_refused(quickstart_copy, verify, where):
    attempts = _attempt_files(quickstart_copy)
    assert len(attempts) == 120
    target = attempts[len(attempts) // 2]
    size = sum(map(len, _parts(target).events))
    offset = {"start": 2, "middle": size // 2, "end": size - 3}[where]
    _flip_one_event_byte(target, offset)

    # One case runs the command a user runs; the others call its main in-process.
    result = verify(quickstart_copy, in_process=where != "middle")
    assert result.returncode == 1, result.describe()
    attempt = target.relative_to(quickstart_copy)
    problems = result.stdout.strip().splitlines()
    assert len(problems) == 1, result.describe()
    # The line names the attempt file and why its trajectory (the hash-chained events
    # in it) is refused: a broken chain, or a chain head its seal does not name.
    assert str(attempt) in problems[0], result.describe()
    assert FLIP_REASONS[where] in problems[0], result.describe()
    assert "FAILED" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_edited_report_is_a_digest_mismatch(quickstart_copy, verify):
    report = quickstart_copy / "comparison" / "report.md"
    report.write_text(report.read_text().replace("trade-off", "favors-a"))
    result = verify(quickstart_copy, in_process=True)
    assert result.returncode == 1, result.describe()
    assert "digest-mismatch" in result.stdout
    assert "comparison/report.md" in result.stdout
    assert "Traceback" not in result.stderr


def test_a_deleted_seal_is_refused(quickstart_copy, verify):
    attempt = _attempt_files(quickstart_copy)[7]
    parts = _parts(attempt)
    assert parts.seal is not None
    attempt.write_bytes(dataclasses.replace(parts, seal=None).join())  # remove the seal line
    result = verify(quickstart_copy, in_process=True)
    assert result.returncode == 1, result.describe()
    assert str(attempt.parent.relative_to(quickstart_copy)) in result.stdout


def test_verify_usage_errors(tmp_path, verify):
    result = verify(tmp_path / "missing", in_process=True)
    assert result.returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = verify(empty, in_process=True)
    assert result.returncode == 1
    assert "not an xaytune output tree" in result.stdout
