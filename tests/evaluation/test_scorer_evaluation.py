"""Scorers inside ``harness-outcome``: resolution at bind time, code identity in the
evaluator fingerprint (C3), refusals, and end-to-end task_success by hand."""

from __future__ import annotations

import copy
import importlib
import sys
import textwrap
import uuid

import pytest

from xaytune.core.errors import EvaluationError, PluginError
from xaytune.core.harness_comparison import (
    CandidateRuns,
    ComparisonSpec,
    ObjectiveMetric,
    ReplicateRuns,
    compare,
)
from xaytune.evaluation.config import BoundEvaluation, config_fingerprint, resolve_config
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.evaluation.scorers import Score, resolve_scorer

ONE_TASK = [("t1", "say:1:1:1", "1")]


def spec_of(config) -> EvaluationSpec:
    return EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=config))


def bind(source, **options) -> BoundEvaluation:
    return bind_evaluation(HarnessOutcomeEvaluator(source), spec_of(outcome_config(**options)))


def evaluate(run, out, bound=None, **options):
    evaluator = HarnessOutcomeEvaluator(run.source)
    bound = bound or bind(run.source, **options)
    subject = publish_evidence(run.evidence, run.store)
    return run_harness_evaluation(
        evaluator, bound, subject, source=run.source, output_uri=str(out), seed=101
    )


def by_task(evaluation):
    return {o.task_id: o.value for o in evaluation.task_observations["task_success"]}


@pytest.fixture
def source(tmp_path, kit):
    return kit.make_suite(tmp_path / "suite", ONE_TASK)


def write_module(directory, monkeypatch, body: str) -> str:
    """A fresh module file under ``directory``, importable by its (unique) name."""
    name = f"scorers_{uuid.uuid4().hex[:8]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


# --- config shape ----------------------------------------------------------------------


def test_outcome_config_writes_the_scorer_with_code_null():
    config = outcome_config(scorer="numeric", scorer_params={"abs_tol": 0.5})
    assert config["spec"]["scorer"] == {"name": "numeric", "params": {"abs_tol": 0.5}, "code": None}
    assert outcome_config()["spec"]["scorer"] == {"name": "exact", "params": {}, "code": None}


@pytest.mark.parametrize("field", ["name", "params", "code"])
def test_resolve_refuses_a_scorer_without_every_field(field):
    config = outcome_config()
    del config["spec"]["scorer"][field]
    with pytest.raises(EvaluationError) as caught:
        resolve_config(config)
    assert caught.value.reason == "non-canonical-config"
    assert f"spec.scorer.{field}" in caught.value.message


def test_resolve_refuses_a_config_without_a_scorer():
    config = outcome_config()
    del config["spec"]["scorer"]
    with pytest.raises(EvaluationError) as caught:
        resolve_config(config)
    assert caught.value.reason == "non-canonical-config"


# --- binding pins the code identity ------------------------------------------------------


def test_binding_pins_the_builtin_scorers_code(source):
    bound = bind(source, scorer="numeric", scorer_params={"abs_tol": 1})
    code = bound.config["spec"]["scorer"]["code"]
    assert code["kind"] == "scorer" and code["name"] == "numeric"
    assert code["target"] == "xaytune.evaluation.scorers._numeric.numeric"
    assert code["version"] == "0"
    assert code["source_sha256"].startswith("sha256:") and len(code["source_sha256"]) == 71
    assert bound.config["spec"]["scorer"]["params"] == {"abs_tol": 1}  # as written
    assert bound.fingerprint == config_fingerprint(resolve_config(bound.config))


def test_binding_an_already_pinned_config_gives_the_same_fingerprint(source):
    bound = bind(source, scorer="f1")
    again = bind_evaluation(HarnessOutcomeEvaluator(source), spec_of(bound.config))
    assert again.fingerprint == bound.fingerprint and again.config == bound.config


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({}, {"scorer": "numeric"}),
        ({"scorer": "numeric"}, {"scorer": "numeric", "scorer_params": {"abs_tol": 0.5}}),
        ({"scorer": "f1"}, {"scorer": "f1", "scorer_params": {"threshold": 0.8}}),
        ({"scorer": "normalized-text"}, {"scorer": "f1"}),
    ],
)
def test_fingerprint_changes_with_the_scorer_and_its_params(source, one, other):
    assert bind(source, **one).fingerprint != bind(source, **other).fingerprint


def test_a_pinned_code_that_is_not_the_current_one_is_refused(source):
    bound = bind(source)
    config = copy.deepcopy(bound.config)
    pinned = config["spec"]["scorer"]["code"]["source_sha256"]
    config["spec"]["scorer"]["code"]["source_sha256"] = "sha256:" + "0" * 64
    with pytest.raises(EvaluationError) as caught:
        bind_evaluation(HarnessOutcomeEvaluator(source), spec_of(config))
    assert caught.value.reason == "scorer-mismatch"
    assert "'exact'" in caught.value.message
    assert pinned in caught.value.message and "sha256:" + "0" * 64 in caught.value.message


def test_a_bound_evaluation_without_pinned_code_is_refused(source):
    config = resolve_config(outcome_config())
    unpinned = BoundEvaluation(
        evaluator="harness-outcome",
        kind=config.kind,
        determinism="DETERMINISTIC",
        config=config.model_dump(mode="json"),
        fingerprint=config_fingerprint(config),
        disclosure=config.metadata.disclosure,
    )
    with pytest.raises(EvaluationError) as caught:
        HarnessOutcomeEvaluator(source).check_execution(unpinned)
    assert caught.value.reason == "scorer-mismatch"


# --- refusals at bind time -------------------------------------------------------------


@pytest.mark.parametrize(
    ("scorer", "params", "reason"),
    [
        ("levenshtein", {}, "unknown-part"),
        ("_user_scorers.nowhere", {}, "unknown-part"),
        ("no_such_package.scorers.x", {}, "unknown-part"),
        ("numeric", {"tol": 1}, "bad-part-params"),  # unknown parameter
        ("numeric", {"abs_tol": "0.1"}, "bad-part-params"),  # a string, not a number
        ("numeric", {"abs_tol": -1}, "bad-part-params"),  # below the declared minimum
        ("f1", {"threshold": 1.5}, "bad-part-params"),
        ("regex", {"mode": "match"}, "bad-part-params"),
        ("choice", {"letters": "AB1"}, "bad-part-params"),
        ("includes", {"case_sensitive": "yes"}, "bad-part-params"),
        ("exact", {"match": {"strip": True}}, "bad-part-params"),  # spec.match gives it
        ("_user_scorers.WithinPercent", {"percent": -1}, "bad-part-params"),  # ctor raises
        ("_user_scorers.NoScoreMethod", {}, "bad-part"),
        ("_user_scorers.NOT_A_SCORER", {}, "bad-part"),
        ("_user_scorers.takes_one", {}, "bad-part"),
    ],
)
def test_bind_refuses_a_scorer_it_cannot_use(source, scorer, params, reason):
    with pytest.raises(PluginError) as caught:
        bind(source, scorer=scorer, scorer_params=params)
    assert caught.value.reason == reason
    assert "\n" not in caught.value.message


def test_bind_refuses_a_scorer_module_that_raises_on_import(source, tmp_path, monkeypatch):
    name = write_module(tmp_path, monkeypatch, 'raise RuntimeError("broken")\n')
    with pytest.raises(PluginError) as caught:
        bind(source, scorer=f"{name}.anything")
    assert caught.value.reason == "import-failed"
    assert "RuntimeError: broken" in caught.value.message


# --- user scorers ------------------------------------------------------------------------


def test_user_scorer_by_decorator_name(tmp_path, kit):
    import _user_scorers  # registers "last-word"

    items = [("a", "say:it is Paris:1:1", "paris"), ("b", "say:Paris it is:1:1", "paris")]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    bound = bind(run.source, scorer="last-word")
    code = bound.config["spec"]["scorer"]["code"]
    assert code["name"] == "last-word" and code["version"] == "2"
    assert code["target"] == "_user_scorers.last_word"
    assert by_task(evaluate(run, tmp_path / "out", bound)) == {"a": 1.0, "b": 0.0}
    strict = bind(run.source, scorer="last-word", scorer_params={"case_sensitive": True})
    assert by_task(evaluate(run, tmp_path / "strict", strict)) == {"a": 0.0, "b": 0.0}
    assert _user_scorers.last_word.__xaytune_part__ == ("scorer", "last-word")


def test_user_scorer_by_dotted_path(tmp_path, kit):
    items = [("a", "say:v1.0.2:1:1", "102"), ("b", "say:none:1:1", "7"), ("c", "say:99:1:1", "100")]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    bound = bind(run.source, scorer="_user_scorers.digits_equal")
    assert bound.config["spec"]["scorer"]["code"]["name"] == "_user_scorers.digits_equal"
    # a: digits "102" = "102"; b: no digits; c: "99" != "100"
    assert by_task(evaluate(run, tmp_path / "out", bound)) == {"a": 1.0, "b": 0.0, "c": 0.0}


def test_user_class_scorer_is_constructed_with_its_params(tmp_path, kit):
    items = [("c", "say:99:1:1", "100"), ("d", "say:98.9:1:1", "100")]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    within = bind(run.source, scorer="_user_scorers.WithinPercent", scorer_params={"percent": 1})
    assert within.config["spec"]["scorer"]["code"]["target"] == "_user_scorers.WithinPercent"
    # 1% of 100 = 1: c |99 - 100| = 1 succeeds; d |98.9 - 100| = 1.1 (as doubles) fails
    assert by_task(evaluate(run, tmp_path / "one", within)) == {"c": 1.0, "d": 0.0}
    default = bind(run.source, scorer="_user_scorers.WithinPercent")  # percent = 1.0
    assert default.fingerprint != within.fingerprint  # params as written enter the fingerprint
    wide = bind(run.source, scorer="_user_scorers.WithinPercent", scorer_params={"percent": 2})
    assert by_task(evaluate(run, tmp_path / "two", wide)) == {"c": 1.0, "d": 1.0}


def test_user_scorer_whose_source_changes_changes_the_fingerprint(tmp_path, kit, monkeypatch):
    items = [("a", "say:yes:1:1", "yes"), ("b", "say:no:1:1", "yes")]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    name = write_module(
        tmp_path,
        monkeypatch,
        """
        def agrees(answer: str, reference: str) -> bool:
            return answer == reference
        """,
    )
    first = bind(run.source, scorer=f"{name}.agrees")
    assert by_task(evaluate(run, tmp_path / "first", first)) == {"a": 1.0, "b": 0.0}

    (tmp_path / f"{name}.py").write_text(
        "def agrees(answer: str, reference: str) -> bool:\n    return answer != reference\n"
    )
    # Measuring with the config bound before the edit is refused.
    with pytest.raises(EvaluationError) as caught:
        evaluate(run, tmp_path / "stale", first)
    assert caught.value.reason == "scorer-mismatch"
    assert first.config["spec"]["scorer"]["code"]["source_sha256"] in caught.value.message

    importlib.reload(sys.modules[name])
    second = bind(run.source, scorer=f"{name}.agrees")
    old, new = (b.config["spec"]["scorer"]["code"] for b in (first, second))
    assert old["target"] == new["target"] == f"{name}.agrees"
    assert old["source_sha256"] != new["source_sha256"]
    assert first.fingerprint != second.fingerprint
    assert by_task(evaluate(run, tmp_path / "second", second)) == {"a": 0.0, "b": 1.0}


# --- scorer failures at measure time -----------------------------------------------------


@pytest.mark.parametrize(
    ("scorer", "params", "reference", "said"),
    [
        ("_user_scorers.raises", {}, "1", "RuntimeError"),
        ("_user_scorers.returns_int", {}, "1", "returned int"),
        ("regex", {}, "(1", "not a valid regular expression"),
        ("numeric", {}, "one", "not a number"),
        ("json", {}, "{", "not JSON"),
        ("choice", {}, "Z", "not one of the option letters"),
        ("includes", {}, "", "reference is empty"),
    ],
)
def test_a_failing_scorer_refuses_the_evaluation_naming_the_task(
    tmp_path, kit, scorer, params, reference, said
):
    items = [("broken", "say:1:1:1", reference)]
    run = kit.run_suite(kit.make_suite(tmp_path / "s", items), tmp_path / "r", kit.ScriptedModel())
    bound = bind(run.source, scorer=scorer, scorer_params=params)  # binding reads no reference
    with pytest.raises(EvaluationError) as caught:
        evaluate(run, tmp_path / "out", bound)
    assert caught.value.reason == "scorer-failed"
    assert "task 'broken'" in caught.value.message and said in caught.value.message
    assert scorer in caught.value.message
    assert "\n" not in caught.value.message
    assert not (tmp_path / "out").exists()  # nothing is written


def test_resolved_scorer_accepts_bool_and_score_only(source):
    config = resolve_config(outcome_config(scorer="_user_scorers.digits_equal"))
    resolved = resolve_scorer(config.spec.scorer, config.spec.match, where="test")
    assert resolved.score("a1", "1", task_id="t") == Score(success=True)
    assert resolved.score("a", "1", task_id="t") == Score(success=False, reason="no-digits")


# --- end to end --------------------------------------------------------------------------

E2E = [
    ("a", "say:1,000:100:10", "1000"),  # 1000 vs 1000: |d| = 0 -> 1
    ("b", "say:3.14:100:10", "3.14159"),  # |d| = 0.00159 <= 0.01 -> 1
    ("c", "say:99:100:10", "100"),  # |d| = 1 > 0.01 (rel_tol 0) -> 0
    ("d", "say:about five:100:10", "5"),  # not a number -> 0
    ("e", "prose:10:1", "3"),  # no extracted answer -> 0, the scorer is not called
]


def test_numeric_scorer_end_to_end_hand_computed(tmp_path, kit):
    run = kit.run_suite(kit.make_suite(tmp_path / "s", E2E), tmp_path / "r", kit.ScriptedModel())
    numeric = evaluate(run, tmp_path / "n", scorer="numeric", scorer_params={"abs_tol": 0.01})
    assert by_task(numeric) == {"a": 1.0, "b": 1.0, "c": 0.0, "d": 0.0, "e": 0.0}
    assert numeric.result.metric("task_success").value == 2 / 5
    assert numeric.report.evaluation.config["spec"]["scorer"]["name"] == "numeric"
    # exact (numeric canonicalisation) on the same run: only a matches -> 1/5
    exact = evaluate(run, tmp_path / "x")
    assert by_task(exact) == {"a": 1.0, "b": 0.0, "c": 0.0, "d": 0.0, "e": 0.0}
    assert numeric.result.evaluator_fingerprint != exact.result.evaluator_fingerprint
    # rel_tol 0.01 of |100| = 1: c now succeeds -> 3/5
    relative = evaluate(
        run, tmp_path / "r2", scorer="numeric", scorer_params={"abs_tol": 0.01, "rel_tol": 0.01}
    )
    assert relative.result.metric("task_success").value == 3 / 5


# --- comparability (C3) -------------------------------------------------------------------


def _candidate(name: str, evaluation, run) -> CandidateRuns:
    replicate = ReplicateRuns(
        seed=101,
        suite_digest=run.evidence.suite_digest,
        assignment_digest=run.evidence.assignment_digest,
        evaluations=(evaluation.result,),
        facets={"model": {"id": "scripted"}},
    )
    return CandidateRuns(
        name=name, harness_fingerprint=f"sha256:harness-{name}", replicates=(replicate,)
    )


def test_c3_fails_when_the_two_sides_used_different_scorers(tmp_path, kit):
    run = kit.run_suite(kit.make_suite(tmp_path / "s", E2E), tmp_path / "r", kit.ScriptedModel())
    exact = evaluate(run, tmp_path / "x")
    exact_again = evaluate(run, tmp_path / "x2")
    numeric = evaluate(run, tmp_path / "n", scorer="numeric", scorer_params={"abs_tol": 0.01})
    objective = ObjectiveMetric(metric="task_success", direction="maximize")
    objectives = ComparisonSpec(objectives=(objective,))

    same = compare(
        _candidate("a", exact, run), _candidate("b", exact_again, run), objectives, run.source.suite
    )
    assert same.comparability.comparable and same.comparability.failures == ()

    report = compare(
        _candidate("a", exact, run), _candidate("b", numeric, run), objectives, run.source.suite
    )
    assert not report.comparability.comparable
    (failure,) = report.comparability.failures
    assert (failure.condition, failure.reason) == ("C3", "evaluator-differs")
    assert [(d.item, d.a, d.b) for d in failure.differences] == [
        (
            "evaluator harness-outcome",
            (exact.result.evaluator_fingerprint,),
            (numeric.result.evaluator_fingerprint,),
        )
    ]
    assert report.relation == "not-comparable"
