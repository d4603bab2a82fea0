"""An experiment's dollar guard: an upper-bound estimate, checked before anything runs.

The estimate is what the configured budgets allow the candidates to spend::

    tasks x seeds x (for each candidate: attempts_per_task x per-attempt bound)

where the per-attempt bound is ``token_budget`` tokens at the price table's highest
price (of any kind, in any tier), or the harness's ``cost_budget_usd`` when that is
lower. It is an estimate of an upper bound, not a guarantee: a budget is checked
after the call that crosses it, and that call is paid for too. The judge's calls
are not in it.

``max_cost_usd`` refuses to start when the estimate exceeds it (``over-budget``),
or when no estimate exists (``cost-unbounded``: no price table, or a candidate with
neither a token nor a dollar budget). ``--dry-run`` (``dry_run=true``) prints the
estimate and runs nothing. Both happen before any model call and before a run
directory is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from xaytune.core.errors import ConfigError
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.source import load_source

__all__ = [
    "CostEstimate",
    "check_cost_config",
    "check_max_cost",
    "dry_run",
    "dry_run_lines",
    "estimate_cost",
]


@dataclass(frozen=True)
class CostEstimate:
    """The estimate (``usd``, None when there is none, with ``unknown`` saying why)
    and what it is made of, for its one line."""

    tasks: int
    seeds: int
    candidates: tuple[str, ...]
    usd: Fraction | None
    unknown: str | None
    basis: str

    def line(self) -> str:
        """``estimate: ...`` in one line."""
        scope = (
            f"{self.tasks} tasks x {self.seeds} seeds x {len(self.candidates)} candidates"
            f" ({self.basis})"
        )
        if self.usd is None:
            return f"estimate: unknown for {scope}: {self.unknown}"
        return f"estimate: at most ${float(self.usd):,.2f} for {scope}"


def _exact(value: float) -> Fraction:
    return Fraction(repr(float(value)))


def estimate_cost(cfg: ExperimentConfig, task_count: int) -> CostEstimate:
    """The estimate for ``cfg`` on a suite of ``task_count`` tasks (every seed of the
    experiment, not only this job's)."""
    tasks = cfg.sampling.sample(task_count).count or task_count
    labels = sorted(cfg.candidates)
    names = tuple(cfg.candidates[label].name for label in labels)
    prices = cfg.model.prices
    highest = None if prices is None else _exact(prices.highest_per_mtok)
    parts, total, unknown = [], Fraction(0), None
    for label in labels:
        harness = cfg.candidates[label]
        bounds = []
        if harness.token_budget is not None and highest is not None:
            bounds.append(harness.token_budget * highest / 1_000_000)
        if harness.cost_budget_usd is not None:
            bounds.append(_exact(harness.cost_budget_usd))
        budget = [f"{harness.token_budget:,} tokens"] if harness.token_budget else []
        if harness.cost_budget_usd is not None:
            budget.append(f"${harness.cost_budget_usd:g}")
        attempts = harness.attempts_per_task
        plural = "s" if attempts != 1 else ""
        parts.append(f"{harness.name}: {attempts} attempt{plural} x {' or '.join(budget) or '?'}")
        if not bounds:
            unknown = unknown or (
                "the model has no price table (model.prices)"
                if prices is None and harness.token_budget is not None
                else f"candidate {harness.name} has neither a token_budget nor a cost_budget_usd"
            )
            continue
        total += tasks * len(cfg.seeds) * attempts * min(bounds)
    basis = "; ".join(parts)
    if highest is not None:
        basis += f"; at ${prices.highest_per_mtok:g}/M tokens, the price table's highest"
    return CostEstimate(
        tasks=tasks,
        seeds=len(cfg.seeds),
        candidates=names,
        usd=None if unknown else total,
        unknown=unknown,
        basis=basis,
    )


def check_max_cost(cfg: ExperimentConfig, estimate: CostEstimate) -> None:
    """Refuse (``over-budget``, ``cost-unbounded``) an experiment whose estimate is
    above ``max_cost_usd`` or unknown; nothing to check without ``max_cost_usd``."""
    limit = cfg.max_cost_usd
    if limit is None:
        return
    if estimate.usd is None:
        raise ConfigError(
            "cost-unbounded",
            f"max_cost_usd ${limit:g}: no upper bound can be estimated ({estimate.line()})",
        )
    if estimate.usd > _exact(limit):
        raise ConfigError("over-budget", f"{estimate.line()}, above max_cost_usd ${limit:g}")


def dry_run(cfg: ExperimentConfig) -> None:
    """Print :func:`dry_run_lines` for ``cfg`` (its suite opened, digests verified)."""
    for line in dry_run_lines(cfg, len(load_source(cfg).suite.tasks)):
        print(line)


def dry_run_lines(cfg: ExperimentConfig, task_count: int) -> list[str]:
    """What ``--dry-run`` prints: the estimate, and whether max_cost_usd lets it run."""
    estimate = estimate_cost(cfg, task_count)
    lines = [estimate.line()]
    try:
        check_max_cost(cfg, estimate)
    except ConfigError as refusal:
        lines.append(f"a run would be refused: {refusal}")
    lines.append("dry run: nothing was run and no output directory was kept")
    return lines


def check_cost_config(cfg: ExperimentConfig, task_count: int) -> None:
    """Refuse a dollar budget without prices (``cost-budget-unpriced``) and, unless
    this is a dry run, an experiment over ``max_cost_usd`` (see :func:`check_max_cost`)."""
    for label, harness in sorted(cfg.candidates.items()):
        if harness.cost_budget_usd is not None and cfg.model.prices is None:
            raise ConfigError(
                "cost-budget-unpriced",
                f"candidates.{label}.cost_budget_usd: ${harness.cost_budget_usd:g} needs the "
                "model's price table, and model.prices is null",
            )
    if not cfg.dry_run:
        check_max_cost(cfg, estimate_cost(cfg, task_count))


def check_total_cost(cfgs: dict[str, ExperimentConfig], task_count: int) -> list[str]:
    """Several models: each one's estimate line and the total's; refuses
    (``over-budget``, ``cost-unbounded``) a total above ``max_cost_usd`` unless this
    is a dry run (the refusal is then the last line)."""
    estimates = {label: estimate_cost(cfg, task_count) for label, cfg in cfgs.items()}
    lines = [f"model {label}: {estimate.line()}" for label, estimate in estimates.items()]
    known = [e.usd for e in estimates.values()]
    total = None if any(usd is None for usd in known) else sum(known, Fraction(0))
    lines.append(
        "estimate: unknown for some model" if total is None
        else f"estimate: at most ${float(total):,.2f} across {len(cfgs)} models"
    )  # fmt: skip
    first = next(iter(cfgs.values()))
    limit = first.max_cost_usd
    refusal = None
    if limit is not None and total is None:
        refusal = ConfigError(
            "cost-unbounded", f"max_cost_usd ${limit:g}: no upper bound across the models"
        )
    elif limit is not None and total > _exact(limit):
        refusal = ConfigError(
            "over-budget",
            f"estimate: at most ${float(total):,.2f} across {len(cfgs)} models, "
            f"above max_cost_usd ${limit:g}",
        )
    if refusal is not None and not first.dry_run:
        raise refusal
    if refusal is not None:
        lines.append(f"a run would be refused: {refusal}")
    return lines
