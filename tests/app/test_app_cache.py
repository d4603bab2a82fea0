"""Issue 17, never pay twice: the evidence cache (xaytune.experiment.tree.cache)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xaytune.core.canonical import canonical_bytes
from xaytune.experiment.tree.cache import replicate_key

pytestmark = pytest.mark.slow

KEY_PARTS = {
    "suite_digest": "sha256:" + "1" * 64,
    "assignment_digest": "sha256:" + "2" * 64,
    "specs": (),
    "model": {"provider": "simulated", "model": "sim", "revision": "1", "parameters": {}},
    "seed": 101,
    "durability": "fsync",
    "model_adapter": {"target": "xaytune.models.simulated:SimulatedModel", "sha": "a"},
}
CHANGED = {
    "suite_digest": "sha256:" + "3" * 64,
    "assignment_digest": "sha256:" + "4" * 64,
    "model": {**KEY_PARTS["model"], "revision": "2"},
    "seed": 102,
    "durability": "none",
    "model_adapter": {**KEY_PARTS["model_adapter"], "sha": "b"},
}


class _Spec:
    def __init__(self, fingerprint: str) -> None:
        self.fingerprint = fingerprint


@pytest.mark.parametrize("part", sorted(CHANGED))
def test_the_key_changes_with_each_part(part):
    assert replicate_key(**{**KEY_PARTS, part: CHANGED[part]}) != replicate_key(**KEY_PARTS)


def test_the_key_changes_with_any_task_spec():
    one = [_Spec("sha256:a"), _Spec("sha256:b")]
    other = [_Spec("sha256:a"), _Spec("sha256:c")]
    key = replicate_key(**{**KEY_PARTS, "specs": one})
    assert key == replicate_key(**{**KEY_PARTS, "specs": list(one)})
    assert key != replicate_key(**{**KEY_PARTS, "specs": other})
    assert key != replicate_key(**{**KEY_PARTS, "specs": one[::-1]})


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """The cache on (read-write) in this test's own directory."""
    monkeypatch.setenv("XAYTUNE_CACHE_MODE", "read-write")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))
    return tmp_path / "cache-home" / "xaytune" / "evidence" / "v2"


def _run(xaytune, tree: Path, *overrides: str):
    result = xaytune(
        tree.parent, "+experiment=quickstart", "progress=false", f"hydra.run.dir={tree}",
        *overrides,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.describe()
    return json.loads((tree / "manifest.json").read_bytes())


def _reused(manifest) -> dict[str, bool]:
    return {r["path"]: r["reused"] is not None for r in manifest["replicates"]}


def _attempts(tree: Path, label: str) -> dict[str, bytes]:
    base = tree / "candidates" / label
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*.jsonl"))}


def test_changing_only_the_challenger_reuses_the_baseline_and_verifies(
    tmp_path, cached, xaytune, verify, monkeypatch
):
    first = _run(xaytune, tmp_path / "first")
    assert not any(_reused(first).values())
    assert len(list(cached.iterdir())) == 6  # every replicate published

    second = _run(xaytune, tmp_path / "second", "candidate@candidates.b=terse")
    reused = _reused(second)
    assert {p for p, r in reused.items() if r} == {
        f"candidates/calculator/seed-{s}" for s in (101, 102, 103)
    }
    assert {p for p, r in reused.items() if not r} == {
        f"candidates/terse/seed-{s}" for s in (101, 102, 103)
    }
    # The baseline's attempts are the first run's bytes (a run again would differ in
    # its recorded times): nothing was paid for twice.
    assert _attempts(tmp_path / "second", "calculator") == _attempts(
        tmp_path / "first", "calculator"
    )
    assert verify(tmp_path / "second").returncode == 0

    # The same verdicts as a cold run of the same config.
    monkeypatch.setenv("XAYTUNE_CACHE_MODE", "off")
    _run(xaytune, tmp_path / "cold", "candidate@candidates.b=terse")
    reports = [
        json.loads((tmp_path / name / "comparison" / "report.json").read_bytes())
        for name in ("second", "cold")
    ]
    verdicts = [{k: m["verdict"] for k, m in r["metrics"].items()} for r in reports]
    assert verdicts[0] == verdicts[1] and reports[0]["relation"] == reports[1]["relation"]


def test_an_edited_cache_entry_is_refused_and_the_replicate_runs(tmp_path, cached, xaytune, verify):
    _run(xaytune, tmp_path / "first")
    edited = sorted(cached.glob("*/files/tasks%2F000003%2F001.jsonl"))[0]
    data = bytearray(edited.read_bytes())
    data[len(data) // 2] ^= 1
    edited.write_bytes(bytes(data))
    second = _run(xaytune, tmp_path / "second")
    assert sum(not r for r in _reused(second).values()) == 1  # that one ran again
    assert verify(tmp_path / "second").returncode == 0


def test_two_runs_sharing_a_cache_at_once_both_verify(tmp_path, cached, verify):
    import subprocess
    import sys

    trees = [tmp_path / "one", tmp_path / "two"]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "xaytune",
                "+experiment=quickstart",
                "progress=false",
                f"hydra.run.dir={tree}",
            ],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tree in trees
    ]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode in (0, 1), err
    for tree in trees:
        assert verify(tree).returncode == 0
    assert not [p for p in cached.iterdir() if p.name.startswith(".")]  # none half-built


def test_reused_evidence_claimed_for_another_seed_is_refused(tmp_path, cached, xaytune, verify):
    _run(xaytune, tmp_path / "first")
    _run(xaytune, tmp_path / "second", "candidate@candidates.b=terse")  # another intent
    second = tmp_path / "second"
    assert verify(second).returncode == 0
    record = second / "candidates" / "calculator" / "seed-102" / "evidence" / "reused.json"
    reused = json.loads(record.read_bytes())
    reused["intent"]["seeds"] = [101]
    record.write_bytes(canonical_bytes(reused) + b"\n")
    result = verify(second)
    assert result.returncode != 0
    assert "intent-mismatch" in result.stdout and str(record.parent) in result.stdout


def test_a_tree_with_reused_replicates_resumes_and_verifies(tmp_path, cached, xaytune, verify):
    # Found in review: the resume assembled reused evidence under this run's intent.
    _run(xaytune, tmp_path / "first")
    second = tmp_path / "second"
    _run(xaytune, second, "candidate@candidates.b=terse")
    before = _attempts(second, "calculator")
    result = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", f"resume={second}",
        "candidate@candidates.b=terse",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    assert _attempts(second, "calculator") == before
    assert verify(second).returncode == 0


def test_a_price_table_added_later_still_reuses_the_evidence(tmp_path, cached, xaytune, verify):
    # Prices do not change what a model did (only what the evaluator charges for it):
    # the evidence is reused, the evaluation is made again with the new prices.
    _run(xaytune, tmp_path / "first")
    priced = tmp_path / "priced"
    manifest = _run(xaytune, priced, "model.prices={input_per_mtok:1.0,output_per_mtok:2.0}")
    assert all(_reused(manifest).values())
    assert verify(priced).returncode == 0


def test_a_reused_replicate_makes_no_model_call(tmp_path, quickstart, monkeypatch):
    # In process, counting every model call: the baseline replicate run into a second
    # tree with the same cache calls the model zero times.
    from xaytune.experiment import replicate as experiment
    from xaytune.experiment.config import CacheConfig, validate_config
    from xaytune.experiment.parts import experiment_toolbox, resolve_candidates
    from xaytune.experiment.source import load_source
    from xaytune.experiment.tree.intent import intent_of, write_intent
    from xaytune.experiment.tree.manifest import what_is_run

    plain = quickstart.manifest()["config"]
    cfg = resolve_candidates(validate_config(plain)).model_copy(
        update={"cache": CacheConfig(dir=str(tmp_path / "cache"), mode="read-write")}
    )
    calls = []
    build = experiment.build_model

    def counting(config, *, seed):
        model = build(config, seed=seed)
        complete = model.complete

        async def counted(request):
            calls.append(seed)
            return await complete(request)

        model.complete = counted
        return model

    monkeypatch.setattr(experiment, "build_model", counting)
    source = load_source(cfg)
    made = []
    for name in ("first", "second"):
        out = tmp_path / name
        out.mkdir()
        intent = write_intent(out, intent_of(cfg, what_is_run(plain), source), resume=False)
        before = len(calls)
        experiment.run_replicate(
            cfg, label="a", harness=cfg.candidates["a"], seed=101, source=source, out=out,
            toolbox=experiment_toolbox(cfg), intent=intent,
        )  # fmt: skip
        made.append(len(calls) - before)
    assert made[0] > 0 and made[1] == 0
    assert (tmp_path / "second" / "candidates" / "calculator" / "seed-101" / "evidence" /
            "reused.json").is_file()  # fmt: skip
