"""What catalog ``xaytune.harness-metrics/v2`` adds to v1, measured on verified evidence.

Per entry, from the attested attempt's spend (``no-attested-result`` without one):

* ``cached_tokens``, ``reasoning_tokens``: what the provider reported, summed over
  the attempt's calls; ``not-recorded`` when a call did not report it (never 0);
* ``end_to_end_time``: the attempt's wall time (``wall_time_us``, monotonic clock);
* ``model_call_time``: model time over the calls made (replies and failures);
  ``not-applicable`` when the attempt made no call;
* ``cost``: dollars at the declared price table. An untiered table that bills cache
  writes as input prices the attempt's sums (a sum of per-call costs is the cost of
  the sums); a table with prompt-size tiers, or one that prices cache writes apart
  (Anthropic's), prices each call by its own usage, read from the attested trajectory
  (:func:`~xaytune.harness.evidence.calls.attempt_calls`, which needs the store): the
  cache-write tokens a call reported are recorded per call, not summed in the spend.
  ``not-recorded`` without a table, or when a call's cached (cache-write) tokens were
  not reported and its prices tell cached input (cache writes) apart.

And from ALL attempts: ``spend_cost``, the dollars of every attempt, partial ones
included; ``spend-unaccounted`` when one was recovered after a crash (its spend is a
lower bound), else ``not-recorded`` when any attempt's cost is.
"""

from __future__ import annotations

from fractions import Fraction

from xaytune.core.errors import EvaluationError
from xaytune.evaluation.metrics import CATALOG_V2_ID, Column, absence_code
from xaytune.harness.evidence import AttemptEvidence, EvidenceEntry, HarnessRunEvidence
from xaytune.harness.evidence.calls import attempt_calls
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.models.prices import ModelPrices, usd

__all__ = ["V2_ONLY", "v2_columns"]

# Metrics v2 measures that v1 does not report at all.
V2_ONLY = ("model_call_time", "spend_cost")

_NO_ATTESTED = absence_code("no-attested-result")
_NOT_RECORDED = absence_code("not-recorded")
_NOT_APPLICABLE = absence_code("not-applicable")
_UNACCOUNTED = absence_code("spend-unaccounted")


class _Pricer:
    """Prices attempts at one table; reads an attempt's calls at most once."""

    def __init__(self, prices: ModelPrices | None, store: HarnessEvidenceStore | None) -> None:
        # Per call: a tier applies by a call's own prompt, and cache writes are recorded
        # only in each call's usage (the sealed spend has no sum of them).
        self.per_call = prices is not None and (bool(prices.tiers) or prices.cache_writes_priced)
        if self.per_call and store is None:
            raise EvaluationError(
                "store-required",
                "a price table with tiers or a cache-write price prices each call by its "
                "own usage: measuring it needs the evidence store the calls are read from",
            )
        self.prices = prices
        self.store = store

    def cost(self, entry: EvidenceEntry, attempt: AttemptEvidence) -> Fraction | None:
        """The attempt's dollars, or None when they are not known."""
        prices = self.prices
        if prices is None:
            return None
        if not self.per_call:
            spend = attempt.spend
            return prices.call_cost(spend.input_tokens, spend.cached_tokens, spend.output_tokens)
        assert self.store is not None
        total = Fraction(0)
        for call in attempt_calls(self.store, entry, attempt):
            cost = prices.call_cost(
                call.input_tokens,
                call.cached_tokens,
                call.output_tokens,
                cache_write_tokens=call.cache_write_tokens,
            )
            if cost is None:
                return None
            total += cost
        return total


def v2_columns(
    evidence: HarnessRunEvidence,
    *,
    prices: ModelPrices | None,
    store: HarnessEvidenceStore | None,
) -> dict[str, Column]:
    """The columns v2 records beyond v1's (see the module docstring), by metric."""
    pricer = _Pricer(prices, store)
    n = len(evidence.entries)
    keys = ("cached_tokens", "reasoning_tokens", "end_to_end_time", "model_call_time", "cost")
    values: dict[str, list[float]] = {key: [0.0] * n for key in (*keys, "spend_cost")}
    codes: dict[str, list[int]] = {key: [0] * n for key in (*keys, "spend_cost")}
    for i, entry in enumerate(evidence.entries):
        attested = entry.attested
        costs: dict[int, Fraction | None] = {}
        if attested is None or attested.outcome is None:
            for key in keys:
                codes[key][i] = _NO_ATTESTED
        else:
            spend = attested.spend
            for key, count in (
                ("cached_tokens", spend.cached_tokens),
                ("reasoning_tokens", spend.reasoning_tokens),
            ):
                if count is None:
                    codes[key][i] = _NOT_RECORDED
                else:
                    values[key][i] = count
            values["end_to_end_time"][i] = spend.wall_time_us * 1e-6
            calls = spend.model_calls + spend.model_errors
            if calls:
                values["model_call_time"][i] = spend.model_time_us * 1e-6 / calls
            else:
                codes["model_call_time"][i] = _NOT_APPLICABLE
            cost = costs[attested.attempt] = pricer.cost(entry, attested)
            if cost is None:
                codes["cost"][i] = _NOT_RECORDED
            else:
                values["cost"][i] = usd(cost)
        if any(attempt.recovered for attempt in entry.attempts):
            codes["spend_cost"][i] = _UNACCOUNTED
            continue
        total: Fraction | None = Fraction(0)
        for attempt in entry.attempts:
            cost = (
                costs[attempt.attempt] if attempt.attempt in costs else pricer.cost(entry, attempt)
            )
            if cost is None:
                total = None
                break
            total += cost
        if total is None:
            codes["spend_cost"][i] = _NOT_RECORDED
        else:
            values["spend_cost"][i] = usd(total)
    return {
        key: Column.build(key, values[key], codes[key], catalog=CATALOG_V2_ID) for key in values
    }
