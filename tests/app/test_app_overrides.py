"""Comparing again: the command line's overrides parsed in the app (Hydra's grammar,
:mod:`xaytune.app.overrides`) and applied by the audit room without Hydra or OmegaConf
(:func:`xaytune.audit.recompare.recompared_config`). In-process: no tree is run."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from xaytune.app.overrides import comparison_overrides
from xaytune.audit.recompare import ComparisonOverride, recompared_config
from xaytune.core.errors import ConfigError
from xaytune.experiment.config import validate_config


@pytest.fixture(scope="module")
def run_config() -> dict[str, Any]:
    """The quickstart's config as a manifest records it (plain, resolved)."""
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        composed = compose(config_name="config", overrides=["+experiment=quickstart"])
    plain = OmegaConf.to_container(composed, resolve=True)
    assert isinstance(plain, dict)
    return plain


def test_each_line_becomes_a_key_its_plain_value_and_the_line_as_given():
    lines = [
        "comparison.objectives.0.min_effect=0.2",
        "comparison.k=3",
        "comparison.calibrate=true",
        "comparison.fail_on=[favors-b]",
        "comparison.baseline=null",
    ]
    assert comparison_overrides(lines) == (
        ComparisonOverride("comparison.objectives.0.min_effect", 0.2, lines[0]),
        ComparisonOverride("comparison.k", 3, lines[1]),
        ComparisonOverride("comparison.calibrate", True, lines[2]),
        ComparisonOverride("comparison.fail_on", ["favors-b"], lines[3]),
        ComparisonOverride("comparison.baseline", None, lines[4]),
    )


@pytest.mark.parametrize(
    "line",
    [
        "comparison.k=[[",  # the grammar refuses it
        "candidates.a.max_turns=3",  # not a comparison setting
        "+comparison.extra=1",  # an addition
        "~comparison.k",  # a deletion
        "comparison.k=1,2",  # a sweep: several comparisons, not one
    ],
)
def test_a_line_that_is_not_one_comparison_setting_is_refused(line):
    with pytest.raises(ConfigError) as error:
        comparison_overrides([line])
    assert error.value.reason == "bad-override"
    assert len(str(error.value).splitlines()) == 1


def test_a_record_outside_the_comparison_group_is_refused():
    with pytest.raises(ConfigError) as error:
        ComparisonOverride("seeds", [1, 2])
    assert error.value.reason == "bad-override"


def test_a_record_made_in_python_is_recorded_as_a_line_that_parses_back_to_it():
    made = ComparisonOverride("comparison.baseline", "b")
    assert made.text == 'comparison.baseline="b"'
    (parsed,) = comparison_overrides([made.text])
    assert (parsed.key, parsed.value) == (made.key, made.value)
    assert ComparisonOverride("comparison.k", 3).text == "comparison.k=3"


def _by_omegaconf(config: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    """What the overrides gave when OmegaConf applied them (the implementation the
    audit room's own setter replaced): the independent answer."""
    conf = OmegaConf.create(config)
    for override in comparison_overrides(lines):
        OmegaConf.update(conf, override.key, override.value, merge=False)
    plain = OmegaConf.to_container(conf, resolve=False)
    assert isinstance(plain, dict)
    return plain


@pytest.mark.parametrize(
    "lines",
    [
        ["comparison.objectives.0.min_effect=0.2"],
        ["comparison.k=3", "comparison.k=4"],  # in order: the last one holds
        ["comparison.objectives.1={metric:total_tokens,direction:minimize,min_effect:10}"],
        ["comparison.bounds.total_tokens=100"],  # a mapping the run did not record
        ["comparison.objectives=[{metric:task_success,direction:maximize,min_effect:0.1}]"],
        ["comparison.fail_on=[favors-b,trade-off]", "comparison.calibrate=true"],
    ],
)
def test_overrides_give_the_config_omegaconf_gave(run_config, lines):
    before = copy.deepcopy(run_config)
    again = recompared_config(run_config, comparison_overrides(lines))
    assert again == validate_config(_by_omegaconf(run_config, lines))
    assert run_config == before  # the run's config itself is not changed


def test_the_changed_setting_is_the_only_change(run_config):
    again = recompared_config(run_config, comparison_overrides(["comparison.k=3"]))
    first = validate_config(run_config)
    assert again.comparison.k == 3 and first.comparison.k == 2.0
    assert again.model_copy(update={"comparison": first.comparison}) == first


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("comparison.objectives.5.min_effect=1", "bad-override"),  # no such list item
        ("comparison.objectives.first.min_effect=1", "bad-override"),  # not an index
        ("comparison.k.scale=1", "bad-override"),  # k is a number, not a mapping
        ("comparison.k=-1", "bad-config"),
        ("comparison.extra=1", "bad-config"),  # not a comparison setting the schema has
        ("comparison.objectives=[{metric:task_success}]", "bad-config"),
    ],
)
def test_overrides_that_do_not_give_a_config_are_refused(run_config, line, reason):
    with pytest.raises(ConfigError) as error:
        recompared_config(run_config, comparison_overrides([line]))
    assert error.value.reason == reason


@pytest.mark.parametrize(
    "override",
    [
        "comparison.k=3",  # a command line's text, not parsed
        # A digit Hydra's grammar would refuse, made in Python: not a list index.
        ComparisonOverride("comparison.objectives.\N{SUPERSCRIPT TWO}.min_effect", 1),
        ComparisonOverride("comparison.objectives.-1.min_effect", 1),
    ],
)
def test_an_override_made_in_python_that_is_not_one_is_refused(run_config, override):
    with pytest.raises(ConfigError) as error:
        recompared_config(run_config, [override])
    assert error.value.reason == "bad-override"
