"""The builder reads compressed sources (``.gz``; ``.zst`` with zstandard only) as the
file inside them, bounded as an uncompressed file, and names the compressed file in
every refusal; nothing of the temporary copy is left behind."""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

import pytest

from xaytune.core import limits
from xaytune.core.domain.benchmark import REFERENCES_FILE, TASKS_FILE
from xaytune.core.errors import SuiteError
from xaytune.suites import build_suite_from_file
from xaytune.suites._readers import detect_format

ROWS = [
    {"id": "t-1", "question": "2+2?", "answer": "4"},
    {"id": "t-2", "question": "3+3?", "answer": "6"},
]


def _jsonl(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def _build(source: Path):
    return build_suite_from_file(source, source.parent / "out", name="gz", version="1")


def _refused(source: Path) -> SuiteError:
    with pytest.raises(SuiteError) as caught:
        _build(source)
    assert not (source.parent / "out").exists()
    return caught.value


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("tasks.jsonl.gz", "jsonl"),
        ("qa.csv.gz", "csv"),
        ("qa.json.gz", "json"),
        ("qa.parquet.zst", "parquet"),
        ("tasks.gz", "jsonl"),
    ],
)
def test_the_format_is_the_extension_before_the_compression(name: str, expected: str):
    assert detect_format(Path(name)) == expected


def test_a_gzipped_jsonl_builds_the_same_suite_as_the_plain_file(tmp_path, monkeypatch):
    plain_dir, gz_dir, scratch = tmp_path / "plain", tmp_path / "gz", tmp_path / "tmp"
    for directory in (plain_dir, gz_dir, scratch):
        directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the copy goes
    (plain_dir / "tasks.jsonl").write_bytes(_jsonl(ROWS))
    (gz_dir / "tasks.jsonl.gz").write_bytes(gzip.compress(_jsonl(ROWS)))
    plain = _build(plain_dir / "tasks.jsonl")
    packed = _build(gz_dir / "tasks.jsonl.gz")
    assert packed.digest == plain.digest  # the same pinned files, byte for byte
    for file in (TASKS_FILE, REFERENCES_FILE):
        assert (gz_dir / "out" / file).read_bytes() == (plain_dir / "out" / file).read_bytes()
    assert list(scratch.iterdir()) == []  # the decompressed copy is gone


def test_a_gzipped_csv_builds(tmp_path: Path):
    source = tmp_path / "qa.csv.gz"
    source.write_bytes(gzip.compress(b"id,question,answer\nq-1,Capital of France?,Paris\n"))
    built = _build(source)
    assert [task.id for task in built.suite.tasks] == ["q-1"]
    assert built.reference("q-1").text == "Paris"


def test_a_refusal_inside_a_gzipped_source_names_the_gz_file_and_line(tmp_path: Path):
    source = tmp_path / "tasks.jsonl.gz"
    source.write_bytes(gzip.compress(_jsonl(ROWS) + b"{not json}\n"))
    error = _refused(source)
    assert error.reason == "bad-json"
    assert f"{source}: line 3" in str(error)
    assert "xaytune-" not in str(error)  # never the temporary copy's path


def test_a_corrupt_gzip_stream_is_bad_compression(tmp_path: Path):
    source = tmp_path / "tasks.jsonl.gz"
    source.write_bytes(gzip.compress(_jsonl(ROWS))[:-12])  # truncated: no trailer
    error = _refused(source)
    assert error.reason == "bad-compression"
    assert str(source) in str(error)


def test_a_file_that_is_not_gzip_is_bad_compression(tmp_path: Path):
    source = tmp_path / "tasks.jsonl.gz"
    source.write_bytes(_jsonl(ROWS))
    assert _refused(source).reason == "bad-compression"


def test_a_gzip_that_inflates_past_the_file_limit_is_too_large(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SUITE_FILE_BYTES", 10_000)
    source = tmp_path / "tasks.jsonl.gz"
    # 200 kB of one repeated line compresses to under 1 kB: the limit is on what it
    # inflates to, not on the compressed size.
    source.write_bytes(gzip.compress(_jsonl(ROWS) * 2000))
    assert source.stat().st_size < 10_000
    error = _refused(source)
    assert error.reason == "too-large"
    assert "MAX_SUITE_FILE_BYTES" in str(error)


def test_zst_without_zstandard_says_how_to_get_it(tmp_path: Path, monkeypatch):
    # The [zst] extra is in [test]; its absence is made here (None in sys.modules makes
    # `import zstandard` raise ImportError), so this runs everywhere.
    monkeypatch.setitem(sys.modules, "zstandard", None)
    source = tmp_path / "tasks.jsonl.zst"
    source.write_bytes(b"\x28\xb5\x2f\xfd")  # the zstd magic number
    error = _refused(source)
    assert error.reason == "zstd-missing"
    assert "pip install zstandard" in str(error)


def test_a_zst_jsonl_builds_when_zstandard_is_installed(tmp_path: Path):
    import zstandard

    source = tmp_path / "tasks.jsonl.zst"
    source.write_bytes(zstandard.ZstdCompressor().compress(_jsonl(ROWS)))
    assert [task.id for task in _build(source).suite.tasks] == ["t-1", "t-2"]


def test_a_truncated_zst_is_bad_compression_not_a_shorter_suite(tmp_path: Path):
    import zstandard

    source = tmp_path / "tasks.jsonl.zst"
    whole = zstandard.ZstdCompressor().compress(_jsonl(ROWS * 50))
    source.write_bytes(whole[: len(whole) // 2])
    assert _refused(source).reason == "bad-compression"
