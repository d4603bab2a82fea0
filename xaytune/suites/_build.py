"""Turn a user's JSONL of tasks and references into a pinned suite directory."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from xaytune.core import limits
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.benchmark import (
    MANIFEST_FILE,
    REFERENCES_FILE,
    SUITE_SCHEMA,
    TASKS_FILE,
    Reference,
    SuiteSource,
    Task,
    check_task_input,
    suite_digest,
)
from xaytune.core.errors import FingerprintError, SuiteError
from xaytune.core.ids import is_valid_id
from xaytune.core.limits import (
    LimitError,
    check_json_text,
    clip,
    quote,
)
from xaytune.suites._environments import pin_environment
from xaytune.suites._mapping import FieldMapping, map_rows
from xaytune.suites._readers import detect_format, read_rows

__all__ = ["build_suite", "build_suite_from_file", "build_suite_from_jsonl"]

_MAX_VERSION_CHARS = 128
NOTICE_FILE = "NOTICE"


def _line(record: dict[str, Any], what: str) -> bytes:
    """``record`` as one canonical JSONL line, within the limits a loader applies."""
    try:
        line = canonical_bytes(record)
    except FingerprintError as error:
        problem = str(error).removeprefix(f"{error.reason}: ")
        raise SuiteError(error.reason, f"{what}: {clip(problem, 200)}") from None
    except RecursionError:  # a Python value nested beyond the interpreter's stack
        raise SuiteError(
            "too-deep", f"{what}: nests deeper than {limits.MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH)"
        ) from None
    try:
        check_json_text(
            line,
            what=what,
            max_size=limits.MAX_SUITE_LINE_BYTES,
            size_name="MAX_SUITE_LINE_BYTES",
        )
    except LimitError as error:
        raise SuiteError(error.reason, error.detail) from None
    return line + b"\n"


def _too_many_tasks() -> str:
    return f"more than {limits.MAX_SUITE_TASKS:,} tasks (MAX_SUITE_TASKS)"


def _first_problem(error: ValidationError) -> str:
    first = error.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "record"
    return f"{clip(loc)}: {first['msg']}"


def build_suite(
    out_dir: str | Path,
    *,
    name: str,
    version: str,
    tasks: Sequence[dict[str, Any]],
    references: Sequence[dict[str, Any]],
    where: str = "tasks",
    notice: str | None = None,
) -> SuiteSource:
    """Validate ``tasks`` and ``references`` and write a pinned suite to ``out_dir``.

    Refuses: an invalid suite name, an empty suite, a duplicate or invalid task id, a
    task without a reference or a reference without a task, and an existing
    ``out_dir``; a task's environment that cannot be pinned
    (:mod:`xaytune.suites._environments`: its code identity is written into the task);
    and, as a loader would (:mod:`xaytune.core.limits`), a record nested too deeply
    (``too-deep``), a line too long (``too-large``), an input larger than
    ``MAX_TASK_INPUT_BYTES`` (``too-large``, naming the task). The directory appears
    whole or not at all (written aside, renamed).

    ``notice`` (the license and attribution of the data, for a suite built from a
    third party's files) is written beside them as ``NOTICE``; it is not one of the
    pinned files (the task metadata names the source).
    """
    out = Path(out_dir)
    if not is_valid_id(name):
        raise SuiteError("bad-id", f"suite name {quote(name)} is not a valid id")
    if (
        not isinstance(version, str)
        or not version
        or len(version) > _MAX_VERSION_CHARS
        or not version.isprintable()
        or any(c.isspace() for c in version)
    ):
        raise SuiteError(
            "bad-manifest",
            f"suite version {quote(version)} is empty, has spaces or unprintable characters, "
            f"or is longer than {_MAX_VERSION_CHARS} characters",
        )
    if not tasks:
        raise SuiteError("empty-suite", f"{where}: no tasks")
    if len(tasks) > limits.MAX_SUITE_TASKS:
        raise SuiteError("too-large", f"{where}: {_too_many_tasks()}")
    if out.exists():
        raise SuiteError("exists", f"{out}: already exists; a pinned suite is never overwritten")
    seen: set[str] = set()
    task_lines: list[bytes] = []
    for i, record in enumerate(tasks, start=1):
        if not isinstance(record, dict):
            raise SuiteError("bad-record", f"{where}: task #{i} is not an object")
        if "id" in record and not is_valid_id(record["id"]):
            # The same word as a bad suite name: an id must be a safe path part.
            raise SuiteError("bad-id", f"{where}: task id {quote(record['id'])} is not a valid id")
        label = repr(record["id"]) if "id" in record else f"#{i}"
        try:
            task = Task.model_validate(record)
        except ValidationError as error:
            raise SuiteError(
                "bad-record", f"{where}: task {label}: {_first_problem(error)}"
            ) from None
        if task.id in seen:
            raise SuiteError("duplicate-task", f"{where}: task id {task.id!r} appears twice")
        seen.add(task.id)
        record = pin_environment(record, task, where=where)
        task_lines.append(_line(record, f"{where}: task {task.id!r}"))
        check_task_input(task, where=where)
    answered: set[str] = set()
    reference_lines: list[bytes] = []
    for i, record in enumerate(references, start=1):
        try:
            reference = Reference.model_validate(record)
        except ValidationError as error:
            raise SuiteError(
                "bad-record", f"{where}: reference #{i}: {_first_problem(error)}"
            ) from None
        if reference.id not in seen:
            raise SuiteError(
                "orphan-reference", f"{where}: reference for unknown task {quote(reference.id)}"
            )
        if reference.id in answered:
            raise SuiteError("duplicate-task", f"{where}: two references for task {reference.id!r}")
        answered.add(reference.id)
        reference_lines.append(_line(record, f"{where}: reference for task {reference.id!r}"))
    missing = [task_id for task_id in (r["id"] for r in tasks) if task_id not in answered]
    if missing:
        raise SuiteError("missing-reference", f"{where}: task {missing[0]!r} has no reference")

    files = {TASKS_FILE: b"".join(task_lines), REFERENCES_FILE: b"".join(reference_lines)}
    digests = {file: sha256_digest(data) for file, data in files.items()}
    manifest = {
        "schema": SUITE_SCHEMA,
        "name": name,
        "version": version,
        "task_count": len(tasks),
        "files": digests,
        "digest": suite_digest(name=name, version=version, task_count=len(tasks), files=digests),
    }
    # A filesystem failure (no space, no permission, a file where a directory goes) is
    # a refusal like any other: one line naming the output, never a traceback.
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as error:
        raise SuiteError("write-failed", f"{out}: cannot write ({error.strerror})") from None
    try:
        written = {**files, MANIFEST_FILE: canonical_bytes(manifest) + b"\n"}
        if notice is not None:
            written[NOTICE_FILE] = notice.encode()
        for file, data in written.items():
            with open(staging / file, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        os.rename(staging, out)
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(error, OSError):
            raise SuiteError("write-failed", f"{out}: cannot write ({error.strerror})") from None
        raise
    return SuiteSource(out)


def build_suite_from_file(
    source: str | Path,
    out_dir: str | Path,
    *,
    name: str,
    version: str,
    fmt: str | None = None,
    mapping: FieldMapping | None = None,
) -> SuiteSource:
    """Build a suite from a JSONL, JSON array, CSV or Parquet file of tasks with answers.

    ``fmt`` is one of ``jsonl``, ``json``, ``csv``, ``parquet`` (default: from the
    extension, after a ``.gz`` / ``.zst`` one, which is decompressed); ``mapping`` says
    which fields make a task (default: a row with an ``input`` object is a task record,
    any other row maps every field but ``id`` and ``answer`` to the input). Readers and
    refusals: :mod:`xaytune.suites._readers`; the mapping and its refusals:
    :mod:`xaytune.suites._mapping`. Answers go to the held-out reference file only.
    """
    path = Path(source)
    mapping = mapping or FieldMapping()
    mapping.template_fields()  # a bad template is refused before the source is read
    # Closed on a refusal too: a compressed source's temporary copy goes at once.
    with contextlib.closing(read_rows(path, detect_format(path, fmt))) as rows:
        tasks, references = map_rows(rows, mapping)
    return build_suite(
        out_dir, name=name, version=version, tasks=tasks, references=references, where=str(path)
    )


def build_suite_from_jsonl(
    source: str | Path, out_dir: str | Path, *, name: str, version: str
) -> SuiteSource:
    """Build a suite from one JSONL whose lines are tasks with an ``answer`` field.

    Each line: ``{"id", "input", "answer", "attachments"?, "metadata"?}``; any other
    field is refused. ``answer`` goes to the held-out reference file only. (The same as
    :func:`build_suite_from_file` on a ``.jsonl`` file, whatever its extension.)
    """
    return build_suite_from_file(source, out_dir, name=name, version=version, fmt="jsonl")
