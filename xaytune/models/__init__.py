"""Models: the async protocol, a deterministic simulator and an OpenAI-compatible client."""

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
    "ModelReply",
    "ModelRequest",
    "OpenAICompatibleModel",
    "Role",
    "SimulatedModel",
    "ToolCall",
    "ToolSchema",
    "TransientModelError",
    "Usage",
]
