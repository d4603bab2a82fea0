"""What a run of an experiment returns, and what it tells an observer while it runs.

:func:`xaytune.run` (``xaytune.experiment.api``) never prints: it returns an
:class:`ExperimentResult` and, while it runs, calls a :class:`RunObserver` (the CLI's
prints progress bars, warnings and the tables; :class:`SilentObserver` does nothing).
The records hold what the run wrote to its tree, read back from the files written, so
what a caller sees is what an auditor of the tree sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from xaytune.comparison.report import ComparisonReport
    from xaytune.harness.runner import AttemptResult

__all__ = [
    "ChallengerComparison",
    "ExperimentResult",
    "ModelErrorGate",
    "ReplicateWatcher",
    "RunComparison",
    "RunObserver",
    "SilentObserver",
]


@runtime_checkable
class ReplicateWatcher(Protocol):
    """One replicate's progress: called with every finished attempt, or told once that
    the replicate was copied from the evidence cache (nothing ran)."""

    def __call__(self, attempt: AttemptResult) -> None: ...

    def reused(self, *, tasks: int, errors: int, tokens: int) -> None: ...


@runtime_checkable
class RunObserver(Protocol):
    """What a run reports while it runs, in the order it happens. Every method returns
    promptly and raises nothing (an observer's failure would stop the run)."""

    def warning(self, message: str) -> None:
        """A warning about the run (the simulator's scope, an optional-stopping look)."""
        ...

    def replicate(
        self, title: str, *, total: int
    ) -> AbstractContextManager[ReplicateWatcher | None]:
        """A replicate of ``total`` tasks starts (only when the config's ``progress`` is
        true): the context yields its watcher, or None."""
        ...

    def model_started(self, label: str) -> None:
        """A run with several models starts the one labelled ``label``."""
        ...

    def compared(self, comparison: RunComparison) -> None:
        """One run's comparison is written (each model's, in a run with several)."""
        ...

    def models_compared(self, summary: Mapping[str, Any]) -> None:
        """A run with several models wrote its summary across models (models.json)."""
        ...

    def tree_extended(self, out: Path, config: Mapping[str, Any]) -> None:
        """The tree ``out`` was extended with seeds: it now runs under ``config`` (the
        CLI rewrites Hydra's ``.hydra/config.yaml`` there to say so)."""
        ...


class SilentObserver:
    """A :class:`RunObserver` that does nothing: the default of :func:`xaytune.run`.
    Subclass it to watch only some events."""

    def warning(self, message: str) -> None:
        return None

    def replicate(
        self, title: str, *, total: int
    ) -> AbstractContextManager[ReplicateWatcher | None]:
        return nullcontext(None)

    def model_started(self, label: str) -> None:
        return None

    def compared(self, comparison: RunComparison) -> None:
        return None

    def models_compared(self, summary: Mapping[str, Any]) -> None:
        return None

    def tree_extended(self, out: Path, config: Mapping[str, Any]) -> None:
        return None


@dataclass(frozen=True)
class ModelErrorGate:
    """``comparison.max_model_error_share`` over a run's replicates: ``code`` 2 when a
    replicate's share of tasks ending ``model-error`` exceeds the bound, else 0;
    ``counts``: one line with every replicate's model-error count (0 included);
    ``over``: one ``error: model-errors:`` line per replicate over the bound, naming
    its causes (:mod:`xaytune.experiment.attempt_errors`)."""

    code: int
    counts: str
    over: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChallengerComparison:
    """A challenger compared with the baseline: ``report`` is the full report
    (``report.released()`` is what the released files hold), written in ``directory``."""

    label: str
    report: ComparisonReport
    directory: Path

    @property
    def relation(self) -> str:
        """favors-a, favors-b, trade-off, inconclusive or not-comparable."""
        return self.report.relation


@dataclass(frozen=True)
class RunComparison:
    """One run's comparison, as written under ``out/comparison/``.

    ``errors``: comparison/errors.json (every replicate's attempt errors, and the
    challengers ``not_compared`` with why); ``summary``: comparison/summary.json with
    several challengers, else None; ``look_warning``: the optional-stopping warning this
    look raised, or None; ``gated``: the challengers whose relation is in
    ``comparison.fail_on``; ``model_errors``: the model-error gate over every replicate
    of the tree; ``exit_code``: 0, 1 (a gate) or 2 (model errors over
    ``comparison.max_model_error_share``), as the CLI exits."""

    out: Path
    challengers: tuple[ChallengerComparison, ...]
    errors: Mapping[str, Any]
    summary: Mapping[str, Any] | None
    look_warning: str | None
    gated: tuple[str, ...]
    model_errors: ModelErrorGate
    exit_code: int
    model: str | None = None  # the model's label in a run with several models

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", MappingProxyType(dict(self.errors)))
        if self.summary is not None:
            object.__setattr__(self, "summary", MappingProxyType(dict(self.summary)))

    @property
    def relations(self) -> dict[str, str]:
        """The relation of each challenger (by label) to the baseline."""
        return {c.label: c.relation for c in self.challengers}


@dataclass(frozen=True)
class ExperimentResult:
    """What :func:`xaytune.run` did.

    ``out``: the run's tree (None for a dry run, which keeps none); ``exit_code``: what
    ``python -m xaytune`` exits with for the same config (0, 1 for a gate in
    ``comparison.fail_on``, 2 for model errors over the bound); ``comparisons``: one per
    run compared (one, or one per model; none for a sweep job or a dry run);
    ``models_summary``: comparison/models.json of a run with several models;
    ``estimate``: a dry run's lines (the dollar estimate, whether max_cost_usd lets it
    run); ``warnings``: the run's warnings (the simulator's scope, an optional-stopping
    look); ``model_errors``: a sweep job's model-error gate over the replicates it ran
    (a comparison holds its own); ``notes``: what the checks noted (a sampling count
    above the suite's size: every task runs)."""

    out: Path | None
    exit_code: int
    comparisons: tuple[RunComparison, ...] = ()
    models_summary: Mapping[str, Any] | None = None
    estimate: tuple[str, ...] = ()
    dry_run: bool = False
    warnings: tuple[str, ...] = field(default=())
    model_errors: ModelErrorGate | None = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.models_summary is not None:
            object.__setattr__(self, "models_summary", MappingProxyType(dict(self.models_summary)))

    @property
    def relations(self) -> dict[str, str]:
        """Each challenger's relation to the baseline, by label (``<model>/<label>`` in
        a run with several models)."""
        found = {}
        for comparison in self.comparisons:
            prefix = "" if comparison.model is None else f"{comparison.model}/"
            for label, relation in comparison.relations.items():
                found[prefix + label] = relation
        return found
