"""The experiment's suite, opened from config."""

from __future__ import annotations

from pathlib import Path

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.experiment.config import ExperimentConfig
from xaytune.suites import builtin_suite_path

__all__ = ["load_source"]


def load_source(cfg: ExperimentConfig) -> SuiteSource:
    """Open the configured suite (a built-in by name, or a directory), verifying every
    digest (the suite's own refusal names the file that does not match)."""
    if cfg.suite.builtin is not None:
        return SuiteSource(builtin_suite_path(cfg.suite.builtin))
    assert cfg.suite.path is not None
    return SuiteSource(Path(cfg.suite.path).expanduser())
