"""Models: the async protocol, a deterministic simulator, OpenAI-compatible and
Anthropic Messages clients, and price tables."""

from xaytune.models.prices import ModelPrices, PriceTier
from xaytune.models.protocol import (
    DEFINITIVE_REASONS,
    ContextOverflowError,
    EndpointIdentity,
    FinishReason,
    Message,
    Model,
    ModelError,
    ModelIdentity,
    ModelReply,
    ModelRequest,
    PreflightModel,
    Role,
    ToolCall,
    ToolSchema,
    TransientModelError,
    Usage,
)
from xaytune.models.simulated import SimulatedModel

__all__ = [
    "DEFINITIVE_REASONS",
    "AnthropicModel",
    "ContextOverflowError",
    "EndpointIdentity",
    "FinishReason",
    "Message",
    "Model",
    "ModelError",
    "ModelIdentity",
    "ModelPrices",
    "ModelReply",
    "ModelRequest",
    "OpenAICompatibleModel",
    "PreflightModel",
    "PriceTier",
    "Role",
    "SimulatedModel",
    "ToolCall",
    "ToolSchema",
    "TransientModelError",
    "Usage",
]


def __getattr__(name: str) -> object:
    # The HTTP client (aiohttp, ~0.3 s to import) is loaded with the adapter that uses it:
    # a run on the simulated model, or a config check, never needs it.
    if name == "OpenAICompatibleModel":
        from xaytune.models.openai_compatible import OpenAICompatibleModel

        return OpenAICompatibleModel
    if name == "AnthropicModel":
        from xaytune.models.anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
