"""Model adapters: how xaytune talks to a model, and how to bring your own.

An adapter is a class (or a factory function) registered with :func:`model_adapter`
or named by ``model._target_``, whose instances meet the :class:`Model` protocol: an
``identity`` property giving a pinned :class:`ModelIdentity` (provider, model,
revision, parameters: a C4 facet) and ``async def complete(request: ModelRequest) ->
ModelReply`` (text and/or :class:`ToolCall` s, with the :class:`Usage` the server
reported; an ``async def aclose()`` is called when the run ends)::

    from xaytune.model import ModelIdentity, ModelReply, ModelRequest, Usage, model_adapter

    @model_adapter(version="1")
    class EchoModel:
        def __init__(self, *, seed: int) -> None:
            self.seed = seed

        @property
        def identity(self) -> ModelIdentity:
            return ModelIdentity(provider="me", model="echo", revision="1", parameters={})

        async def complete(self, request: ModelRequest) -> ModelReply:
            text = request.messages[-1].content or ""
            usage = Usage(input_tokens=len(text) // 4 + 1, output_tokens=1)
            return ModelReply(text=text, tool_calls=(), usage=usage, finish_reason="stop")

It is built with the params of ``model:``, plus ``seed=<replicate seed>`` when its
``__init__`` takes a ``seed`` that config does not set. Raise
:class:`TransientModelError` for a failure the harness may retry (connection, 5xx,
timeout), :class:`ContextOverflowError` for a request too long, and :class:`ModelError`
with a reason word for a definitive refusal (those in :data:`DEFINITIVE_REASONS` say the
endpoint itself is wrong, so the run stops instead of failing every task).
:class:`ModelPrices` (USD per million tokens) prices a run. :class:`SimulatedModel` is
the deterministic offline model.
"""

from xaytune.models import (
    DEFINITIVE_REASONS,
    ContextOverflowError,
    FinishReason,
    Message,
    Model,
    ModelError,
    ModelIdentity,
    ModelPrices,
    ModelReply,
    ModelRequest,
    PriceTier,
    Role,
    SimulatedModel,
    ToolCall,
    ToolSchema,
    TransientModelError,
    Usage,
)
from xaytune.plugins import model_adapter

__all__ = [
    "DEFINITIVE_REASONS",
    "ContextOverflowError",
    "FinishReason",
    "Message",
    "Model",
    "ModelError",
    "ModelIdentity",
    "ModelPrices",
    "ModelReply",
    "ModelRequest",
    "PriceTier",
    "Role",
    "SimulatedModel",
    "ToolCall",
    "ToolSchema",
    "TransientModelError",
    "Usage",
    "model_adapter",
]
