"""Reading a suite's files within the limits: their lines, their sha256, their JSON objects.

Every reader here is bounded (:mod:`xaytune.core.limits`: a file's size, a line's
length, a value's depth and an integer's digits) and turns a limit or a malformed line
into a one-line :class:`~xaytune.core.errors.SuiteError` naming the file and line. The
suite's records (:mod:`xaytune.core.domain.benchmark`) and the suite builders read
through these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from xaytune.core import limits
from xaytune.core.errors import SuiteError
from xaytune.core.limits import LimitError, hash_bounded, iter_lines, loads

__all__ = ["file_sha256", "load_jsonl_objects", "suite_lines"]


def suite_lines(path: Path) -> Iterable[tuple[int, bytes]]:
    """The lines of a suite file or source, within the line and file limits."""
    try:
        yield from iter_lines(path)
    except LimitError as error:
        raise SuiteError(error.reason, error.detail) from None


def file_sha256(path: Path) -> str:
    """``sha256:<hex>`` of a suite file, hashed in chunks within MAX_SUITE_FILE_BYTES."""
    try:
        state = hash_bounded(
            path, limits.MAX_SUITE_FILE_BYTES, hashlib.sha256, size_name="MAX_SUITE_FILE_BYTES"
        )
    except OSError as error:
        raise SuiteError("suite-missing", f"{path}: cannot read ({error.strerror})") from None
    except LimitError as error:
        raise SuiteError(error.reason, error.detail) from None
    return "sha256:" + state.hexdigest()


def load_jsonl_objects(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) from a JSONL file; one-line errors name the line.

    Bounded (:mod:`xaytune.core.limits`): the file's size, each line's length, its
    depth and its integers' digits. Refused as ``bad-json``: what is not JSON, not an
    object, not UTF-8 text, or has a duplicate key or a NaN/Infinity literal.
    """
    for number, raw in suite_lines(path):
        if not raw.strip():
            continue
        where = f"{path}: line {number}"
        try:
            record = loads(
                raw,
                what=where,
                max_size=limits.MAX_SUITE_LINE_BYTES,
                size_name="MAX_SUITE_LINE_BYTES",
                **limits.STRICT_JSON_HOOKS,
            )
        except LimitError as error:
            raise SuiteError(error.reason, error.detail) from None
        except json.JSONDecodeError as error:
            raise SuiteError("bad-json", f"{where}: {error.msg}") from None
        except UnicodeDecodeError:
            # json.loads(bytes) decodes first; bad bytes are bad JSON, not a crash.
            raise SuiteError("bad-json", f"{where}: not UTF-8 text") from None
        except ValueError as error:  # a duplicate key or a NaN/Infinity literal
            raise SuiteError("bad-json", f"{where}: {error}") from None
        if not isinstance(record, dict):
            raise SuiteError("bad-json", f"{where}: not a JSON object")
        yield number, record
