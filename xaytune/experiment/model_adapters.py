"""The experiment's model, built through the plugin registry.

Every model config names its adapter in the registry (:mod:`xaytune.plugins`, kind
``model``): a built-in config by its ``kind`` (``simulated``, ``openai_compatible``,
``anthropic``, ``llama_cpp_local``: ``config.adapter``), a user's by ``_target_`` (a
registered name, an entry point or a dotted path). :func:`build_model` looks the adapter
up and calls it with the config's parameters; only the named adapter's module is
imported, so a simulated run never loads the HTTP client (aiohttp).

A built-in config's fields are its adapter's keyword arguments
(``config.adapter_params``), already validated by the config schema. A ``_target_``
adapter's ``params`` are free-form: they are checked against its ``__init__`` (or the
factory's signature), plus ``seed=<replicate seed>`` when it takes a ``seed`` the config
does not set, and what it builds must be a model adapter (``bad-part`` otherwise).

:func:`adapter_identity` is the code identity of the configured adapter (what the
manifest records, before anything is built); :func:`model_adapter_identity` that of the
class behind a built model (the C4 facet ``model_adapter``).
"""

from __future__ import annotations

import inspect
from typing import cast

from xaytune.core.errors import PluginError
from xaytune.experiment.config import ModelConfig, TargetModelConfig
from xaytune.models import Model, ModelIdentity
from xaytune.plugins import CodeIdentity, check_params, code_identity, lookup, parameters_model

__all__ = [
    "adapter_identity",
    "build_model",
    "build_target_model",
    "configured_adapter",
    "model_adapter_identity",
]


def _where(config: ModelConfig) -> str:
    return "model._target_" if isinstance(config, TargetModelConfig) else "model.kind"


def configured_adapter(config: ModelConfig) -> object:
    """The class or factory the registry holds for ``config``'s adapter (imported now)."""
    _, adapter = lookup("model", config.adapter, where=_where(config))
    return adapter


def build_model(config: ModelConfig, *, seed: int) -> Model:
    """The model a replicate runs against (a simulated one is seeded per replicate; one
    llama.cpp server per process is shared by the replicates)."""
    if isinstance(config, TargetModelConfig):  # free-form params: checked against the code
        return build_target_model(config, seed=seed)
    adapter = configured_adapter(config)
    assert callable(adapter)
    model: Model = adapter(**config.adapter_params(seed=seed))
    return model


def build_target_model(config: TargetModelConfig, *, seed: int) -> Model:
    """The user's model adapter named by ``model._target_``, built and checked."""
    where = "model._target_"
    target = configured_adapter(config)
    if not inspect.isclass(target) and not inspect.isfunction(target):
        raise PluginError("bad-part", f"{where}: {config.target} is not a class or factory")
    params = dict(config.params)
    model = parameters_model(target, skip=0, where=where)
    if "seed" in model.model_fields and "seed" not in params:
        params["seed"] = seed
    checked = check_params(model, params, where=where)
    try:
        built = target(**checked)
    except Exception as error:
        raise PluginError(
            "bad-part", f"{where}: {config.target}(...) raised {type(error).__name__}: {error}"
        ) from None
    identity = getattr(built, "identity", None)
    complete = getattr(built, "complete", None)
    if not isinstance(identity, ModelIdentity) or not inspect.iscoroutinefunction(complete):
        raise PluginError(
            "bad-part",
            f"{where}: {config.target} is not a model adapter (an `identity` property giving "
            "a ModelIdentity and an `async def complete(request)`)",
        )
    return cast("Model", built)  # checked just above: a model adapter


def adapter_identity(config: ModelConfig) -> CodeIdentity:
    """The code identity of the adapter ``config`` names (its registered name when it
    declares one, else its ``__name__``)."""
    adapter = configured_adapter(config)
    declared = getattr(adapter, "__xaytune_part__", None)
    name = declared[1] if isinstance(declared, tuple) else getattr(adapter, "__name__", "model")
    return code_identity("model", name, adapter, where="model")


def model_adapter_identity(model: Model) -> CodeIdentity:
    """The code identity of the adapter class behind ``model`` (a C4 facet)."""
    declared = getattr(type(model), "__xaytune_part__", None)
    name = declared[1] if isinstance(declared, tuple) else type(model).__name__
    return code_identity("model", name, model, where="model")
