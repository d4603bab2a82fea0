"""Turn a user's JSONL of tasks and references into a pinned suite directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from xaytune.core._ids import is_valid_id
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.benchmark import (
    MANIFEST_FILE,
    REFERENCES_FILE,
    SUITE_SCHEMA,
    TASKS_FILE,
    Reference,
    SuiteSource,
    Task,
    load_jsonl_objects,
    suite_digest,
)
from xaytune.core.errors import SuiteError

__all__ = ["build_suite", "build_suite_from_jsonl"]

_TASK_FIELDS = {"id", "input", "attachments", "metadata"}


def _jsonl(records: Sequence[dict[str, Any]]) -> bytes:
    return b"".join(canonical_bytes(record) + b"\n" for record in records)


def build_suite(
    out_dir: str | Path,
    *,
    name: str,
    version: str,
    tasks: Sequence[dict[str, Any]],
    references: Sequence[dict[str, Any]],
    where: str = "tasks",
) -> SuiteSource:
    """Validate ``tasks`` and ``references`` and write a pinned suite to ``out_dir``.

    Refuses: an invalid suite name, an empty suite, a duplicate or invalid task id, a
    task without a reference or a reference without a task, and an existing
    ``out_dir``. The directory appears whole or not at all (written aside, renamed).
    """
    out = Path(out_dir)
    if not is_valid_id(name):
        raise SuiteError("bad-id", f"suite name {name!r} is not a valid id")
    if not version or any(c.isspace() for c in version):
        raise SuiteError("bad-manifest", f"suite version {version!r} is empty or has spaces")
    if not tasks:
        raise SuiteError("empty-suite", f"{where}: no tasks")
    if out.exists():
        raise SuiteError("exists", f"{out}: already exists; a pinned suite is never overwritten")
    seen: set[str] = set()
    for i, record in enumerate(tasks, start=1):
        if not isinstance(record, dict):
            raise SuiteError("bad-record", f"{where}: task #{i} is not an object")
        if "id" in record and not is_valid_id(record["id"]):
            # The same word as a bad suite name: an id must be a safe path part.
            raise SuiteError("bad-id", f"{where}: task id {record['id']!r} is not a valid id")
        try:
            task = Task.model_validate(record)
        except ValidationError as error:
            first = error.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "record"
            raise SuiteError(
                "bad-record", f"{where}: task {record.get('id', f'#{i}')!r}: {loc}: {first['msg']}"
            ) from None
        if task.id in seen:
            raise SuiteError("duplicate-task", f"{where}: task id {task.id!r} appears twice")
        seen.add(task.id)
    answered: set[str] = set()
    for i, record in enumerate(references, start=1):
        try:
            reference = Reference.model_validate(record)
        except ValidationError as error:
            first = error.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "record"
            raise SuiteError(
                "bad-record", f"{where}: reference #{i}: {loc}: {first['msg']}"
            ) from None
        if reference.id not in seen:
            raise SuiteError(
                "orphan-reference", f"{where}: reference for unknown task {reference.id!r}"
            )
        if reference.id in answered:
            raise SuiteError("duplicate-task", f"{where}: two references for task {reference.id!r}")
        answered.add(reference.id)
    missing = [task_id for task_id in (r["id"] for r in tasks) if task_id not in answered]
    if missing:
        raise SuiteError("missing-reference", f"{where}: task {missing[0]!r} has no reference")

    files = {TASKS_FILE: _jsonl(tasks), REFERENCES_FILE: _jsonl(references)}
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
        for file, data in {**files, MANIFEST_FILE: canonical_bytes(manifest) + b"\n"}.items():
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


def build_suite_from_jsonl(
    source: str | Path, out_dir: str | Path, *, name: str, version: str
) -> SuiteSource:
    """Build a suite from one JSONL whose lines are tasks with an ``answer`` field.

    Each line: ``{"id", "input", "answer", "attachments"?, "metadata"?}``; any other
    field is refused. ``answer`` goes to the held-out reference file only.
    """
    path = Path(source)
    try:
        rows = list(load_jsonl_objects(path))
    except OSError as error:
        raise SuiteError("suite-missing", f"{path}: cannot read ({error.strerror})") from None
    tasks: list[dict[str, Any]] = []
    references: list[dict[str, Any]] = []
    for number, row in rows:
        if "answer" not in row:
            raise SuiteError(
                "missing-reference", f"{path}: line {number}: task {row.get('id')!r} has no answer"
            )
        extra = set(row) - _TASK_FIELDS - {"answer"}
        if extra:
            raise SuiteError("bad-record", f"{path}: line {number}: unknown fields {sorted(extra)}")
        answer = row.pop("answer")
        if not isinstance(answer, str | int) or isinstance(answer, bool):
            raise SuiteError(
                "bad-record", f"{path}: line {number}: answer must be a string or an integer"
            )
        tasks.append(row)
        references.append({"id": row.get("id"), "answer": str(answer)})
    return build_suite(
        out_dir, name=name, version=version, tasks=tasks, references=references, where=str(path)
    )
