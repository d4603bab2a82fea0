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
from xaytune.models.openai_compatible import OpenAICompatibleModel
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
