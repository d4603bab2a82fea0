"""Config xaytune.harness-evaluation/v1alpha1: canonical form, fingerprint, binding."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xaytune.core.errors import EvaluationError
from xaytune.evaluation.config import config_fingerprint, resolve_config
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessJudgeEvaluator,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    judge_config,
    outcome_config,
)
from xaytune.models import SimulatedModel

JUDGE = SimulatedModel(seed=7)


def _judge_cfg(**overrides):
    return judge_config(judge_model=JUDGE.identity, rubric="Score correctness.", **overrides)


def _refusal(config) -> EvaluationError:
    with pytest.raises(EvaluationError) as caught:
        resolve_config(config)
    return caught.value


def test_helpers_produce_canonical_configs_that_resolve():
    assert resolve_config(outcome_config()).kind == "HarnessOutcomeEvaluation"
    assert resolve_config(_judge_cfg()).kind == "HarnessJudgeEvaluation"


def test_outcome_helper_defaults_to_aggregate_disclosure_written_out():
    assert outcome_config()["metadata"] == {"name": "harness-outcome", "disclosure": "aggregate"}


def test_resolve_refuses_missing_field_and_lists_it():
    config = outcome_config()
    del config["spec"]["match"]["numeric"]
    error = _refusal(config)
    assert error.reason == "non-canonical-config"
    assert "spec.match.numeric" in error.message
    assert "\n" not in error.message


def test_resolve_refuses_missing_disclosure_instead_of_defaulting_it():
    config = outcome_config()
    del config["metadata"]["disclosure"]
    error = _refusal(config)
    assert error.reason == "non-canonical-config"
    assert "metadata.disclosure" in error.message


def test_resolve_refuses_extra_field_and_lists_it():
    config = outcome_config()
    config["metadata"]["owner"] = "me"
    config["spec"]["match"]["fuzzy"] = True
    error = _refusal(config)
    assert error.reason == "non-canonical-config"
    assert "metadata.owner" in error.message and "spec.match.fuzzy" in error.message


def test_resolve_lists_missing_and_extra_fields_together():
    config = _judge_cfg()
    del config["spec"]["judge_retries"]
    del config["spec"]["scale"]["max"]
    config["spec"]["temperature"] = 0
    error = _refusal(config)
    assert error.reason == "non-canonical-config"
    for field in ("spec.judge_retries", "spec.scale.max", "spec.temperature"):
        assert field in error.message


def test_resolve_refuses_missing_kind_as_non_canonical():
    config = outcome_config()
    del config["kind"]
    assert _refusal(config).reason == "non-canonical-config"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "match", "strip"), "yes"),  # strict: a bool is written as a bool
        (("metadata", "disclosure"), "everything"),
        (("apiVersion",), "xaytune.harness-evaluation/v2"),
        (("metadata", "name"), "../etc"),
    ],
)
def test_resolve_refuses_invalid_values(path, value):
    config = outcome_config()
    target = config
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _refusal(config).reason == "invalid-config"


@pytest.mark.parametrize(
    ("field", "value"),
    [("judge_repeats", 0), ("judge_retries", -1), ("scale", {"min": 5, "max": 5})],
)
def test_resolve_refuses_invalid_judge_values(field, value):
    config = _judge_cfg()
    config["spec"][field] = value
    assert _refusal(config).reason == "invalid-config"


def test_resolve_refuses_rubric_whose_digest_is_not_its_texts():
    config = _judge_cfg()
    config["spec"]["rubric"]["text"] = "Score style."
    assert _refusal(config).reason == "rubric-digest-mismatch"


def test_fingerprint_ignores_disclosure_only():
    aggregate = resolve_config(outcome_config(disclosure="aggregate"))
    per_task = resolve_config(outcome_config(disclosure="per-task"))
    assert config_fingerprint(aggregate) == config_fingerprint(per_task)


@pytest.mark.parametrize(
    "change",
    [
        {"name": "other"},
        {"strip": False},
        {"case_sensitive": True},
        {"numeric": False},
        {"scorer": "numeric"},
        {"scorer_params": {"abs_tol": 0.5}},
    ],
)
def test_fingerprint_changes_with_any_outcome_field(change):
    base = config_fingerprint(resolve_config(outcome_config()))
    assert config_fingerprint(resolve_config(outcome_config(**change))) != base


@pytest.mark.parametrize(
    "change",
    [
        {"scale": (0, 10)},
        {"reference_access": "reference"},
        {"judge_repeats": 3},
        {"judge_retries": 0},
        {"rubric": "Score style."},
        {"judge_model": SimulatedModel(seed=8).identity},
    ],
)
def test_fingerprint_changes_with_any_judge_field(change):
    base = config_fingerprint(resolve_config(_judge_cfg()))
    arguments = {"judge_model": JUDGE.identity, "rubric": "Score correctness.", **change}
    assert config_fingerprint(resolve_config(judge_config(**arguments))) != base
    disclosed = {**arguments, "disclosure": "per-task"}
    assert config_fingerprint(resolve_config(judge_config(**arguments))) == config_fingerprint(
        resolve_config(judge_config(**disclosed))
    )


@given(
    name=st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    flip=st.integers(0, 2),
)
def test_fingerprint_property_disclosure_out_every_flag_in(name, flags, flip):
    strip, case, numeric = flags
    config = outcome_config(name=name, strip=strip, case_sensitive=case, numeric=numeric)
    other = copy.deepcopy(config)
    other["metadata"]["disclosure"] = "per-task"
    assert config_fingerprint(resolve_config(config)) == config_fingerprint(resolve_config(other))
    key = ("strip", "case_sensitive", "numeric")[flip]
    other["spec"]["match"][key] = not other["spec"]["match"][key]
    assert config_fingerprint(resolve_config(config)) != config_fingerprint(resolve_config(other))


def test_bind_refuses_spec_naming_another_evaluator(tmp_path, kit):
    source = kit.make_suite(tmp_path / "suite", [("t1", "say:1:1:1", "1")])
    spec = EvaluationSpec(evaluator=EvaluatorSpec(name="harness-judge", config=outcome_config()))
    with pytest.raises(EvaluationError) as caught:
        bind_evaluation(HarnessOutcomeEvaluator(source), spec)
    assert caught.value.reason == "unsupported-evaluator"


def test_bind_refuses_config_of_another_evaluator_kind(tmp_path, kit):
    source = kit.make_suite(tmp_path / "suite", [("t1", "say:1:1:1", "1")])
    spec = EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=_judge_cfg()))
    with pytest.raises(EvaluationError) as caught:
        bind_evaluation(HarnessOutcomeEvaluator(source), spec)
    assert caught.value.reason == "unsupported-evaluator"


def test_bind_refuses_non_canonical_config(tmp_path, kit):
    source = kit.make_suite(tmp_path / "suite", [("t1", "say:1:1:1", "1")])
    config = outcome_config()
    del config["spec"]["match"]
    spec = EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=config))
    with pytest.raises(EvaluationError) as caught:
        bind_evaluation(HarnessOutcomeEvaluator(source), spec)
    assert caught.value.reason == "non-canonical-config"
    assert "spec.match" in caught.value.message


def test_bound_evaluation_records_fingerprint_disclosure_and_determinism(tmp_path, kit):
    source = kit.make_suite(tmp_path / "suite", [("t1", "say:1:1:1", "1")])
    config = outcome_config(disclosure="per-task")
    bound = bind_evaluation(
        HarnessOutcomeEvaluator(source),
        EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=config)),
    )
    assert bound.disclosure == "per-task"
    assert bound.determinism == "DETERMINISTIC"
    # The bound config is the given one with the scorer's code identity pinned.
    assert config["spec"]["scorer"]["code"] is None
    pinned = copy.deepcopy(config)
    pinned["spec"]["scorer"]["code"] = bound.config["spec"]["scorer"]["code"]
    assert pinned["spec"]["scorer"]["code"]["target"] == "xaytune.evaluation.scorers._exact.exact"
    assert bound.config == pinned
    assert bound.fingerprint == config_fingerprint(resolve_config(pinned))
    assert bound.fingerprint != config_fingerprint(resolve_config(config))
    judge_bound = bind_evaluation(
        HarnessJudgeEvaluator(source, judge_model=JUDGE),
        EvaluationSpec(evaluator=EvaluatorSpec(name="harness-judge", config=_judge_cfg())),
    )
    assert judge_bound.determinism == "STOCHASTIC"
