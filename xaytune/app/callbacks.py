"""Hydra callbacks: a multirun sweep's comparison is written at the sweep root."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from xaytune.core.errors import XaytuneError

__all__ = ["GatherSweep"]


class GatherSweep(Callback):
    """``on_multirun_end``: gather every job's replicates and compare them once.

    Its multirun start hook ends the composition phase
    (:func:`~xaytune.app.composition.composition_done`): what fails from there on (a job)
    is reported as Hydra reports it. A single run ends it when the task starts, so a
    failure to create the run directory is still one line.
    """

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from xaytune.app.composition import composition_done

        composition_done()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from xaytune.app.main import finish_sweep

        try:
            root = Path(config.hydra.sweep.dir)
            code = finish_sweep(config, root)
            if code is None:  # a dry sweep: every job printed its estimate and kept nothing
                _discard_dry_sweep(root)
                return
        except XaytuneError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(2)
        if code:
            sys.exit(code)


def _discard_dry_sweep(root: Path) -> None:
    """Remove a dry run's sweep directory: Hydra wrote only its multirun.yaml there."""
    if root.is_dir() and {entry.name for entry in root.iterdir()} <= {"multirun.yaml"}:
        shutil.rmtree(root, ignore_errors=True)
