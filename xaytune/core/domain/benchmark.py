"""Pinned benchmarks, seeded samples and task assignments (the specification's path).

A suite on disk is a directory with three files:

``suite.json``        the manifest: schema, name, version, task count, the sha256 of
                      each data file and the suite digest over all of them (C1 cohort)
``tasks.jsonl``       the public part: one task a line (id, input, attachments,
                      metadata; for an agent benchmark also turns, tools, environment)
``references.jsonl``  the held-out part: one reference a line (id, answer, ...); the
                      answer is text, or JSON data for a structured reference (a call
                      list, an expected state)

:class:`SuiteSource` verifies every digest when it opens a suite and is the only
reader of references; :class:`BenchmarkSuite` is the public part only.

This module reads a suite from disk; the records it reads are
:mod:`xaytune.core.domain.tasks`, the seeded selection of tasks is
:mod:`xaytune.core.domain.assignment`, and the bounded file readers are
:mod:`xaytune.core.domain.suite_files`. Every name of theirs the specification uses is
importable from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from xaytune.core import limits
from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.assignment import (
    ASSIGNMENT_ALGORITHM,
    SeededSample,
    TaskAssignment,
    record_assignment,
)
from xaytune.core.domain.suite_files import file_sha256, suite_lines
from xaytune.core.domain.tasks import (
    SUITE_SCHEMA,
    Attachment,
    BenchmarkSuite,
    Reference,
    SuiteManifest,
    Task,
    TaskEnvironment,
    TaskTool,
    suite_digest,
)
from xaytune.core.errors import FingerprintError, SuiteError
from xaytune.core.limits import LimitError, check_json_text, clip, quote, read_bounded

__all__ = [
    "ASSIGNMENT_ALGORITHM",
    "MANIFEST_FILE",
    "REFERENCES_FILE",
    "SUITE_SCHEMA",
    "TASKS_FILE",
    "Attachment",
    "BenchmarkSuite",
    "Reference",
    "SeededSample",
    "SuiteManifest",
    "SuiteSource",
    "Task",
    "TaskAssignment",
    "TaskEnvironment",
    "TaskTool",
    "record_assignment",
    "suite_digest",
]

MANIFEST_FILE = "suite.json"
TASKS_FILE = "tasks.jsonl"
REFERENCES_FILE = "references.jsonl"


def check_task_input(task: Task, *, where: str, line_bytes: int | None = None) -> None:
    """Refuse (``too-large``) a task whose input, as canonical JSON, passes
    :data:`~xaytune.core.limits.MAX_TASK_INPUT_BYTES`; ``line_bytes`` (the size of the
    line it was read from, when known) skips the count for a line that cannot hold one."""
    if line_bytes is not None and line_bytes <= limits.MAX_TASK_INPUT_BYTES:
        return
    try:
        size = len(canonical_bytes(task.input))
    except FingerprintError as error:
        raise SuiteError(error.reason, f"{where}: task {task.id!r}: input: {error}") from None
    if size > limits.MAX_TASK_INPUT_BYTES:
        raise SuiteError(
            "too-large",
            f"{where}: task {task.id!r}: input is {size:,} bytes as JSON; the limit is "
            f"{limits.MAX_TASK_INPUT_BYTES:,} (MAX_TASK_INPUT_BYTES)",
        )


def _read_jsonl(path: Path, model: type[BaseModel]) -> list[Any]:
    records = []
    for number, raw in suite_lines(path):
        if not raw.strip():
            continue
        where = f"{path}: line {number}"
        try:
            check_json_text(
                raw,
                what=where,
                max_size=limits.MAX_SUITE_LINE_BYTES,
                size_name="MAX_SUITE_LINE_BYTES",
            )
            record = model.model_validate_json(raw)
        except LimitError as error:
            raise SuiteError(error.reason, error.detail) from None
        except ValidationError as error:
            first = error.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "line"
            raise SuiteError("bad-record", f"{where}: {clip(loc)}: {first['msg']}") from None
        if isinstance(record, Task):
            check_task_input(record, where=where, line_bytes=len(raw))
        records.append(record)
    return records


class SuiteSource:
    """Reads a pinned suite from a directory, verifying every digest on open.

    The only door to references: harnesses, specs, trajectories and released
    reports get :attr:`suite` (public part); evaluators call :meth:`reference`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.manifest = self._read_manifest()
        self._verify_files()
        tasks = _read_jsonl(self.path / TASKS_FILE, Task)
        if len(tasks) != self.manifest.task_count:
            raise SuiteError(
                "task-count-mismatch",
                f"{self.path / TASKS_FILE}: {len(tasks)} tasks, manifest says "
                f"{self.manifest.task_count}",
            )
        self.suite = BenchmarkSuite(
            name=self.manifest.name,
            version=self.manifest.version,
            digest=self.manifest.digest,
            tasks=tuple(tasks),
        )
        self._references: dict[str, Reference] | None = None

    def _read_manifest(self) -> SuiteManifest:
        path = self.path / MANIFEST_FILE
        try:
            size, size_name = limits.MAX_JSON_FILE_BYTES, "MAX_JSON_FILE_BYTES"
            raw = read_bounded(path, size, size_name=size_name)
            check_json_text(raw, what=str(path), max_size=size, size_name=size_name)
        except OSError as error:
            raise SuiteError("suite-missing", f"{path}: cannot read ({error.strerror})") from None
        except LimitError as error:
            raise SuiteError(error.reason, error.detail) from None
        try:
            manifest = SuiteManifest.model_validate_json(raw)
        except ValidationError as error:
            first = error.errors()[0]
            where = clip(".".join(str(p) for p in first["loc"]))
            raise SuiteError("bad-manifest", f"{path}: {where}: {first['msg']}") from None
        if manifest.schema_ != SUITE_SCHEMA:
            raise SuiteError("bad-manifest", f"{path}: schema {quote(manifest.schema_)} is not v1")
        if set(manifest.files) != {TASKS_FILE, REFERENCES_FILE}:
            raise SuiteError(
                "bad-manifest", f"{path}: files must be {TASKS_FILE} and {REFERENCES_FILE}"
            )
        if manifest.digest != manifest.expected_digest():
            raise SuiteError("digest-mismatch", f"{path}: suite digest does not match its facts")
        if manifest.task_count > limits.MAX_SUITE_TASKS:
            raise SuiteError(
                "too-large",
                f"{path}: {manifest.task_count:,} tasks; the limit is "
                f"{limits.MAX_SUITE_TASKS:,} (MAX_SUITE_TASKS)",
            )
        return manifest

    def _verify_files(self) -> None:
        for name, expected in self.manifest.files.items():
            path = self.path / name
            actual = file_sha256(path)
            if actual != expected:
                raise SuiteError(
                    "digest-mismatch", f"{path}: sha256 {actual} does not match the manifest"
                )

    @property
    def digest(self) -> str:
        return self.manifest.digest

    def _load_references(self) -> dict[str, Reference]:
        if self._references is None:
            path = self.path / REFERENCES_FILE
            # The bytes were verified on open; re-verify so an edit since then is caught.
            if file_sha256(path) != self.manifest.files[REFERENCES_FILE]:
                raise SuiteError("digest-mismatch", f"{path}: changed since the suite was opened")
            references = {ref.id: ref for ref in _read_jsonl(path, Reference)}
            if set(references) != set(self.suite.task_ids):
                raise SuiteError(
                    "reference-mismatch", f"{path}: references do not cover exactly the tasks"
                )
            self._references = references
        return self._references

    def reference(self, task_id: str) -> Reference:
        """The held-out reference of ``task_id`` (evaluators only)."""
        references = self._load_references()
        try:
            return references[task_id]
        except KeyError:
            raise SuiteError(
                "unknown-task", f"task {task_id!r} is not in suite {self.suite.name}"
            ) from None

    def reference_strings(self) -> tuple[str, ...]:
        """Every reference answer (a structured one as canonical JSON): for leakage
        checks over released material."""
        return tuple(ref.text for ref in self._load_references().values())
