"""Price tables: what a model's tokens cost, in US dollars per million tokens.

A table prices input tokens, cached input tokens (prompt tokens the provider served
from its prompt cache: a part of the input tokens), cache-write tokens (prompt tokens
written to the cache, also a part of the input tokens: Anthropic bills them above the
input price) and output tokens (reasoning tokens are output tokens and are billed as
such). ``cached_input_per_mtok: None`` bills cached input as input (a provider without
a cache discount); ``cache_write_per_mtok: None`` bills cache writes as input.

Optional *tiers* raise the prices of a call whose prompt is large, the way
long-context prices are published ("prompts over 200k tokens"): a tier applies to a
model call whose prompt tokens *exceed* its ``above_prompt_tokens``, to every token
of that call, and the highest such tier wins; a call exactly at a threshold is billed
at the prices below it. Tiers are applied per call, by that call's own prompt tokens,
so a cost with tiers needs each call's tokens (the attested trajectory has them).

Costs are exact: each price is read as the decimal it is written as (``0.3`` is
3/10, not the double nearest to it), token counts are integers, and a cost is
rounded once, to the nearest double, when it is reported (:func:`usd`).

A call whose cached tokens were not reported has an exact cost only when cached
input is billed as input (:meth:`ModelPrices.call_cost` gives None otherwise: the
cost is not recorded, never guessed); :meth:`ModelPrices.call_cost_bound` prices
those tokens at the higher of the two prices instead (an upper bound, what a dollar
budget spends against). Cache-write tokens are treated the same way: not given (None,
the default; a trajectory records them only when the provider reported them) they make
the cost unknown when the table prices cache writes differently from input, and the
bound prices the uncertain input tokens at the dearest of the prices they may have had.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    Strict,
    model_serializer,
    model_validator,
)

from xaytune.core import limits

__all__ = ["MAX_PRICE_PER_MTOK", "ModelPrices", "PriceTier", "Rates", "usd"]

# A dollar per token: any price above it is a typo (a price per token, not per million).
MAX_PRICE_PER_MTOK = 1_000_000.0
_MILLION = 1_000_000

Price = Annotated[float, Strict(), Field(ge=0, le=MAX_PRICE_PER_MTOK)]
_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _exact(price: float) -> Fraction:
    """``price`` as the decimal it is written as (its shortest repr)."""
    return Fraction(repr(float(price)))


@dataclass(frozen=True, slots=True)
class Rates:
    """Exact prices per million tokens for one call (the base table or one tier)."""

    input: Fraction
    cached: Fraction
    output: Fraction
    cache_write: Fraction | None = None  # None: billed as input

    def cost(
        self,
        input_tokens: int,
        cached_tokens: int,
        output_tokens: int,
        cache_write_tokens: int = 0,
    ) -> Fraction:
        """Dollars for one call with ``cached_tokens`` of its input served from cache
        and ``cache_write_tokens`` of it written to the cache."""
        write = self.input if self.cache_write is None else self.cache_write
        fresh = input_tokens - cached_tokens - cache_write_tokens
        total = (
            fresh * self.input
            + cached_tokens * self.cached
            + cache_write_tokens * write
            + output_tokens * self.output
        )
        return total / _MILLION


class _Prices(BaseModel):
    model_config = _FROZEN

    input_per_mtok: Price
    cached_input_per_mtok: Price | None = None
    cache_write_per_mtok: Price | None = None
    output_per_mtok: Price

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A table without a cache-write price dumps as it did before the key existed, so
        # the canonical form (and every fingerprint) of an existing table is unchanged.
        data = handler(self)
        if data.get("cache_write_per_mtok") is None:
            data.pop("cache_write_per_mtok", None)
        return data

    def rates(self) -> Rates:
        cached = (
            self.input_per_mtok
            if self.cached_input_per_mtok is None
            else (self.cached_input_per_mtok)
        )
        write = None if self.cache_write_per_mtok is None else _exact(self.cache_write_per_mtok)
        return Rates(
            _exact(self.input_per_mtok), _exact(cached), _exact(self.output_per_mtok), write
        )


class PriceTier(_Prices):
    """Prices for a call whose prompt tokens exceed ``above_prompt_tokens``."""

    above_prompt_tokens: Annotated[int, Strict(), Field(ge=0, le=limits.MAX_CONTEXT_WINDOW)]


class ModelPrices(_Prices):
    """A model's price table (USD per million tokens), with optional prompt-size tiers.

    See the module docstring for how a call is priced. Tiers are listed by
    ascending ``above_prompt_tokens``, each threshold once.
    """

    tiers: tuple[PriceTier, ...] = ()

    @model_validator(mode="after")
    def _ascending(self) -> ModelPrices:
        thresholds = [tier.above_prompt_tokens for tier in self.tiers]
        if any(b <= a for a, b in itertools.pairwise(thresholds)):
            raise ValueError(
                f"tiers must be listed by strictly ascending above_prompt_tokens ({thresholds})"
            )
        return self

    def rates_for(self, prompt_tokens: int) -> Rates:
        """The rates of a call with ``prompt_tokens`` of input (its tier's, if any)."""
        chosen: _Prices = self
        for tier in self.tiers:
            if prompt_tokens > tier.above_prompt_tokens:
                chosen = tier
        return chosen.rates()

    @property
    def cache_priced(self) -> bool:
        """Whether cached input is billed differently from input (in any tier)."""
        tables = (self, *self.tiers)
        return any(rates.cached != rates.input for rates in (t.rates() for t in tables))

    @property
    def cache_writes_priced(self) -> bool:
        """Whether cache writes are billed differently from input (in any tier): then
        a cost needs each call's reported cache-write tokens."""
        tables = (self, *self.tiers)
        return any(
            rates.cache_write is not None and rates.cache_write != rates.input
            for rates in (t.rates() for t in tables)
        )

    @property
    def highest_per_mtok(self) -> float:
        """The highest price the table names, of any kind, in any tier."""
        return max(
            max(
                p.input_per_mtok,
                p.cached_input_per_mtok or 0.0,
                p.cache_write_per_mtok or 0.0,
                p.output_per_mtok,
            )
            for p in (self, *self.tiers)
        )

    def call_cost(
        self,
        input_tokens: int,
        cached_tokens: int | None,
        output_tokens: int,
        *,
        cache_write_tokens: int | None = None,
    ) -> Fraction | None:
        """The exact dollars of one call, or None when they are not known: its cached
        (or cache-write) tokens were not reported and the call's tier prices cached
        input (or cache writes) differently from input."""
        rates = self.rates_for(input_tokens)
        if cached_tokens is None:
            if rates.cached != rates.input:
                return None
            cached_tokens = 0
        if cache_write_tokens is None:
            if rates.cache_write is not None and rates.cache_write != rates.input:
                return None
            cache_write_tokens = 0
        return rates.cost(input_tokens, cached_tokens, output_tokens, cache_write_tokens)

    def call_cost_bound(
        self,
        input_tokens: int,
        cached_tokens: int | None,
        output_tokens: int,
        *,
        cache_write_tokens: int | None = None,
    ) -> Fraction:
        """The dollars of one call, the input tokens whose kind was not reported priced
        at the dearest price they may have had (input, cached when ``cached_tokens`` is
        None, cache write when ``cache_write_tokens`` is None): exact when the cost is
        known, an upper bound otherwise."""
        rates = self.rates_for(input_tokens)
        write = rates.input if rates.cache_write is None else rates.cache_write
        candidates = [rates.input]
        if cached_tokens is None:
            candidates.append(rates.cached)
        if cache_write_tokens is None:
            candidates.append(write)
        dearest = max(candidates)
        cached = 0 if cached_tokens is None else cached_tokens
        writes = 0 if cache_write_tokens is None else cache_write_tokens
        fresh = input_tokens - cached - writes
        total = (
            fresh * dearest + cached * rates.cached + writes * write + output_tokens * rates.output
        )
        return total / _MILLION


def usd(amount: Fraction) -> float:
    """An exact amount of dollars as a float (the nearest double)."""
    return float(amount)
