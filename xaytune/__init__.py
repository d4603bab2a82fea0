"""xaytune: honest, local evaluation of LLM agent harnesses on pinned benchmarks.

``xaytune.run(config)`` runs an experiment from a dict, without Hydra
(:mod:`xaytune.experiment.api`); it is imported on first use, so ``import xaytune``
stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xaytune.experiment.api import run
    from xaytune.experiment.results import ExperimentResult

__all__ = ["ExperimentResult", "__version__", "run"]

from xaytune.core.version import __version__

# Loaded on first use (PEP 562): the experiment stack is heavy and most commands
# (``--help``, the viewer, verify) never run one.
_LAZY = {
    "run": "xaytune.experiment.api",
    "ExperimentResult": "xaytune.experiment.results",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'xaytune' has no attribute {name!r}")
