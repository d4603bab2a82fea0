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
