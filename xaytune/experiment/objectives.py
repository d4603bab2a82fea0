"""The metrics an experiment's objectives may name, checked before anything runs.

An objective names a metric of the catalog its outcome evaluator selects
(``spec.metrics.catalog``; v1 when left out), optionally ``@successful-tasks``;
anything else is ``unknown-metric``. A metric that catalog can never record for this
experiment is refused too (``metric-not-recorded``): v1's cost, cached and reasoning
tokens and end-to-end time, and v2's dollar metrics without a price table. An
objective on such a metric would be absent on every run, so it could only ever be
inconclusive: that is knowable from the config, so it is said before money is spent.

A v2 outcome evaluator prices cost at the table its config pins; it must be the
model's (``prices-mismatch`` otherwise): the prices the runs were budgeted at, the
execution facets record and C4 compares.
"""

from __future__ import annotations

from typing import Any

from xaytune.core.errors import ConfigError
from xaytune.evaluation.metrics import (
    CATALOG_ID,
    CATALOG_V2_ID,
    NOT_RECORDED_V1,
    catalog_definitions,
)
from xaytune.experiment.config import ExperimentConfig
from xaytune.models.prices import ModelPrices

__all__ = ["check_objectives", "experiment_catalog"]

_PRICED = ("cost", "spend_cost")


def _outcome_metrics(config: dict[str, Any]) -> Any:
    spec = config.get("spec") if config.get("kind") == "HarnessOutcomeEvaluation" else None
    return spec.get("metrics") if isinstance(spec, dict) else None


def experiment_catalog(cfg: ExperimentConfig) -> str:
    """The catalog the experiment's outcome evaluator selects (v1 when none does)."""
    for evaluator in cfg.evaluators.values():
        metrics = _outcome_metrics(evaluator.config)
        if isinstance(metrics, dict) and metrics.get("catalog") == CATALOG_V2_ID:
            return CATALOG_V2_ID
    return CATALOG_ID


def _check_prices(cfg: ExperimentConfig) -> None:
    for label, evaluator in sorted(cfg.evaluators.items()):
        metrics = _outcome_metrics(evaluator.config)
        if not isinstance(metrics, dict) or "prices" not in metrics:
            continue  # v1, or a malformed config binding refuses with its own word
        try:
            declared = (
                None if metrics["prices"] is None else ModelPrices.model_validate(metrics["prices"])
            )
        except ValueError:
            continue  # binding refuses it (invalid-config), naming the field
        if declared != cfg.model.prices:
            raise ConfigError(
                "prices-mismatch",
                f"evaluators.{label}.config.spec.metrics.prices is not model.prices: cost "
                "would be computed at other prices than the runs are budgeted at and compared "
                "under",
            )


def check_objectives(cfg: ExperimentConfig) -> None:
    """Refuse objectives no run of ``cfg`` could measure (see the module docstring)."""
    _check_prices(cfg)
    catalog = experiment_catalog(cfg)
    known = [definition.key for definition in catalog_definitions(catalog)]
    for index, objective in enumerate(cfg.comparison.objectives):
        where = f"comparison.objectives[{index}].metric"
        metric = objective.metric.split("@")[0]
        if metric not in known:
            raise ConfigError(
                "unknown-metric",
                f"{where}: {objective.metric!r} is not a metric of the catalog {catalog} "
                f"(one of: {', '.join(known)})",
            )
        if catalog == CATALOG_ID and metric in NOT_RECORDED_V1:
            raise ConfigError(
                "metric-not-recorded",
                f"{where}: {metric} is never recorded by {catalog}; select {CATALOG_V2_ID} "
                "(evaluator@evaluators.outcome=outcome_v2)",
            )
        if catalog == CATALOG_V2_ID and metric in _PRICED and cfg.model.prices is None:
            raise ConfigError(
                "metric-not-recorded",
                f"{where}: {metric} needs a price table, and model.prices is null",
            )
