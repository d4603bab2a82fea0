"""Models: the async protocol, a deterministic simulator, an OpenAI-compatible client
and price tables."""

from xaytune.models._prices import ModelPrices, PriceTier
from xaytune.models._protocol import (
    ContextOverflowError,
    FinishReason,
    Message,
    Model,
    ModelError,
    ModelIdentity,
    ModelReply,
    ModelRequest,
    Role,
    ToolCall,
    ToolSchema,
    TransientModelError,
    Usage,
)
from xaytune.models.simulated import SimulatedModel

__all__ = [
    "ContextOverflowError",
    "FinishReason",
    "Message",
    "Model",
    "ModelError",
    "ModelIdentity",
    "ModelPrices",
    "ModelReply",
    "ModelRequest",
    "OpenAICompatibleModel",
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
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
