"""A part's parameters model (xaytune.plugins.parameters_model): built from its
signature once per function, the same strict model each time; refusals are never kept."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from xaytune.core.errors import PluginError
from xaytune.plugins import check_params, parameters_model


def scorer(answer: str, target: str, tolerance: float = 0.0, case: bool = False) -> float:
    return 1.0


def test_the_model_is_built_once_per_function_and_skip():
    first = parameters_model(scorer, skip=2, where="scorer")
    again = parameters_model(scorer, skip=2, where="another place")
    assert again is first
    assert list(first.model_fields) == ["tolerance", "case"]
    # Another skip is another model.
    wider = parameters_model(scorer, skip=1, where="scorer")
    assert wider is not first
    assert list(wider.model_fields) == ["target", "tolerance", "case"]


def test_the_kept_model_is_as_strict_as_a_new_one():
    model = parameters_model(scorer, skip=2, where="scorer")
    assert model(tolerance=0.5).tolerance == 0.5
    with pytest.raises(ValidationError):
        model(tolerance=0.5, unknown=1)  # unknown keys refused
    with pytest.raises(ValidationError):
        model(case="yes")  # strict: a string is not a bool
    with pytest.raises(PluginError) as refused:
        check_params(model, {"tolerance": "x"}, where="scorer exact")
    assert refused.value.reason == "bad-part-params"


def test_a_refusal_is_raised_each_time_never_kept():
    def splat(answer, *rest):
        return 0.0

    for _ in range(2):
        with pytest.raises(PluginError) as refused:
            parameters_model(splat, skip=1, where="scorer splat")
        assert refused.value.reason == "bad-part"
        assert "scorer splat" in str(refused.value)


def test_an_unhashable_callable_gets_a_model_each_time():
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, x: int) -> int:
            return x

    made = Unhashable()
    first = parameters_model(made, skip=0, where="tool")
    assert list(first.model_fields) == ["x"]
    assert parameters_model(made, skip=0, where="tool") is not first
