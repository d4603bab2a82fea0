"""Ask every HTTP endpoint who it is before anything is written or run (issue 29).

:func:`preflight_endpoints` sends each HTTP model a run will call (the experiment's
``model``, each entry of ``models:``, each judge model) the adapter's one-token
preflight, once per distinct model config, after the config is validated and before the
run tree is written. A refusal is the adapter's ``ModelError`` (``model-unreachable``,
``model-auth``, ``model-unknown``, ``model-malformed``, ``usage-missing``, ...), whose
one line names the endpoint and the cause; the caller exits 2 and keeps no tree. A dry
run does not preflight: it stays offline.

The identity each endpoint reports (served model, ``system_fingerprint``, its own
``/models`` entry) is remembered for this process and goes into the evidence cache key
through :func:`endpoint_key`, so evidence from another endpoint, or from the same
endpoint serving another model under one name, is never reused. A model config with
``preflight: false`` is not asked; its replicates neither read nor store cache entries,
since what it serves is unknown (the cache must never replay evidence it cannot vouch
for). The simulator, scripted and local models have no preflight and keep their keys.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xaytune.core.canonical import canonical_bytes
from xaytune.experiment.attempt_errors import replicate_errors
from xaytune.experiment.config import AnthropicModelConfig, ModelConfig, OpenAICompatibleModelConfig
from xaytune.experiment.model_adapters import build_model

if TYPE_CHECKING:
    from xaytune.harness.evidence import HarnessRunEvidence

__all__ = [
    "HTTP_MODEL_CONFIGS",
    "endpoint_key",
    "forget_served",
    "model_error_counts",
    "preflight_endpoints",
    "unvouched",
]

HTTP_MODEL_CONFIGS = (OpenAICompatibleModelConfig, AnthropicModelConfig)

# canonical JSON of a model config -> the identity its endpoint reported this process.
_SERVED: dict[bytes, dict[str, Any]] = {}


def forget_served() -> None:
    """Forget every endpoint's reported identity: a new run (``xaytune.run`` called again
    in one process) asks each endpoint again, as a new process would; an endpoint that
    now serves another model must not vouch for the evidence of the one before."""
    _SERVED.clear()


def _config_key(config: ModelConfig) -> bytes:
    return canonical_bytes(config.model_dump(mode="json"))


def preflight_endpoints(configs: Iterable[ModelConfig | None]) -> None:
    """Preflight each distinct HTTP model config in ``configs`` with ``preflight`` on
    (None entries, an evaluator without a judge model, are skipped).

    Raises the adapter's ``ModelError`` for the first endpoint that refuses."""
    for config in configs:
        if config is None or not isinstance(config, HTTP_MODEL_CONFIGS) or not config.preflight:
            continue
        if _config_key(config) in _SERVED:
            continue
        model = build_model(config, seed=0)

        async def ask(model=model):
            try:
                return await model.preflight()
            finally:
                await model.aclose()  # the session belongs to this event loop

        identity = asyncio.run(ask())
        _SERVED[_config_key(config)] = identity.model_dump(mode="json")


def unvouched(config: ModelConfig) -> bool:
    """Whether ``config`` is an HTTP model whose endpoint identity is unknown (preflight
    off or not run): its evidence is neither reused from nor stored in the cache."""
    return isinstance(config, HTTP_MODEL_CONFIGS) and _config_key(config) not in _SERVED


def endpoint_key(config: ModelConfig) -> dict[str, Any] | None:
    """What the cache key adds for ``config``'s endpoint: its base URL and the identity
    its preflight reported; None for a model without an HTTP endpoint (the simulator's
    keys stay as they were)."""
    if not isinstance(config, HTTP_MODEL_CONFIGS):
        return None
    return {"base_url": config.base_url, "served": _SERVED.get(_config_key(config))}


def model_error_counts(
    evidence: HarnessRunEvidence, store_root: Path | None = None
) -> dict[str, Any]:
    """``tasks``, ``model_errors`` and ``error_causes`` (each model-error cause, the
    outcome detail's first line, which starts with the reason word, with its task
    count, most frequent first) of a verified replicate, as
    :func:`xaytune.experiment.attempt_errors.replicate_errors` counts them: from every attested
    outcome (and, given its ``store_root``, each unfinished task's last attempt), so a
    resumed or reused replicate counts as one run whole would."""
    counted = replicate_errors(evidence, store_root)
    return {
        "tasks": counted.tasks,
        "model_errors": counted.model_errors,
        "error_causes": tuple(
            (group.cause, group.tasks) for group in counted.causes if group.kind == "model-error"
        ),
    }
