"""The model protocol: messages and tool schemas in; text/tool calls and usage out.

Records here are frozen dataclasses: they are built in the agent loop's hot path
from already-validated data. ``ModelIdentity`` is a pydantic record because it is
pinned into execution specs and fingerprints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from xaytune.core.errors import XaytuneError

__all__ = [
    "ContextOverflowError",
    "FinishReason",
    "Message",
    "Model",
    "ModelError",
    "ModelIdentity",
    "ModelReply",
    "ModelRequest",
    "Role",
    "ToolCall",
    "ToolSchema",
    "TransientModelError",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter"]


class ModelIdentity(BaseModel):
    """Pinned identity of a model: enters the execution spec and the C4 facets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    model: str
    revision: str
    parameters: dict[str, Any] = {}


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool offered to the model: name, description, JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call requested by the model. ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. ``tool_call_id`` is set on ``tool`` messages."""

    role: Role
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported for one model call.

    ``cached_tokens`` (a part of ``input_tokens``: prompt tokens served from the
    provider's prompt cache) and ``reasoning_tokens`` (a part of ``output_tokens``:
    hidden reasoning) are None when the provider did not report them: unknown, never
    zero.
    """

    input_tokens: int
    output_tokens: int
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call.

    ``sampling_key`` is a deterministic key for this call (harness declaration, task,
    seed, replicate, attempt, turn): a simulated model derives its randomness from it,
    a real endpoint may pass a derived integer as its ``seed`` parameter.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    max_output_tokens: int | None = None
    sampling_key: str = ""


@dataclass(frozen=True, slots=True)
class ModelReply:
    """A model's reply. ``retries`` counts transport retries made inside the adapter."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    finish_reason: FinishReason
    retries: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Model(Protocol):
    """What the agent loop needs from a model."""

    @property
    def identity(self) -> ModelIdentity: ...

    async def complete(self, request: ModelRequest) -> ModelReply: ...


class ModelError(XaytuneError):
    """A model call failed for good (reason e.g. ``model-auth``, ``model-unknown``).

    ``retries`` is how many transport retries were spent before giving up; they are
    counted in the attempt's spend.
    """

    def __init__(self, reason: str, message: str, *, retries: int = 0) -> None:
        super().__init__(reason, message)
        self.retries = retries


class TransientModelError(ModelError):
    """A failure worth retrying under the harness's model-retry policy."""

    def __init__(self, message: str, *, retries: int = 0) -> None:
        super().__init__("model-transient", message, retries=retries)


class ContextOverflowError(ModelError):
    """The request does not fit the model's context window."""

    def __init__(self, message: str, *, retries: int = 0) -> None:
        super().__init__("context-overflow", message, retries=retries)
