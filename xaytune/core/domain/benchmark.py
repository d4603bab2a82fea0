"""Pinned benchmarks, seeded samples and task assignments.

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
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from xaytune.core import limits
from xaytune.core.canonical import MAX_SAFE_INTEGER, canonical_bytes, fingerprint
from xaytune.core.errors import FingerprintError, SuiteError
from xaytune.core.frozen import share_fields_set
from xaytune.core.ids import is_valid_id
from xaytune.core.limits import (
    LimitError,
    check_json_text,
    clip,
    hash_bounded,
    iter_lines,
    loads,
    quote,
    read_bounded,
)

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
]

SUITE_SCHEMA = "xaytune.suite/v1"
MANIFEST_FILE = "suite.json"
TASKS_FILE = "tasks.jsonl"
REFERENCES_FILE = "references.jsonl"
# Ranks task ids by sha256(seed, suite digest, id): no library RNG stream, so the
# selection is the same on every machine and every library version.
ASSIGNMENT_ALGORITHM = "sha256-rank/v1"

_FROZEN = ConfigDict(frozen=True, extra="forbid")
JsonScalar = str | int | float | bool | None


class Attachment(BaseModel):
    """A file a task declares (binding refuses tasks with attachments in H06)."""

    model_config = _FROZEN

    name: str
    media_type: str = "application/octet-stream"
    sha256: str | None = None


# The function-name rule of OpenAI-compatible endpoints (the toolbox's rule too).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class TaskTool(BaseModel):
    """A tool a task declares: what the model is offered (its name, description and
    JSON-schema parameters); the task's environment implements it."""

    model_config = _FROZEN

    name: str
    description: str = ""
    parameters: dict[str, Any]

    @model_validator(mode="after")
    def _valid(self) -> TaskTool:
        if not _TOOL_NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must match [A-Za-z0-9_-]{{1,64}}")
        if self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be an object schema")
        return self


class TaskEnvironment(BaseModel):
    """The environment that implements a task's tools: its registered name (or dotted
    path), the params that set its initial state, and its pinned code identity (filled
    in when the suite is built; see ``xaytune.plugins.resolve_environment``)."""

    model_config = _FROZEN

    name: str = Field(min_length=1)
    params: dict[str, Any] = {}
    code: dict[str, str] | None = None


class Task(BaseModel):
    """The public part of one task: what a harness may see.

    An agent benchmark's task may also have ``turns`` (the user messages that follow
    the first one, each sent once the agent has finished the one before), ``tools``
    (offered to the model for this task only) and the ``environment`` implementing
    them (a fresh instance per attempt). Tools and an environment come together. All
    three are left out of a task's line when absent, so suites without them keep
    their digests.
    """

    model_config = _FROZEN

    id: str
    input: dict[str, JsonScalar]
    attachments: tuple[Attachment, ...] = ()
    metadata: dict[str, Any] = {}
    turns: tuple[str, ...] = ()
    tools: tuple[TaskTool, ...] = ()
    environment: TaskEnvironment | None = None

    @model_validator(mode="after")
    def _valid_id(self) -> Task:
        if not is_valid_id(self.id):
            raise ValueError(f"task id {self.id!r} is not a valid id")
        if bool(self.tools) != (self.environment is not None):
            raise ValueError(
                f"task {self.id}: tools and an environment come together (tools "
                f"{len(self.tools)}, environment {'none' if self.environment is None else 'one'})"
            )
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names):
            raise ValueError(f"task {self.id}: a tool is declared twice")
        return self

    def model_post_init(self, __context: Any) -> None:
        share_fields_set(self)  # a suite holds up to 100,000 of these


class Reference(BaseModel):
    """The held-out part of one task. Only :class:`SuiteSource` hands these out.

    ``answer`` is text, or JSON data for a structured reference (a call list per turn,
    an expected final state); :attr:`text` is what a scorer is given.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    answer: str | dict[str, Any] | list[Any]

    @property
    def text(self) -> str:
        """The answer as a scorer sees it: the text, or the structured answer as
        canonical JSON."""
        if isinstance(self.answer, str):
            return self.answer
        return canonical_bytes(self.answer).decode()

    def model_post_init(self, __context: Any) -> None:
        share_fields_set(self)


class SuiteManifest(BaseModel):
    """``suite.json``: what pins a suite."""

    model_config = _FROZEN

    schema_: str = Field(alias="schema")
    name: str
    version: str
    task_count: int
    files: dict[str, str]
    digest: str

    def expected_digest(self) -> str:
        """The suite digest recomputed from the manifest's own facts."""
        return suite_digest(
            name=self.name, version=self.version, task_count=self.task_count, files=self.files
        )


def suite_digest(*, name: str, version: str, task_count: int, files: Mapping[str, str]) -> str:
    """The digest that pins a suite: over its name, version, task count and file digests."""
    return fingerprint(
        {
            "schema": SUITE_SCHEMA,
            "name": name,
            "version": version,
            "task_count": task_count,
            "files": dict(files),
        }
    )


class BenchmarkSuite(BaseModel):
    """A pinned suite's public part: tasks, no references."""

    model_config = _FROZEN

    name: str
    version: str
    digest: str
    tasks: tuple[Task, ...]
    _index: dict[str, int] = PrivateAttr(default_factory=dict)

    def model_post_init(self, __context: Any) -> None:
        index: dict[str, int] = {}
        for i, task in enumerate(self.tasks):
            if task.id in index:
                raise SuiteError("duplicate-task", f"suite {self.name}: task id {task.id} twice")
            index[task.id] = i
        self._index = index

    @property
    def task_ids(self) -> tuple[str, ...]:
        return tuple(task.id for task in self.tasks)

    def task(self, task_id: str) -> Task:
        """The task with ``task_id``; refused with ``unknown-task`` if absent."""
        try:
            return self.tasks[self._index[task_id]]
        except KeyError:
            raise SuiteError(
                "unknown-task", f"task {task_id!r} is not in suite {self.name}"
            ) from None

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._index


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


def _suite_lines(path: Path) -> Iterable[tuple[int, bytes]]:
    """The lines of a suite file or source, within the line and file limits."""
    try:
        yield from iter_lines(path)
    except LimitError as error:
        raise SuiteError(error.reason, error.detail) from None


def _file_sha256(path: Path) -> str:
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


def _read_jsonl(path: Path, model: type[BaseModel]) -> list[Any]:
    records = []
    for number, raw in _suite_lines(path):
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
            actual = _file_sha256(path)
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
            if _file_sha256(path) != self.manifest.files[REFERENCES_FILE]:
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


class SeededSample(BaseModel):
    """Which tasks a seed selects: ``count`` tasks, or every task when None."""

    model_config = _FROZEN

    count: int | None = None

    @model_validator(mode="after")
    def _positive(self) -> SeededSample:
        if self.count is not None and self.count < 1:
            raise ValueError("SeededSample.count must be at least 1 (or None for every task)")
        return self


class TaskAssignment(BaseModel):
    """The tasks a (suite, sampling, seed) selects, in order, and its own digest."""

    model_config = _FROZEN

    suite_name: str
    suite_digest: str
    sampling: SeededSample
    algorithm: str
    seed: int
    task_ids: tuple[str, ...]
    digest: str
    _positions: dict[str, int] = PrivateAttr(default_factory=dict)

    def model_post_init(self, __context: Any) -> None:
        expected = fingerprint(self.model_dump(mode="json", exclude={"digest"}))
        if self.digest != expected:
            raise SuiteError(
                "digest-mismatch", f"assignment for seed {self.seed}: digest is not its contents'"
            )
        self._positions = {task_id: i for i, task_id in enumerate(self.task_ids)}

    def position(self, task_id: str) -> int | None:
        """Position 0..n-1 of ``task_id``, or None when it is not assigned."""
        return self._positions.get(task_id)


def _rank_key(seed: int, digest: str, task_id: str) -> bytes:
    return hashlib.sha256(f"{seed}\x1f{digest}\x1f{task_id}".encode()).digest()


def record_assignment(
    suite: BenchmarkSuite, sampling: SeededSample, *, seed: int
) -> TaskAssignment:
    """Select tasks by ranking ids on sha256(seed, suite digest, id); record the result."""
    if isinstance(seed, bool) or not isinstance(seed, int) or abs(seed) > MAX_SAFE_INTEGER:
        raise SuiteError("bad-seed", f"seed {seed!r} is not an integer within 2^53")
    count = len(suite.tasks) if sampling.count is None else sampling.count
    if count > len(suite.tasks):
        raise SuiteError(
            "sample-too-large",
            f"sampling asks for {count} tasks; suite {suite.name} has {len(suite.tasks)}",
        )
    ranked = sorted(suite.task_ids, key=lambda task_id: _rank_key(seed, suite.digest, task_id))
    facts = {
        "suite_name": suite.name,
        "suite_digest": suite.digest,
        "sampling": sampling.model_dump(mode="json"),
        "algorithm": ASSIGNMENT_ALGORITHM,
        "seed": seed,
        "task_ids": ranked[:count],
    }
    return TaskAssignment(**facts, digest=fingerprint(facts))


def load_jsonl_objects(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) from a JSONL file; one-line errors name the line.

    Bounded (:mod:`xaytune.core.limits`): the file's size, each line's length, its
    depth and its integers' digits. Refused as ``bad-json``: what is not JSON, not an
    object, not UTF-8 text, or has a duplicate key or a NaN/Infinity literal.
    """
    for number, raw in _suite_lines(path):
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
