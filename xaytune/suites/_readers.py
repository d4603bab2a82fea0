"""Reading a builder source one row at a time: JSONL, a JSON array, CSV or Parquet.

Each reader yields ``(where, row)``: ``where`` names the file and the row as a
refusal should (``<file>: line 3`` for JSONL and CSV, the line a record ends on;
``<file>: row 3`` for a JSON array and Parquet, counting from 1), ``row`` is a dict.

Within the limits of :mod:`xaytune.core.limits`: a source over
``MAX_SUITE_FILE_BYTES`` is ``too-large`` (never read whole), a JSONL or CSV line over
``MAX_SUITE_LINE_BYTES`` is ``line-too-long``; JSON is parsed as the suite loader
parses it (``too-deep``, ``too-many-digits``, ``bad-json`` for a duplicate key or a
NaN literal). Refusals, each one line naming the file (and the row when there is one):

- ``unknown-format``: a declared format other than ``jsonl``, ``json``, ``csv``,
  ``parquet`` (a file whose extension is none of ``.jsonl``/``.ndjson``, ``.json``,
  ``.csv``, ``.parquet``/``.pq`` is read as JSONL, the suite's own line format);
- ``bad-json``: not JSON, not UTF-8, a JSON file that is not an array of objects;
- ``bad-csv``: no header, an empty or repeated column name, a row with more or fewer
  fields than the header, bytes that are not UTF-8, a field over the csv module's limit;
- ``bad-parquet``: a file pyarrow cannot read; ``parquet-missing``: pyarrow is not
  installed (``pip install "xaytune[parquet]"``);
- ``suite-missing``: the source cannot be read.

Compressed sources: a name ending in ``.gz`` is gzip, ``.zst`` is Zstandard (only
when the ``zstandard`` package is installed: else ``zstd-missing``, saying how to
install it; xaytune does not depend on it); the format is then the extension before
it (``tasks.jsonl.gz`` is JSONL). The source is decompressed into a private temporary
file (removed once read), bounded as the file itself would be: past
``MAX_SUITE_FILE_BYTES`` of decompressed data it is ``too-large`` (a small file that
inflates without end is refused, never written whole); a corrupt or truncated stream
is ``bad-compression``. Refusals name the compressed file, as for an uncompressed one.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import json
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from xaytune.core import limits
from xaytune.core.domain.suite_files import load_jsonl_objects
from xaytune.core.errors import SuiteError
from xaytune.core.limits import LimitError, iter_lines, quote, read_bounded

__all__ = ["COMPRESSIONS", "FORMATS", "detect_format", "read_rows"]

FORMATS = ("jsonl", "json", "csv", "parquet")
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd"}
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}
_EXTENSIONS |= {".parquet": "parquet", ".pq": "parquet"}
_PARQUET_BATCH = 1024
# zstd input per call: 1 kB of RLE blocks (4 bytes for up to 128 kB each) inflates to
# at most ~32 MB held at once.
_ZSTD_INPUT = 1024

Row = tuple[str, dict[str, Any]]


def detect_format(path: Path, declared: str | None = None) -> str:
    """``declared`` when given (one of :data:`FORMATS`, else ``unknown-format``), else
    the format the file's extension names, else ``jsonl``."""
    if declared is not None:
        if declared not in FORMATS:
            raise SuiteError(
                "unknown-format", f"{path}: format {quote(declared)} is not one of {FORMATS}"
            )
        return declared
    suffix = path.suffix.lower()
    if suffix in COMPRESSIONS:
        suffix = Path(path.stem).suffix.lower()
    return _EXTENSIONS.get(suffix, "jsonl")


def read_rows(path: Path, fmt: str) -> Iterator[Row]:
    """The rows of ``path`` read as ``fmt``, decompressed first when its name ends in
    ``.gz`` or ``.zst`` (see the module docstring)."""
    readers = {"jsonl": _jsonl, "json": _json_array, "csv": _csv, "parquet": _parquet}
    compression = COMPRESSIONS.get(path.suffix.lower())
    try:
        with contextlib.ExitStack() as stack:
            source: Path | _Shown = path
            if compression is not None:
                directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="xaytune-"))
                source = _decompressed(path, compression, Path(directory) / path.stem)
            yield from readers[fmt](source)  # type: ignore[arg-type]
    except OSError as error:
        raise SuiteError("suite-missing", f"{path}: cannot read ({error.strerror})") from None
    except LimitError as error:
        raise SuiteError(error.reason, error.detail) from None


class _Shown(os.PathLike[str]):
    """A decompressed copy that opens as itself and prints as the user's file, so a
    refusal names ``tasks.jsonl.gz: line 3``, never a temporary path."""

    def __init__(self, copy: Path, shown: Path) -> None:
        self.copy, self.shown = copy, shown

    def __fspath__(self) -> str:
        return str(self.copy)

    def __str__(self) -> str:
        return str(self.shown)


def _decompressed(path: Path, compression: str, copy: Path) -> _Shown:
    """``path`` decompressed into ``copy``, at most ``MAX_SUITE_FILE_BYTES``."""
    limit = limits.MAX_SUITE_FILE_BYTES
    written = 0
    with open(path, "rb") as raw, open(copy, "wb") as out:
        chunks = _gunzip(raw, path) if compression == "gzip" else _unzstd(raw, path)
        for chunk in chunks:
            written += len(chunk)
            if written > limit:
                raise SuiteError(
                    "too-large",
                    f"{path}: decompresses to more than {limit:,} bytes (MAX_SUITE_FILE_BYTES)",
                )
            out.write(chunk)
    return _Shown(copy, path)


def _gunzip(raw: BinaryIO, path: Path) -> Iterator[bytes]:
    """The bytes of a gzip stream, a bounded read at a time; a truncated or corrupt
    stream is ``bad-compression``."""
    try:
        with gzip.GzipFile(fileobj=raw) as stream:
            while chunk := stream.read(1 << 20):
                yield chunk
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise SuiteError(
            "bad-compression", f"{path}: not a whole gzip stream ({_problem(error)})"
        ) from None


def _unzstd(raw: BinaryIO, path: Path) -> Iterator[bytes]:
    """The bytes of a Zstandard stream (one frame after another). The input is fed a
    few kB at a time, so no call can inflate into more than a few tens of MB; a stream
    that ends inside a frame (truncated) is ``bad-compression``, never a shorter file
    (``zstandard``'s stream reader would end early without a word)."""
    try:
        import zstandard
    except ImportError:
        raise SuiteError(
            "zstd-missing",
            f"{path}: reading .zst needs the zstandard package (pip install zstandard), or "
            "decompress it first (zstd -d)",
        ) from None
    frame = zstandard.ZstdDecompressor().decompressobj()
    started = False
    try:
        while data := raw.read(_ZSTD_INPUT):
            while data:
                started = True
                yield frame.decompress(data)
                data = b""
                if frame.eof:  # the next frame starts in what this one left
                    data, frame = frame.unused_data, zstandard.ZstdDecompressor().decompressobj()
                    started = bool(data)
    except zstandard.ZstdError as error:
        raise SuiteError(
            "bad-compression", f"{path}: not a whole zstd stream ({_problem(error)})"
        ) from None
    if started and not frame.eof:
        raise SuiteError("bad-compression", f"{path}: not a whole zstd stream (truncated)")


def _problem(error: BaseException) -> str:
    return limits.clip(" ".join(str(error).split()) or type(error).__name__, 120)


def _jsonl(path: Path) -> Iterator[Row]:
    for number, row in load_jsonl_objects(path):
        yield f"{path}: line {number}", row


def _json_array(path: Path) -> Iterator[Row]:
    raw = read_bounded(path, limits.MAX_SUITE_FILE_BYTES, size_name="MAX_SUITE_FILE_BYTES")
    where = str(path)
    try:
        value = limits.loads(
            raw,
            what=where,
            max_size=limits.MAX_SUITE_FILE_BYTES,
            size_name="MAX_SUITE_FILE_BYTES",
            # The array adds one level to what a JSONL line may nest.
            max_depth=limits.MAX_JSON_DEPTH + 1,
            **limits.STRICT_JSON_HOOKS,
        )
    except json.JSONDecodeError as error:
        raise SuiteError("bad-json", f"{where}: line {error.lineno}: {error.msg}") from None
    except UnicodeDecodeError:
        raise SuiteError("bad-json", f"{where}: not UTF-8 text") from None
    except ValueError as error:  # a duplicate key or a NaN/Infinity literal
        raise SuiteError("bad-json", f"{where}: {error}") from None
    if not isinstance(value, list):
        raise SuiteError("bad-json", f"{where}: not a JSON array of objects (one per task)")
    for index, row in enumerate(value, start=1):
        if not isinstance(row, dict):
            raise SuiteError("bad-json", f"{where}: row {index}: not a JSON object")
        yield f"{where}: row {index}", row


def _csv_lines(path: Path) -> Iterator[str]:
    for number, raw in iter_lines(path):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SuiteError("bad-csv", f"{path}: line {number}: not UTF-8 text") from None
        yield text.removeprefix("\ufeff") if number == 1 else text


def _csv(path: Path) -> Iterator[Row]:
    reader = csv.reader(_csv_lines(path))
    try:
        header = next(reader, None)
        if header is None:
            raise SuiteError("bad-csv", f"{path}: empty file (a header line is needed)")
        names = [name.strip() for name in header]
        if any(not name for name in names):
            raise SuiteError("bad-csv", f"{path}: line 1: a column has no name")
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise SuiteError("bad-csv", f"{path}: line 1: column {quote(repeated[0])} twice")
        for fields in reader:
            where = f"{path}: line {reader.line_num}"
            if not fields or fields == [""]:
                continue  # a blank line
            if len(fields) != len(names):
                raise SuiteError(
                    "bad-csv", f"{where}: {len(fields)} fields; the header has {len(names)}"
                )
            yield where, dict(zip(names, fields, strict=True))
    except csv.Error as error:
        raise SuiteError("bad-csv", f"{path}: line {reader.line_num}: {error}") from None


def _parquet(path: Path) -> Iterator[Row]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise SuiteError(
            "parquet-missing",
            f'{path}: reading Parquet needs pyarrow: pip install "xaytune[parquet]"',
        ) from None
    size = os.stat(path).st_size
    if size > limits.MAX_SUITE_FILE_BYTES:
        raise SuiteError(
            "too-large",
            f"{path}: {size:,} bytes; the limit is {limits.MAX_SUITE_FILE_BYTES:,} "
            "(MAX_SUITE_FILE_BYTES)",
        )
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=_PARQUET_BATCH)
        index = 0
        for batch in batches:
            for row in batch.to_pylist():
                index += 1
                yield f"{path}: row {index}", row
    except (pa.ArrowException, OSError) as error:
        problem = " ".join(str(error).split())
        raise SuiteError("bad-parquet", f"{path}: {limits.clip(problem, 200)}") from None
