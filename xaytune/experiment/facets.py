"""A replicate's execution facets (C4) and its timing environment.

Two sides are compared only under equal facets: the model (identity and parameters,
without the per-replicate seed), the toolbox version, the model adapter's code, the
runtime, the durability, and the price table when the model has one. Time metrics are
compared only within one declared timing environment.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.model_adapters import model_adapter_identity
from xaytune.harness import Toolbox
from xaytune.models import Model

__all__ = ["RUNTIME", "replicate_facets", "timing_environment"]

RUNTIME = "xaytune-local/v1"


def timing_environment() -> str:
    """The declared timing environment: time metrics compare only within one."""
    system = f"{platform.system()}-{platform.machine()}"
    return f"{system}-{os.cpu_count()}cpu-py{platform.python_version()}"


def replicate_facets(cfg: ExperimentConfig, model: Model, toolbox: Toolbox) -> dict[str, Any]:
    """The facets a replicate record declares for a run of ``model`` with ``toolbox``."""
    return {
        "model": model.identity.model_dump(mode="json", exclude={"parameters"})
        | {"parameters": _facet_parameters(model)},
        "toolbox": toolbox.version,
        "model_adapter": model_adapter_identity(model).model_dump(mode="json"),
        "runtime": RUNTIME,
        "durability": cfg.durability,
        **_price_facet(cfg),
    }


def _facet_parameters(model: Model) -> dict[str, object]:
    # A simulated model is seeded per replicate; the seed is the replicate's, not a
    # facet of the execution environment, so it is left out of C4.
    return {k: v for k, v in model.identity.parameters.items() if k != "seed"}


def _price_facet(cfg: ExperimentConfig) -> dict[str, object]:
    # The model's price table, when it has one: two sides priced differently are not
    # comparable (C4). No table, no facet: the facets are those of before.
    prices = cfg.model.prices
    return {} if prices is None else {"prices": prices.model_dump(mode="json")}
