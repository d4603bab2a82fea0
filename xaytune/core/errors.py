"""One error hierarchy: every refusal carries a stable reason word.

Tests assert ``error.reason``; the message is for people and names the offending
item (task id, attempt, file, config key) on one line.
"""

from __future__ import annotations

__all__ = [
    "ComparisonError",
    "ConfigError",
    "EvaluationError",
    "EvidenceError",
    "ExecutionError",
    "FingerprintError",
    "PluginError",
    "SuiteError",
    "XaytuneError",
]


class XaytuneError(Exception):
    """Base of every refusal. ``reason`` is a stable word; ``str(e)`` is one line."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        one_line = " ".join(message.split())
        super().__init__(f"{reason}: {one_line}")

    @property
    def message(self) -> str:
        return str(self)


class FingerprintError(XaytuneError):
    """A value cannot be canonicalised (NaN, non-string key, unsafe integer, ...)."""


class SuiteError(XaytuneError):
    """A suite on disk, an assignment or a binding is refused."""


class ConfigError(XaytuneError):
    """A configuration is not valid or not in canonical form."""


class ExecutionError(XaytuneError):
    """Compiling or running a harness is refused."""


class EvidenceError(XaytuneError):
    """Evidence (attempts, trajectories, seals, published subjects) is refused."""


class EvaluationError(XaytuneError):
    """An evaluation is refused (binding, grants, disclosure, subject)."""


class ComparisonError(XaytuneError):
    """A comparison is refused (e.g. an unpaired design)."""


class PluginError(XaytuneError):
    """A user part (tool, loop, scorer, model adapter) cannot be resolved or checked."""
