"""Price tables: exact costs per call, tiers at and above their thresholds, refusals."""

from __future__ import annotations

from fractions import Fraction

import pytest
from pydantic import ValidationError

from xaytune.models import ModelPrices, PriceTier

LONG_CONTEXT = ModelPrices(
    input_per_mtok=1.25,
    cached_input_per_mtok=0.3125,
    output_per_mtok=10.0,
    tiers=(
        PriceTier(
            above_prompt_tokens=200_000,
            input_per_mtok=2.5,
            cached_input_per_mtok=0.625,
            output_per_mtok=15.0,
        ),
    ),
)


def test_a_call_at_the_threshold_is_billed_at_the_base_prices():
    # (200000 - 50000) * 1.25 + 50000 * 0.3125 + 1000 * 10 = 213125 micro-dollars.
    assert LONG_CONTEXT.call_cost(200_000, 50_000, 1_000) == Fraction(213125, 1_000_000)


def test_a_call_above_the_threshold_is_billed_entirely_at_the_tier():
    # (200001 - 50000) * 2.5 + 50000 * 0.625 + 1000 * 15 = 421252.5 micro-dollars.
    assert LONG_CONTEXT.call_cost(200_001, 50_000, 1_000) == Fraction(4212525, 10_000_000)


def test_the_highest_tier_passed_wins():
    prices = ModelPrices(
        input_per_mtok=1.0,
        output_per_mtok=1.0,
        tiers=(
            PriceTier(above_prompt_tokens=10, input_per_mtok=2.0, output_per_mtok=2.0),
            PriceTier(above_prompt_tokens=20, input_per_mtok=3.0, output_per_mtok=3.0),
        ),
    )
    costs = [prices.call_cost(n, 0, 0) * 1_000_000 / n for n in (10, 11, 20, 21)]
    assert costs == [1, 2, 2, 3]


def test_prices_are_read_as_the_decimals_they_are_written_as():
    prices = ModelPrices(input_per_mtok=0.1, output_per_mtok=0.2)
    # Not the doubles nearest 0.1 and 0.2: 0.1 + 0.2 micro-dollars is exactly 0.3.
    assert prices.call_cost(1, 0, 1) == Fraction(3, 10) / 1_000_000


def test_unreported_cached_tokens_leave_the_cost_unknown_only_when_they_matter():
    assert LONG_CONTEXT.call_cost(1_000, None, 10) is None
    billed_as_input = ModelPrices(input_per_mtok=2.0, output_per_mtok=8.0)
    assert billed_as_input.call_cost(1_000, None, 10) == Fraction(2080, 1_000_000)
    # The bound prices them at the dearer price: here the input price.
    assert LONG_CONTEXT.call_cost_bound(1_000, None, 10) == Fraction(1350, 1_000_000)
    assert LONG_CONTEXT.call_cost_bound(1_000, 0, 10) == LONG_CONTEXT.call_cost(1_000, 0, 10)


def test_the_highest_price_is_of_any_kind_in_any_tier():
    assert LONG_CONTEXT.highest_per_mtok == 15.0
    assert LONG_CONTEXT.cache_priced is True
    assert ModelPrices(input_per_mtok=2.0, output_per_mtok=8.0).cache_priced is False


@pytest.mark.parametrize(
    "table",
    [
        {"input_per_mtok": -1.0, "output_per_mtok": 1.0},
        {"input_per_mtok": "2.5", "output_per_mtok": 1.0},
        {"input_per_mtok": True, "output_per_mtok": 1.0},
        {"input_per_mtok": float("inf"), "output_per_mtok": 1.0},
        {"input_per_mtok": 2e6, "output_per_mtok": 1.0},  # a price per token, not per million
        {"input_per_mtok": 1.0},
        {"input_per_mtok": 1.0, "output_per_mtok": 1.0, "currency": "EUR"},
        {
            "input_per_mtok": 1.0,
            "output_per_mtok": 1.0,
            "tiers": [
                {"above_prompt_tokens": 20, "input_per_mtok": 2.0, "output_per_mtok": 2.0},
                {"above_prompt_tokens": 10, "input_per_mtok": 3.0, "output_per_mtok": 3.0},
            ],
        },
        {
            "input_per_mtok": 1.0,
            "output_per_mtok": 1.0,
            "tiers": [{"above_prompt_tokens": 1.5, "input_per_mtok": 2.0, "output_per_mtok": 2.0}],
        },
    ],
    ids=[
        "negative",
        "text",
        "boolean",
        "infinite",
        "per token",
        "no output price",
        "unknown key",
        "descending tiers",
        "fractional threshold",
    ],
)
def test_a_table_that_is_not_one_is_refused(table):
    with pytest.raises(ValidationError):
        ModelPrices.model_validate(table)


# -- cache writes (Anthropic bills them above the input price) --------------------------------

CACHE_WRITES = ModelPrices(
    input_per_mtok=3.0, cached_input_per_mtok=0.3, cache_write_per_mtok=3.75, output_per_mtok=15.0
)


def test_cache_writes_are_billed_at_their_own_price():
    # By hand: (10000 - 2000 - 4000) * 3 + 2000 * 0.3 + 4000 * 3.75 + 100 * 15
    # = 12000 + 600 + 15000 + 1500 = 29100 micro-dollars.
    cost = CACHE_WRITES.call_cost(10_000, 2_000, 100, cache_write_tokens=4_000)
    assert cost == Fraction(29100, 1_000_000)
    assert CACHE_WRITES.call_cost_bound(10_000, 2_000, 100, cache_write_tokens=4_000) == cost


def test_unreported_cache_writes_make_the_cost_unknown_and_the_bound_an_upper_bound():
    assert CACHE_WRITES.call_cost(10_000, 2_000, 100) is None
    # By hand: 8000 uncached input tokens at the dearer write price: 8000 * 3.75 + 600 + 1500
    # = 32100 micro-dollars, above the exact 29100 whatever the writes were.
    assert CACHE_WRITES.call_cost_bound(10_000, 2_000, 100) == Fraction(32100, 1_000_000)
    # Neither kind reported: every input token at the dearest of 3, 0.3 and 3.75.
    assert CACHE_WRITES.call_cost_bound(10_000, None, 100) == Fraction(39000, 1_000_000)


def test_a_table_without_a_cache_write_price_bills_writes_as_input():
    prices = ModelPrices(input_per_mtok=3.0, cached_input_per_mtok=0.3, output_per_mtok=15.0)
    # By hand: 8000 * 3 + 2000 * 0.3 + 100 * 15 = 24000 + 600 + 1500 = 26100 micro-dollars,
    # with or without the write count.
    expected = Fraction(26100, 1_000_000)
    assert prices.call_cost(10_000, 2_000, 100) == expected
    assert prices.call_cost(10_000, 2_000, 100, cache_write_tokens=4_000) == expected
    assert CACHE_WRITES.highest_per_mtok == 15.0
    assert (
        ModelPrices(
            input_per_mtok=1.0, cache_write_per_mtok=20.0, output_per_mtok=2.0
        ).highest_per_mtok
        == 20.0
    )


def test_a_table_without_a_cache_write_price_dumps_as_before_the_key_existed():
    # Existing tables keep their canonical form (and every fingerprint made from it).
    plain = ModelPrices(input_per_mtok=1.0, output_per_mtok=2.0).model_dump(mode="json")
    assert plain == {
        "input_per_mtok": 1.0,
        "cached_input_per_mtok": None,
        "output_per_mtok": 2.0,
        "tiers": [],
    }
    assert CACHE_WRITES.model_dump(mode="json")["cache_write_per_mtok"] == 3.75
    assert ModelPrices.model_validate(CACHE_WRITES.model_dump(mode="json")) == CACHE_WRITES
