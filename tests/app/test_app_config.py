"""The Hydra config tree, composed in-process with Hydra's compose API."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

from xaytune.app.main import resolve_config
from xaytune.core.errors import ConfigError
from xaytune.evaluation.harness import EvaluationSpec, EvaluatorSpec, bind_evaluation
from xaytune.experiment.config import ExperimentConfig, validate_config
from xaytune.experiment.evaluators import configured_evaluator
from xaytune.experiment.source import load_source

CONF = Path(__file__).resolve().parents[2] / "xaytune" / "conf"


def _compose(*overrides: str):
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def _evaluator_fingerprint(cfg: ExperimentConfig, label: str = "outcome") -> str:
    evaluator, grant = configured_evaluator(cfg, load_source(cfg), label)
    config = cfg.evaluators[label]
    spec = EvaluationSpec(
        evaluator=EvaluatorSpec(name=config.name, config=config.config),
        grant=grant,
    )
    return bind_evaluation(evaluator, spec).fingerprint


def test_a_candidate_variant_inherits_its_base():
    raw = _compose("+experiment=quickstart")
    base = OmegaConf.to_container(OmegaConf.load(CONF / "candidate" / "base.yaml"))
    a, b = raw.candidates.a, raw.candidates.b
    assert a.name == "calculator" and b.name == "mental"
    # Fields the variants do not set come from base.yaml through the defaults list.
    for key in ("max_turns", "token_budget", "tool_call_budget", "model_retries", "answer"):
        assert OmegaConf.to_container(a)[key] == base[key], key
        assert OmegaConf.to_container(b)[key] == base[key], key
    # ...and what a variant sets wins over the base.
    assert list(a.tools) == ["calculator"] and a.system_prompt != base["system_prompt"]
    cfg, _ = resolve_config(raw)
    assert cfg.candidates["a"].max_turns == base["max_turns"]
    assert cfg.candidates["a"].fingerprint != cfg.candidates["b"].fingerprint


def test_overriding_a_candidate_field_changes_only_that_candidate():
    cfg, _ = resolve_config(_compose("+experiment=quickstart", "candidates.b.max_turns=3"))
    reference, _ = resolve_config(_compose("+experiment=quickstart"))
    assert cfg.candidates["b"].max_turns == 3
    assert cfg.candidates["a"].fingerprint == reference.candidates["a"].fingerprint
    assert cfg.candidates["b"].fingerprint != reference.candidates["b"].fingerprint


REORDERED = {
    "outcome": """\
# The shipped outcome evaluator, keys in reverse order, flow style, quoted scalars.
config:
  spec:
    scorer: {code: null, params: {}, name: "exact"}
    match: {numeric: true, case_sensitive: false, strip: true}
  metadata: {disclosure: "${disclosure}", name: "exact-match"}
  kind: "HarnessOutcomeEvaluation"
  apiVersion: 'xaytune.harness-evaluation/v1alpha1'
grant_reference_egress: false
judge_model: null
name: "harness-outcome"
""",
}


def _reordered_judge() -> str:
    """The shipped judge evaluator with every mapping's keys reversed."""

    def reverse(node):
        if isinstance(node, dict):
            return {key: reverse(node[key]) for key in reversed(list(node))}
        return node

    shipped = OmegaConf.to_container(OmegaConf.load(CONF / "evaluator" / "judge.yaml"))
    return OmegaConf.to_yaml(OmegaConf.create(reverse(shipped)))


@pytest.mark.parametrize(("shipped", "experiment"), [("outcome", "quickstart"), ("judge", "judge")])
def test_key_order_and_formatting_never_change_the_evaluator_fingerprint(
    tmp_path, shipped, experiment
):
    text = REORDERED.get(shipped) or _reordered_judge()
    (tmp_path / "evaluator").mkdir()
    (tmp_path / "evaluator" / "reordered.yaml").write_text(text)
    raw = _compose(f"+experiment={experiment}")
    label = {"outcome": "outcome", "judge": "judge"}[shipped]
    other = _compose(
        f"+experiment={experiment}",
        f"hydra.searchpath=[file://{tmp_path}]",
        f"evaluator@evaluators.{label}=reordered",
    )
    plain = OmegaConf.to_container(raw.evaluators[label], resolve=True)
    plain_other = OmegaConf.to_container(other.evaluators[label], resolve=True)
    assert plain == plain_other  # the same values...
    assert list(plain["config"]) != list(plain_other["config"])  # ...in another order
    cfg, _ = resolve_config(raw)
    cfg_other, _ = resolve_config(other)
    assert _evaluator_fingerprint(cfg, label) == _evaluator_fingerprint(cfg_other, label)


def test_disclosure_stays_outside_the_evaluator_fingerprint():
    aggregate, _ = resolve_config(_compose("+experiment=quickstart"))
    per_task, _ = resolve_config(_compose("+experiment=quickstart", "disclosure=per-task"))
    assert per_task.evaluators["outcome"].config["metadata"]["disclosure"] == "per-task"
    assert _evaluator_fingerprint(aggregate) == _evaluator_fingerprint(per_task)


def test_a_changed_match_rule_changes_the_evaluator_fingerprint():
    base, _ = resolve_config(_compose("+experiment=quickstart"))
    changed, _ = resolve_config(
        _compose(
            "+experiment=quickstart", "evaluators.outcome.config.spec.match.case_sensitive=true"
        )
    )
    assert _evaluator_fingerprint(base) != _evaluator_fingerprint(changed)


@pytest.mark.slow
def test_the_quickstart_ran_with_the_composed_evaluator(quickstart):
    cfg, plain = resolve_config(_compose("+experiment=quickstart", "progress=false"))
    fingerprint = _evaluator_fingerprint(cfg)
    manifest = quickstart.manifest()
    assert {f for r in manifest["replicates"] for f in r["evaluator_fingerprints"]} == {fingerprint}
    assert manifest["config"] == plain
    for label in ("a", "b"):
        assert (
            manifest["candidates"][label]["harness_fingerprint"]
            == cfg.candidates[label].fingerprint
        )


SHIPPED = [
    ("quickstart", ()),
    ("quickstart_cost", ()),
    ("judge", ()),
    ("openai_endpoint", ("model.base_url=http://127.0.0.1:8080/v1", "model.name=my-model")),
]


@pytest.mark.parametrize(("experiment", "overrides"), SHIPPED, ids=[e for e, _ in SHIPPED])
def test_shipped_experiments_compose_and_validate(experiment, overrides):
    cfg, plain = resolve_config(_compose(f"+experiment={experiment}", *overrides))
    assert cfg.experiment.name == experiment
    assert set(cfg.candidates) == {"a", "b"}
    assert len(cfg.seeds) >= 3  # the paired rule needs R >= 3 to decide anything
    assert "hydra" not in plain
    # quality is measured only by the judge: an objective on it needs a judge.
    names = {evaluator.name for evaluator in cfg.evaluators.values()}
    if "quality" in {o.metric for o in cfg.comparison.objectives}:
        assert "harness-judge" in names
    for label in cfg.evaluators:
        _evaluator_fingerprint(cfg, label)  # each evaluator config binds (canonical, valid)


def test_openai_endpoint_without_base_url_names_the_key():
    with pytest.raises(ConfigError, match=r"model\.base_url"):
        resolve_config(_compose("+experiment=openai_endpoint"))


def test_a_typo_in_a_candidate_names_the_key():
    with pytest.raises(ConfigError, match=r"candidates\.a\.max_turn: unknown key"):
        resolve_config(_compose("+experiment=quickstart", "+candidates.a.max_turn=3"))


def test_two_runs_started_together_get_their_own_directories(tmp_path, monkeypatch):
    # hydra.run.dir is experiments/<name>/<second>: two runs launched in the same
    # second must not share (and mix) one output tree.
    monkeypatch.chdir(tmp_path)
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        configs = [
            compose(
                config_name="config",
                overrides=["+experiment=quickstart"],
                return_hydra_config=True,
            )
            for _ in range(3)
        ]
    dirs = [Path(str(c.hydra.run.dir)) for c in configs]
    assert len(set(dirs)) == 3, dirs
    for directory in dirs:
        assert directory.parent == Path("experiments") / "quickstart"
        assert directory.is_dir()
    assert Path(str(configs[0].hydra.run.dir)) == dirs[0]  # resolved once per config
    # A resume continues in the directory it names.
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        resumed = compose(
            config_name="config",
            overrides=["+experiment=quickstart", f"resume={dirs[0]}"],
            return_hydra_config=True,
        )
    assert Path(str(resumed.hydra.run.dir)) == dirs[0]
    assert resumed.hydra.output_subdir is None  # and leaves its .hydra/ alone
    assert configs[0].hydra.output_subdir == ".hydra"


def test_two_sweeps_started_together_get_their_own_directories(tmp_path, monkeypatch):
    # hydra.sweep.dir too: each sweep's jobs and comparison land in a tree of its own.
    monkeypatch.chdir(tmp_path)
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        configs = [
            compose(
                config_name="config",
                overrides=["+experiment=quickstart", "seed=101"],
                return_hydra_config=True,
            )
            for _ in range(3)
        ]
    dirs = [Path(str(c.hydra.sweep.dir)) for c in configs]
    assert len(set(dirs)) == 3, dirs
    assert all(d.parent == Path("experiments") / "quickstart" and d.is_dir() for d in dirs)
    assert Path(str(configs[0].hydra.sweep.dir)) == dirs[0]  # resolved once per config


def test_a_bad_key_is_named_as_the_user_wrote_it_whatever_the_labels():
    plain = OmegaConf.to_container(_compose("+experiment=quickstart"), resolve=True)
    plain["evaluators"] = {"target_v2": {**plain["evaluators"]["outcome"], "bogus": 1}}
    with pytest.raises(ConfigError) as caught:
        validate_config(plain)
    assert "evaluators.target_v2.bogus: unknown key" in str(caught.value)
    plain = OmegaConf.to_container(_compose("+experiment=quickstart"), resolve=True)
    plain["model"]["latency_s"] = -1
    with pytest.raises(ConfigError) as caught:
        validate_config(plain)
    assert str(caught.value).startswith("bad-config: model.latency_s: ")


def test_a_refused_resume_names_the_keys_that_changed() -> None:
    """Dotted paths with old -> new, long values clipped, absent keys said, at most three
    and a count of the rest (computed by hand from the two dicts)."""
    from xaytune.experiment.tree.manifest import config_changes

    before = {"sampling": {"count": 20}, "model": {"name": "a", "x": 1}, "tag": "t"}
    now = {"sampling": {"count": 10}, "model": {"name": "a", "x": 1}, "tag": "t"}
    assert config_changes(before, now) == "sampling.count: 20 -> 10"
    assert config_changes({"a": 1}, {"b": 1}) == "a: 1 -> (absent), b: (absent) -> 1"
    long = {"p": "x" * 100}
    assert config_changes({"p": "y"}, long) == f'p: "y" -> "{"x" * 36}...'
    many = config_changes({k: 0 for k in "abcde"}, {k: 1 for k in "abcde"})
    assert many == "a: 0 -> 1, b: 0 -> 1, c: 0 -> 1, and 2 more"
