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
    "DEFINITIVE_REASONS",
    "ContextOverflowError",
    "EndpointIdentity",
    "FinishReason",
    "Message",
    "Model",
    "ModelError",
    "ModelIdentity",
    "ModelReply",
    "ModelRequest",
    "PreflightModel",
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


class EndpointIdentity(BaseModel):
    """What a preflight found an endpoint to be: enters the evidence cache's key.

    ``provider``, ``base_url`` (no trailing ``/``) and ``model`` are the configuration;
    ``served_model`` (the ``model`` a reply names), ``system_fingerprint`` (where the API
    reports one: OpenAI, llama.cpp) and ``model_entry`` (the scalar fields of the
    endpoint's own entry for the model in its models list, without the volatile
    ``created``; None when the endpoint has no such list or entry) are what the server
    says it serves. ``model_dump(mode="json")`` is canonical-JSON-able.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    provider: str
    base_url: str
    model: str
    served_model: str | None = None
    system_fingerprint: str | None = None
    model_entry: dict[str, str | int | bool] | None = None


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
    provider's prompt cache), ``cache_write_tokens`` (a part of ``input_tokens``:
    prompt tokens written to the cache, which some providers bill above the input
    price) and ``reasoning_tokens`` (a part of ``output_tokens``: hidden reasoning) are
    None when the provider did not report them: unknown, never zero.
    """

    input_tokens: int
    output_tokens: int
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_write_tokens: int | None = None

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


# The reasons that say the ENDPOINT is wrong, not this call: every later call would fail
# the same way, so a run stops instead of scoring each task as a model error.
#   model-auth       credentials refused (401/403) or the key's variable is not set
#   model-unknown    the endpoint does not serve the model (404, "model not found")
#   model-malformed  the reply is not the protocol's (not JSON, an HTML page, no choices
#                    or content, a shape or a limit broken)
#   usage-missing    the reply reports no token usage (spend cannot be accounted)
DEFINITIVE_REASONS: frozenset[str] = frozenset(
    {"model-auth", "model-unknown", "model-malformed", "usage-missing"}
)


@runtime_checkable
class PreflightModel(Protocol):
    """A model behind an endpoint that can be checked before a run (the HTTP adapters).

    ``preflight`` makes the cheapest calls that prove the endpoint answers this model
    (list/get the model where the API allows, then one completion of one token parsed
    as a real reply) and returns what it found; a failure raises :class:`ModelError`
    with a stable reason (``model-unreachable``, ``model-auth``, ``model-unknown``,
    ``model-malformed``, ``usage-missing``, ``model-error``).
    """

    @property
    def identity(self) -> ModelIdentity: ...

    async def complete(self, request: ModelRequest) -> ModelReply: ...

    async def preflight(self) -> EndpointIdentity: ...

    async def aclose(self) -> None: ...


class ModelError(XaytuneError):
    """A model call failed for good (reason e.g. ``model-auth``, ``model-unknown``).

    ``retries`` is how many transport retries were spent before giving up; they are
    counted in the attempt's spend. :attr:`definitive` says whether the failure is the
    endpoint's (its reason is in :data:`DEFINITIVE_REASONS`) rather than this call's.
    """

    def __init__(self, reason: str, message: str, *, retries: int = 0) -> None:
        super().__init__(reason, message)
        self.retries = retries

    @property
    def definitive(self) -> bool:
        """True when every call to this endpoint would fail the same way (stop the run)."""
        return self.reason in DEFINITIVE_REASONS


class TransientModelError(ModelError):
    """A failure worth retrying under the harness's model-retry policy."""

    def __init__(self, message: str, *, retries: int = 0) -> None:
        super().__init__("model-transient", message, retries=retries)


class ContextOverflowError(ModelError):
    """The request does not fit the model's context window."""

    def __init__(self, message: str, *, retries: int = 0) -> None:
        super().__init__("context-overflow", message, retries=retries)
