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
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xaytune.core import limits
from xaytune.core.domain.benchmark import load_jsonl_objects
from xaytune.core.errors import SuiteError
from xaytune.core.limits import LimitError, iter_lines, quote, read_bounded

__all__ = ["FORMATS", "detect_format", "read_rows"]

FORMATS = ("jsonl", "json", "csv", "parquet")
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}
_EXTENSIONS |= {".parquet": "parquet", ".pq": "parquet"}
_PARQUET_BATCH = 1024

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
    return _EXTENSIONS.get(path.suffix.lower(), "jsonl")


def read_rows(path: Path, fmt: str) -> Iterator[Row]:
    """The rows of ``path`` read as ``fmt`` (see the module docstring)."""
    readers = {"jsonl": _jsonl, "json": _json_array, "csv": _csv, "parquet": _parquet}
    try:
        yield from readers[fmt](path)
    except OSError as error:
        raise SuiteError("suite-missing", f"{path}: cannot read ({error.strerror})") from None
    except LimitError as error:
        raise SuiteError(error.reason, error.detail) from None


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
