"""``python -m xaytune.verify``: a tampered output tree is refused, naming the file."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def _flip_one_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_one_flipped_byte_in_a_trajectory_is_refused(quickstart_copy, verify, where):
    trajectories = sorted(quickstart_copy.rglob("trajectory.jsonl"))
    assert len(trajectories) == 120
    target = trajectories[len(trajectories) // 2]
    size = target.stat().st_size
    offset = {"start": 2, "middle": size // 2, "end": size - 3}[where]
    _flip_one_byte(target, offset)

    # One case runs the command a user runs; the others call its main in-process.
    result = verify(quickstart_copy, in_process=where != "middle")
    assert result.returncode == 1, result.describe()
    attempt = target.parent.relative_to(quickstart_copy)
    problems = result.stdout.strip().splitlines()
    assert len(problems) == 1, result.describe()
    # The line names the attempt directory and its trajectory (the file's name, or a
    # chain-head mismatch between the trajectory and its seal).
    assert str(attempt) in problems[0], result.describe()
    assert "trajectory" in problems[0], result.describe()
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
    seal = sorted(quickstart_copy.rglob("seal.json"))[7]
    seal.unlink()
    result = verify(quickstart_copy, in_process=True)
    assert result.returncode == 1, result.describe()
    assert str(seal.parent.parent.parent.relative_to(quickstart_copy)) in result.stdout


def test_verify_usage_errors(tmp_path, verify):
    result = verify(tmp_path / "missing", in_process=True)
    assert result.returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = verify(empty, in_process=True)
    assert result.returncode == 1
    assert "not an xaytune output tree" in result.stdout
