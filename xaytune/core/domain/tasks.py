"""A suite's records: its tasks, their references, its manifest and its public part.

``Task`` is one line of ``tasks.jsonl`` (the public part), ``Reference`` one line of
``references.jsonl`` (the held-out part, handed out by ``SuiteSource`` only),
``SuiteManifest`` is ``suite.json`` and :func:`suite_digest` the digest that pins a
suite (C1 cohort); ``BenchmarkSuite`` is what a harness may see: tasks, no references.
Reading them from disk is :mod:`xaytune.core.domain.benchmark`, the specification's
import path for every name here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from xaytune.core.canonical import canonical_bytes, fingerprint
from xaytune.core.errors import SuiteError
from xaytune.core.frozen import share_fields_set
from xaytune.core.ids import is_valid_id

__all__ = [
    "SUITE_SCHEMA",
    "Attachment",
    "BenchmarkSuite",
    "JsonScalar",
    "Reference",
    "SuiteManifest",
    "Task",
    "TaskEnvironment",
    "TaskTool",
    "suite_digest",
]

SUITE_SCHEMA = "xaytune.suite/v1"

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
