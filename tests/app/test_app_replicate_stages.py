"""One replicate as named stages (issue 28, item 1), in process.

``run_replicate`` is ``prepare_replicate -> reuse_or_run -> assemble_and_publish ->
evaluate_replicate -> record_replicate``; each stage is public and reads the one frozen
record the first stage made. The CLI's quickstart tree (run by ``run_replicate`` in a
subprocess) is the independent reference the stages, called one by one, are held to.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from xaytune.core.errors import ConfigError
from xaytune.core.harness_comparison import TIME_METRICS
from xaytune.experiment.config import CacheConfig, validate_config
from xaytune.experiment.parts import resolve_candidates
from xaytune.experiment.replicate import (
    assemble_and_publish,
    evaluate_replicate,
    prepare_replicate,
    record_replicate,
    reuse_or_run,
    run_replicate,
)
from xaytune.experiment.source import load_source
from xaytune.experiment.tree.files import CANDIDATE_FILE, REPLICATE_FILE
from xaytune.experiment.tree.intent import intent_of, write_intent
from xaytune.experiment.tree.manifest import what_is_run

pytestmark = pytest.mark.slow

SEED = 101
REPLICATE = Path("candidates") / "calculator" / f"seed-{SEED}"


def _config(quickstart, cache: CacheConfig):
    plain = quickstart.manifest()["config"]
    cfg = resolve_candidates(validate_config(plain)).model_copy(update={"cache": cache})
    return cfg, plain


def _tree(cfg, plain, out: Path) -> str:
    """A run tree with its intent written; the intent's digest."""
    out.mkdir()
    return write_intent(out, intent_of(cfg, what_is_run(plain), load_source(cfg)), resume=False)


def _comparable(record: dict) -> dict:
    """A replicate record without what no run repeats (times, and the digests that
    cover them)."""
    evaluations = [
        {
            "evaluator_fingerprint": e["evaluator_fingerprint"],
            "metrics": [m for m in e["metrics"] if m["metric"] not in TIME_METRICS],
        }
        for e in record["evaluations"]
    ]
    kept = ("seed", "suite_digest", "assignment_digest", "facets", "timing_environment")
    return {key: record[key] for key in kept} | {
        "evaluations": evaluations,
        "task_success": record["task_observations"]["task_success"],
    }


def test_prepare_sets_up_without_running(tmp_path, quickstart):
    cfg, plain = _config(quickstart, CacheConfig(mode="off"))
    out = tmp_path / "run"
    prepared = prepare_replicate(cfg, label="a", seed=SEED, out=out, intent=_tree(cfg, plain, out))
    assert prepared.fresh and not prepared.use_cache  # the cache is off
    assert prepared.directory == out / REPLICATE
    assert json.loads((out / REPLICATE.parent / CANDIDATE_FILE).read_bytes())["label"] == "a"
    # One spec per assigned task (the CLI's evaluation lists the same tasks), no attempt.
    cli = quickstart.out / REPLICATE / "evaluation" / "outcome" / "evaluation.json"
    assert len(prepared.specs) == len(json.loads(cli.read_bytes())["task_ids"])
    assert list((out / REPLICATE / "evidence").rglob("tasks/*/*.jsonl")) == []
    assert not (out / REPLICATE / REPLICATE_FILE).exists()
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.seed = 102  # type: ignore[misc]


def test_the_stages_one_by_one_give_the_replicate_the_cli_gave(tmp_path, quickstart):
    cfg, plain = _config(quickstart, CacheConfig(mode="off"))
    out = tmp_path / "run"
    prepared = prepare_replicate(cfg, label="a", seed=SEED, out=out, intent=_tree(cfg, plain, out))
    produced = reuse_or_run(prepared)
    assert produced.reused is None and len(produced.runs) == len(prepared.specs)
    published = assemble_and_publish(prepared, produced)
    evaluations = evaluate_replicate(prepared, published)
    assert [e.result.evaluator_fingerprint for e in evaluations] == [
        json.loads((quickstart.out / REPLICATE / REPLICATE_FILE).read_bytes())["evaluations"][0][
            "evaluator_fingerprint"
        ]
    ]
    outcome = record_replicate(prepared, published, evaluations)
    assert (outcome.candidate, outcome.seed, outcome.reused) == ("calculator", SEED, False)
    assert outcome.attempts == len(prepared.specs) and outcome.skipped == 0
    assert outcome.evidence_digest == published.evidence.digest
    ours = json.loads((out / REPLICATE / REPLICATE_FILE).read_bytes())
    cli = json.loads((quickstart.out / REPLICATE / REPLICATE_FILE).read_bytes())
    assert _comparable(ours) == _comparable(cli)


def test_a_cached_replicate_runs_nothing_and_records_the_same_bytes(tmp_path, quickstart):
    cfg, plain = _config(quickstart, CacheConfig(dir=str(tmp_path / "cache"), mode="read-write"))
    first = tmp_path / "first"
    # The library call with its defaults (harness, suite and toolbox from the config).
    ran = run_replicate(cfg, label="a", seed=SEED, out=first, intent=_tree(cfg, plain, first))
    assert not ran.reused and ran.attempts > 0
    second = tmp_path / "second"
    prepared = prepare_replicate(
        cfg, label="a", seed=SEED, out=second, intent=_tree(cfg, plain, second)
    )
    produced = reuse_or_run(prepared)
    assert produced.runs == () and produced.subject is not None
    assert produced.reused is not None and produced.reused.key == prepared.cache_key
    published = assemble_and_publish(prepared, produced)
    outcome = record_replicate(prepared, published, evaluate_replicate(prepared, published))
    assert outcome.reused and outcome.attempts == 0 and outcome.skipped == len(prepared.specs)
    assert outcome.evidence_digest == ran.evidence_digest
    record = (first / REPLICATE / REPLICATE_FILE).read_bytes()
    assert (second / REPLICATE / REPLICATE_FILE).read_bytes() == record


def test_an_unknown_candidate_is_refused_before_anything_is_written(tmp_path, quickstart):
    cfg, _ = _config(quickstart, CacheConfig(mode="off"))
    with pytest.raises(ConfigError) as refused:
        run_replicate(cfg, label="zz", seed=SEED, out=tmp_path)
    assert refused.value.reason == "bad-config"
    assert list(tmp_path.iterdir()) == []


def test_a_candidates_file_is_written_once_for_its_seeds_and_again_when_it_changes(
    tmp_path, quickstart
):
    cfg, plain = _config(quickstart, CacheConfig(mode="off"))
    out = tmp_path / "run"
    intent = _tree(cfg, plain, out)
    path = out / REPLICATE.parent / CANDIDATE_FILE
    prepare_replicate(cfg, label="a", seed=SEED, out=out, intent=intent)
    first = path.stat()
    prepare_replicate(cfg, label="a", seed=SEED + 1, out=out, intent=intent)
    assert path.stat().st_ino == first.st_ino  # the same bytes: not replaced
    # Other bytes (an edit, or another label of the same harness) are written whole.
    path.write_bytes(b'{"label":"edited"}\n')
    prepare_replicate(cfg, label="a", seed=SEED + 2, out=out, intent=intent)
    assert json.loads(path.read_bytes())["label"] == "a"
    assert path.stat().st_ino != first.st_ino
