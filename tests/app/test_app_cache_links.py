"""Issue 33, reuse nearly free: linked evidence and cached evaluations (in process)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from cache_runs import REPLICATE, SEED, cache_config

from xaytune.core.domain.benchmark import record_assignment
from xaytune.core.errors import XaytuneError
from xaytune.experiment import replicate as experiment
from xaytune.experiment.model_adapters import build_model
from xaytune.experiment.parts import experiment_toolbox
from xaytune.experiment.source import load_source
from xaytune.experiment.tree import cache, cache_evaluations
from xaytune.experiment.tree.files import REPLICATE_FILE
from xaytune.experiment.tree.intent import intent_of, write_intent
from xaytune.experiment.tree.manifest import what_is_run
from xaytune.harness.evidence import assemble_evidence
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.harness.replicate import compile_replicate

pytestmark = pytest.mark.slow


def _replicate(cfg, plain, out: Path):
    source = load_source(cfg)
    out.mkdir()
    intent = write_intent(out, intent_of(cfg, what_is_run(plain), source), resume=False)
    return experiment.run_replicate(
        cfg, label="a", harness=cfg.candidates["a"], seed=SEED, source=source, out=out,
        toolbox=experiment_toolbox(cfg), intent=intent,
    )  # fmt: skip


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _entry(cache_dir: Path) -> Path:
    (entry,) = (cache_dir / "v2").iterdir()
    return entry


def test_reused_evidence_is_linked_read_only_and_verifies(tmp_path, quickstart):
    cfg, plain = cache_config(quickstart, tmp_path / "cache")
    first = _replicate(cfg, plain, tmp_path / "first")
    second = _replicate(cfg, plain, tmp_path / "second")
    assert not first.reused and second.reused  # verified on reuse (assembly)
    assert second.evidence_digest == first.evidence_digest
    attempt = tmp_path / "second" / REPLICATE / "evidence" / "tasks" / "000003" / "001.jsonl"
    cached = _entry(tmp_path / "cache") / "files" / "tasks%2F000003%2F001.jsonl"
    ran = tmp_path / "first" / REPLICATE / "evidence" / "tasks" / "000003" / "001.jsonl"
    # One inode in the tree that ran, the cache and the tree that reused it; read-only.
    assert os.stat(attempt).st_ino == os.stat(cached).st_ino == os.stat(ran).st_ino
    assert os.stat(attempt).st_mode & 0o777 == 0o444
    # The journal, which a store appends to, is a copy of its own in each tree.
    journal = tmp_path / "second" / REPLICATE / "evidence" / "seal-journal.jsonl"
    assert os.stat(journal).st_nlink == 1
    assert _files(tmp_path / "second" / REPLICATE / "evidence" / "tasks") == _files(
        tmp_path / "first" / REPLICATE / "evidence" / "tasks"
    )


@pytest.fixture
def other_filesystem(tmp_path):
    """A directory on another filesystem than ``tmp_path`` (tmpfs), or skip."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    directory = Path(tempfile.mkdtemp(prefix="xaytune-cache-", dir="/dev/shm"))
    try:
        if os.stat(directory).st_dev == os.stat(tmp_path).st_dev:
            pytest.skip("/dev/shm is on the same filesystem as the tests' temporary directory")
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_cache_on_another_filesystem_is_copied_and_verifies(
    tmp_path, quickstart, other_filesystem
):
    cfg, plain = cache_config(quickstart, other_filesystem)
    first = _replicate(cfg, plain, tmp_path / "first")
    second = _replicate(cfg, plain, tmp_path / "second")
    assert second.reused and second.evidence_digest == first.evidence_digest
    attempt = tmp_path / "second" / REPLICATE / "evidence" / "tasks" / "000003" / "001.jsonl"
    assert os.stat(attempt).st_nlink == 1  # a copy (cannot link across filesystems)
    cached = _entry(other_filesystem) / "files" / "tasks%2F000003%2F001.jsonl"
    assert attempt.read_bytes() == cached.read_bytes()


def test_an_edited_cache_entry_is_refused_with_its_reason(tmp_path, quickstart):
    cfg, plain = cache_config(quickstart, tmp_path / "cache")
    _replicate(cfg, plain, tmp_path / "first")
    entry = _entry(tmp_path / "cache")
    edited = entry / "files" / "tasks%2F000003%2F001.jsonl"
    data = bytearray(edited.read_bytes())
    data[len(data) // 2] ^= 1
    os.unlink(edited)  # a new file in its place: the first tree keeps its own bytes
    edited.write_bytes(bytes(data))
    # The verification a reuse makes, step by step: refused with its reason word.
    source = load_source(cfg)
    harness = cfg.candidates["a"]
    out = tmp_path / "second"
    store = HarnessEvidenceStore(out / "evidence", durability=cfg.durability)
    sampling = cfg.sampling.sample(len(source.suite.tasks))
    assignment = record_assignment(source.suite, sampling, seed=SEED)
    model = build_model(cfg.model, seed=SEED)
    specs = compile_replicate(
        harness, suite=source.suite, assignment=assignment, store=store,
        authorized_tools=frozenset(harness.tool_names), model=model.identity,
        prices=cfg.model.prices,
    )  # fmt: skip
    key = entry.name
    restored = cache.restore(entry, "sha256:" + key, store.root)
    with pytest.raises(XaytuneError) as refused:
        assemble_evidence(
            specs, source.suite, sampling, assignment, source, store,
            intent=restored.intent_digest,
        )  # fmt: skip
    assert refused.value.reason == "chain-broken"  # the flipped byte is in an event
    # Run as the app runs it: the entry is refused and the replicate runs.
    again = _replicate(cfg, plain, tmp_path / "third")
    assert not again.reused and again.attempts > 0


def test_a_cached_evaluation_is_byte_identical_to_a_fresh_one(tmp_path, quickstart):
    cfg, plain = cache_config(quickstart, tmp_path / "cache")
    _replicate(cfg, plain, tmp_path / "first")  # evaluated fresh, stored in the entry
    (stored,) = (_entry(tmp_path / "cache") / "evaluations").iterdir()
    _replicate(cfg, plain, tmp_path / "second")
    evaluation = Path(REPLICATE) / "evaluation"
    fresh, hit = (_files(tmp_path / name / evaluation) for name in ("first", "second"))
    assert fresh == hit and len(hit) == 2
    # Linked from the cache, not measured again.
    for name in hit:
        assert (
            os.stat(tmp_path / "second" / evaluation / name).st_ino
            == os.stat(tmp_path / "first" / evaluation / name).st_ino
        )
    assert {p.name for p in stored.iterdir()} == {"restricted", "released", "record.json"}
    # The replicate record (run values, observations) is the one a fresh evaluation gave.
    record = REPLICATE_FILE
    first = (tmp_path / "first" / REPLICATE / record).read_bytes()
    assert (tmp_path / "second" / REPLICATE / record).read_bytes() == first


def test_a_changed_evaluator_fingerprint_or_code_misses(tmp_path, quickstart):
    cfg, plain = cache_config(quickstart, tmp_path / "cache")
    _replicate(cfg, plain, tmp_path / "first")
    entry = _entry(tmp_path / "cache")
    (stored,) = (entry / "evaluations").iterdir()
    key = "sha256:" + stored.name
    header = {"evaluator": "harness-outcome", "seed": SEED}
    one = cache_evaluations.evaluation_key(header=header, fingerprint="sha256:a", kind="k")
    assert one != cache_evaluations.evaluation_key(header=header, fingerprint="sha256:b", kind="k")
    assert one != cache_evaluations.evaluation_key(
        header=header, fingerprint="sha256:a", kind="k", code="sha256:other"
    )
    # Under its own key, a report of another fingerprint than this run's is a miss.
    restricted = (stored / "restricted").read_bytes()
    assert b'"evaluator_fingerprint":"sha256:' in restricted
    directory = tmp_path / "probe"
    assert (
        cache_evaluations.load(
            entry, key, directory, {"evaluator_fingerprint": "sha256:" + "0" * 64}
        )
        is None
    )
    assert not directory.exists()  # nothing linked on a miss
