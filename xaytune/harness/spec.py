"""Harness, its content, the compilation context and the execution spec."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from xaytune.core import limits
from xaytune.core.canonical import canonical_bytes, fingerprint, sha256_digest
from xaytune.core.domain.benchmark import BenchmarkSuite, Task
from xaytune.core.errors import ExecutionError
from xaytune.core.frozen import share_fields_set
from xaytune.core.harness_evaluation import TaskBinding
from xaytune.core.ids import is_valid_id
from xaytune.harness._answer import AnswerExtraction
from xaytune.models.prices import ModelPrices
from xaytune.models.protocol import ModelIdentity
from xaytune.plugins import CodeIdentity, PartRef

__all__ = [
    "ATTEMPT_TIMEOUT_S",
    "SPEC_SCHEMA",
    "AgentExecutionSpec",
    "AnswerExtraction",
    "Harness",
    "HarnessCompilationContext",
    "HarnessContent",
    "TrajectoryRecordingSpec",
]

SPEC_SCHEMA = "xaytune.agent-execution-spec/v1"
_FROZEN = ConfigDict(frozen=True, extra="forbid")
# A budget of a billion dollars per attempt is a typo, not a plan.
_MAX_COST_BUDGET_USD = 1e9
# The default deadline of one attempt, in seconds (Harness.attempt_timeout_s).
ATTEMPT_TIMEOUT_S = 600.0


class Harness(BaseModel):
    """A declarative, fingerprinted harness: what a candidate is.

    Instructions are templates over the task input (``{question}``) and the
    harness content (``{content.NAME}``). Budgets: ``max_turns`` model turns,
    ``token_budget`` total tokens across turns, ``tool_call_budget`` tool calls,
    ``cost_budget_usd`` dollars at the model's declared prices (the spec then pins
    the price table; see :meth:`ModelPrices.call_cost_bound` for unreported cached
    tokens). ``cost_budget_usd`` is left out of the declaration when unset, so a
    harness without it keeps the fingerprint it had before the field existed.
    ``context_window`` stops the loop before a turn whose context would exceed it.
    ``model_retries`` transient model failures are retried per turn;
    ``attempts_per_task`` attempts are made for a task whose attempt ends without
    an outcome (partial).

    Parts: ``tools`` and ``loop`` name a part each (a built-in or registered name, a
    dotted path, or ``{_target_: path, param: value}``); ``tool_timeout_s`` bounds one
    tool call. ``parts`` holds the code identity of every resolved part (filled in by
    :func:`xaytune.harness.parts.resolve_harness`): it is in the fingerprint, so
    changing a tool's or the loop's code changes the harness.
    """

    model_config = _FROZEN

    name: str
    system_prompt: str
    user_prompt: str = "{question}"
    tools: tuple[str | PartRef, ...] = ()
    loop: str | PartRef = "tool-loop"
    # Upper bounds: xaytune.core.limits (a budget of 10^30 turns is a typo, not a plan).
    max_turns: int = Field(default=8, ge=1, le=limits.MAX_TURNS)
    token_budget: int | None = Field(default=None, ge=1, le=limits.MAX_TOKEN_BUDGET)
    tool_call_budget: int | None = Field(default=None, ge=0, le=limits.MAX_TOOL_CALL_BUDGET)
    cost_budget_usd: float | None = Field(default=None, gt=0, le=_MAX_COST_BUDGET_USD)
    context_window: int | None = Field(default=None, ge=1, le=limits.MAX_CONTEXT_WINDOW)
    max_output_tokens: int | None = Field(default=None, ge=1, le=limits.MAX_CONTEXT_WINDOW)
    model_retries: int = Field(default=2, ge=0, le=limits.MAX_RETRIES)
    attempts_per_task: int = Field(default=1, ge=1, le=limits.MAX_ATTEMPTS_PER_TASK)
    answer: AnswerExtraction = AnswerExtraction()
    tool_timeout_s: float = Field(default=60.0, gt=0, le=limits.MAX_TIMEOUT_S)
    # The wall-clock deadline of one attempt (loop, model and tool calls together). Left
    # out of the declaration while it equals the default, so harnesses declared before
    # the field existed keep their fingerprints; any other value is declared and pinned.
    attempt_timeout_s: float = Field(default=ATTEMPT_TIMEOUT_S, gt=0, le=limits.MAX_TIMEOUT_S)
    parts: tuple[CodeIdentity, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Harness:
        if not is_valid_id(self.name):
            raise ValueError(f"harness name {self.name!r} is not a valid id")
        refs = [tool if isinstance(tool, str) else tool.model_dump_json() for tool in self.tools]
        if len(set(refs)) != len(refs):
            raise ValueError(f"harness {self.name}: a tool is requested twice")
        if self.parts:
            kinds = [part.kind for part in self.parts]
            if kinds.count("tool") != len(self.tools) or kinds.count("loop") != 1:
                raise ValueError(f"harness {self.name}: parts must identify each tool and the loop")
            names = [part.name for part in self.parts if part.kind == "tool"]
            if len(set(names)) != len(names):
                raise ValueError(f"harness {self.name}: two tools are named alike ({names})")
        return self

    @model_serializer(mode="wrap")
    def _declaration(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        plain = handler(self)
        if plain.get("cost_budget_usd", 0) is None:
            del plain["cost_budget_usd"]  # unset: the declaration (and fingerprint) as before
        if plain.get("attempt_timeout_s") == ATTEMPT_TIMEOUT_S:
            del plain["attempt_timeout_s"]  # the default: the declaration as before
        return plain

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names the model sees for ``tools``, in order.

        From ``parts`` once resolved; before that a tool given by plain name is its
        own name, and one given by path or with params is refused (``unresolved-part``).
        """
        if self.parts:
            return tuple(part.name for part in self.parts if part.kind == "tool")
        names = []
        for tool in self.tools:
            if not isinstance(tool, str) or "." in tool or ":" in tool:
                raise ExecutionError(
                    "unresolved-part",
                    f"harness {self.name}: tool {tool!r} is named by path or with params; "
                    "resolve the harness first (xaytune.harness.resolve_harness)",
                )
            names.append(tool)
        return tuple(names)

    @property
    def fingerprint(self) -> str:
        """Canonical digest of the whole harness declaration.

        Computed from the fields on every read, never cached: ``model_copy(update=...)``
        skips validation and would carry a cached digest over to a different harness.
        """
        return fingerprint(self.model_dump(mode="json"))


class HarnessContent(BaseModel):
    """Named text blobs (prompts, rubrics) pinned by digest."""

    model_config = _FROZEN

    blobs: dict[str, str] = {}

    @model_validator(mode="after")
    def _names(self) -> HarnessContent:
        for name in self.blobs:
            if not is_valid_id(name):
                raise ValueError(f"content name {name!r} is not a valid id")
        return self

    @property
    def digests(self) -> dict[str, str]:
        """sha256 of each blob's UTF-8 bytes."""
        return {name: sha256_digest(text.encode()) for name, text in sorted(self.blobs.items())}


WRITER_V1 = "xaytune.trajectory/v1"


class TrajectoryRecordingSpec(BaseModel):
    """How the trajectory is recorded: the writer id (the v1 hash-chained JSONL)."""

    model_config = _FROZEN

    writer: str = WRITER_V1

    @model_validator(mode="after")
    def _known_writer(self) -> TrajectoryRecordingSpec:
        if self.writer != WRITER_V1:
            raise ValueError(f"unknown trajectory writer {self.writer!r}")
        return self


@dataclass(frozen=True, kw_only=True)
class HarnessCompilationContext:
    """What a harness is compiled against.

    Without ``task_binding`` the result is the plain agent spec. With it the spec is
    task-bound: ``config["task"]`` carries the binding and input, ``trajectory`` is
    mandatory, and ``suite`` must be the binding's suite. ``prices`` is the model's
    price table: a harness with a ``cost_budget_usd`` needs it, and its spec pins it
    (``config["prices"]``).
    """

    task: Task | None = None
    seed: int = 0
    replicate: int = 0
    authorized_tools: frozenset[str] | tuple[str, ...] | list[str] = frozenset()
    content: HarnessContent = field(default_factory=HarnessContent)
    output_uri: str | None = None
    trajectory: TrajectoryRecordingSpec | None = None
    task_binding: TaskBinding | None = None
    suite: BenchmarkSuite | None = None
    model: ModelIdentity | None = None
    prices: ModelPrices | None = None


def _harness_identity(harness: Harness) -> tuple[str, bytes]:
    """``harness.fingerprint`` and the canonical bytes of its dump as a spec holds it,
    once per harness object.

    Compiling a replicate builds one spec per task from the same harness object;
    the memo holds that object (so its id is not reused) and a harness is frozen all
    the way down, so a hit is that very object, unchanged. A copy made with
    ``model_copy(update=...)`` is another object and is fingerprinted afresh.
    """
    memo = _HARNESS_MEMO.get(id(harness))
    if memo is not None and memo[0] is harness:
        return memo[1], memo[2]
    digest = fingerprint(harness.model_dump(mode="json"))
    data = canonical_bytes(harness.model_dump(mode="json", by_alias=True))
    if len(_HARNESS_MEMO) >= 64:
        _HARNESS_MEMO.clear()
    _HARNESS_MEMO[id(harness)] = (harness, digest, data)
    return digest, data


def _harness_fingerprint(harness: Harness) -> str:
    """``harness.fingerprint``, once per harness object (:func:`_harness_identity`)."""
    return _harness_identity(harness)[0]


_HARNESS_MEMO: dict[int, tuple[Harness, str, bytes]] = {}


# Where a spec's harness goes in its canonical bytes: a string no spec field spells
# twice (checked on every use; otherwise the spec is encoded whole).
_HARNESS_HOLE = "\x00xaytune:harness-hole\x00"
_HARNESS_HOLE_BYTES = canonical_bytes(_HARNESS_HOLE)


def _spec_canonical(spec: AgentExecutionSpec) -> bytes:
    """``canonical_bytes`` of the spec's dump (without ``output_uri`` and
    ``fingerprint``), its harness spliced in from :func:`_harness_identity`: a
    replicate's specs share one harness, which is most of each spec's bytes. RFC 8785
    is compositional (an object's bytes within its parent are its own canonical bytes,
    and keys sort the same whatever their values), so the splice is the same bytes as
    encoding the whole dump (tests/harness/test_spec_canonical.py)."""
    rest = spec.model_dump(
        mode="json", by_alias=True, exclude={"output_uri", "fingerprint", "harness"}
    )
    rest["harness"] = _HARNESS_HOLE
    shape = canonical_bytes(rest)
    if shape.count(_HARNESS_HOLE_BYTES) != 1:  # a field spells the hole too
        rest["harness"] = spec.harness.model_dump(mode="json", by_alias=True)
        return canonical_bytes(rest)
    return shape.replace(_HARNESS_HOLE_BYTES, _harness_identity(spec.harness)[1], 1)


_SAMPLING_MEMO: dict[int, tuple[Harness, str]] = {}


def sampling_identity(harness: Harness) -> str:
    """The harness's digest without ``parts``: what a model's sampling keys derive from.

    Two runs of one harness declaration draw the same samples whatever the code of
    its parts (common random numbers: a change of a tool's code is compared on the
    same draws), while the fingerprint still tells the two runs apart.
    """
    memo = _SAMPLING_MEMO.get(id(harness))
    if memo is not None and memo[0] is harness:
        return memo[1]
    digest = fingerprint(harness.model_dump(mode="json", exclude={"parts"}))
    if len(_SAMPLING_MEMO) >= 64:
        _SAMPLING_MEMO.clear()
    _SAMPLING_MEMO[id(harness)] = (harness, digest)
    return digest


class AgentExecutionSpec(BaseModel):
    """A compiled, frozen, fingerprinted execution spec.

    ``fingerprint`` covers everything but ``output_uri`` (where an attempt is
    written is not what is executed), so the same config and seed give the same
    fingerprint on any machine and in any output tree.
    """

    model_config = _FROZEN

    schema_: Literal["xaytune.agent-execution-spec/v1"] = Field(default=SPEC_SCHEMA, alias="schema")
    harness: Harness
    harness_fingerprint: str
    seed: int
    replicate: int
    tools: tuple[str, ...]
    authorized_tools: tuple[str, ...]
    system_message: str
    user_message: str
    content_digests: dict[str, str]
    model: ModelIdentity | None
    trajectory: TrajectoryRecordingSpec | None
    config: dict[str, Any]
    output_uri: str | None = None
    fingerprint: str = ""

    _packed: bytes = PrivateAttr(default=b"")

    def model_post_init(self, __context: Any) -> None:
        if self.harness_fingerprint != _harness_fingerprint(self.harness):
            raise ValueError("spec harness_fingerprint is not its harness's")
        canonical = _spec_canonical(self)
        expected = sha256_digest(canonical)
        if not self.fingerprint:
            object.__setattr__(self, "fingerprint", expected)
        elif self.fingerprint != expected:
            raise ValueError("spec fingerprint is not its contents'")
        # Kept compressed: a replicate holds 100,000 specs, and these bytes would be a
        # third of each; unpacking them (once, when the spec is stored) is cheaper
        # than serialising the spec again. Not for a spec read back only to be
        # checked (validation context {"keep_canonical": False}).
        if not (isinstance(__context, dict) and __context.get("keep_canonical") is False):
            self._packed = zlib.compress(canonical, 1)
        task = self.config.get("task")
        if task is not None:
            TaskBinding.model_validate(task["binding"])  # refused here if it is not one
        if self.config.get("prices") is not None:
            ModelPrices.model_validate(self.config["prices"])  # likewise
        share_fields_set(self)

    @property
    def canonical(self) -> bytes:
        """The canonical bytes the fingerprint is computed over (stored as spec.json)."""
        # Read directly: attribute access to a pydantic private attribute costs an
        # AttributeError inside pydantic on every read.
        packed = self.__pydantic_private__["_packed"]  # type: ignore[index]
        if packed:
            return zlib.decompress(packed)
        return _spec_canonical(self)

    @property
    def binding(self) -> TaskBinding | None:
        """The task binding of a task-bound spec, else None.

        Built on each read (a few microseconds) rather than held: a replicate holds
        100,000 specs, and the binding is already in ``config["task"]``.
        """
        task = self.config.get("task")
        return None if task is None else TaskBinding.model_validate(task["binding"])

    @property
    def task_id(self) -> str | None:
        task = self.config.get("task")
        return None if task is None else task["binding"]["task_id"]

    @property
    def prices(self) -> ModelPrices | None:
        """The price table the spec pins (for its dollar budget), if any."""
        prices = self.config.get("prices")
        return None if prices is None else ModelPrices.model_validate(prices)
