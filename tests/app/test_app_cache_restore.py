"""Issue 33, a reused replicate nearly free: the store built whole from the cache entry
(no fresh store made first), its new bytes made durable before it is renamed into
place, and a replicate record linked from the entry instead of written (in process).

The slow path each fast one is held to: a restore into a fresh store made first (what
every reuse did before), and a record written by ``atomic_write``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cache_runs import (
    REPLICATE,
    SEED,
    cache_config,
    prepared_after_a_run,
    run_replicate_a,
)

from xaytune.core.domain.benchmark import record_assignment
from xaytune.experiment import replicate as experiment
from xaytune.experiment.model_adapters import build_model
from xaytune.experiment.parts import experiment_toolbox
from xaytune.experiment.source import load_source
from xaytune.experiment.tree import cache, cache_shared
from xaytune.experiment.tree.files import REPLICATE_FILE
from xaytune.harness.evidence import assemble_evidence
from xaytune.harness.evidence.journal import JOURNAL_NAME
from xaytune.harness.evidence.store import STORE_MARKER, HarnessEvidenceStore
from xaytune.harness.replicate import compile_replicate

pytestmark = pytest.mark.slow


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every directory (None) and file (its bytes) under ``root``."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def _entry(cache_dir: Path) -> Path:
    (entry,) = (cache_dir / "v2").iterdir()
    return entry


def _compiled(cfg, store: HarnessEvidenceStore, *, make_dirs: bool):
    source = load_source(cfg)
    harness = cfg.candidates["a"]
    sampling = cfg.sampling.sample(len(source.suite.tasks))
    assignment = record_assignment(source.suite, sampling, seed=SEED)
    specs = compile_replicate(
        harness, suite=source.suite, assignment=assignment, store=store,
        authorized_tools=frozenset(harness.tool_names),
        model=build_model(cfg.model, seed=SEED).identity, prices=cfg.model.prices,
        make_dirs=make_dirs,
    )  # fmt: skip
    return specs, source, sampling, assignment


def test_compiling_without_directories_gives_the_same_specs_and_touches_nothing(
    tmp_path, quickstart
):
    cfg, _ = cache_config(quickstart, tmp_path / "cache")
    made = HarnessEvidenceStore(tmp_path / "made" / "evidence")
    planned = HarnessEvidenceStore(tmp_path / "planned" / "evidence")
    with_dirs, *_ = _compiled(cfg, made, make_dirs=True)
    without, *_ = _compiled(cfg, planned, make_dirs=False)
    assert not (tmp_path / "planned").exists()
    assert [s.output_uri.replace("/planned/", "/made/") for s in without] == [
        s.output_uri for s in with_dirs
    ]
    # The output path is not part of a spec's fingerprint: the cache key is the same.
    assert [s.fingerprint for s in without] == [s.fingerprint for s in with_dirs]


def test_a_reuse_builds_the_store_whole_as_a_restore_into_a_fresh_store_did(tmp_path, quickstart):
    prepared = prepared_after_a_run(quickstart, tmp_path)
    cfg = prepared.cfg
    # The entry was found: no fresh store was made to be thrown away.
    assert prepared.entry == _entry(tmp_path / "cache")
    assert not prepared.store.root.exists()
    produced = experiment.reuse_or_run(prepared)
    assert produced.runs == () and produced.reused is not None
    # The slow path: a fresh store made first (marker, a directory per task), then
    # the entry restored into it, as every reuse did before.
    slow = HarnessEvidenceStore(tmp_path / "slow" / "evidence", durability=cfg.durability)
    specs, source, sampling, assignment = _compiled(cfg, slow, make_dirs=True)
    restored = cache.restore(prepared.entry, prepared.cache_key, slow.root)
    assemble_evidence(
        specs, source.suite, sampling, assignment, source, slow, intent=restored.intent_digest
    )
    assert _tree(prepared.store.root) == _tree(slow.root)  # same files, same bytes
    # The marker is the entry's own file (durable bytes, nothing new to sync); the
    # journal, which a store appends to, is a copy of its own.
    marker = prepared.store.root / STORE_MARKER
    assert os.stat(marker).st_ino == os.stat(prepared.entry / "files" / STORE_MARKER).st_ino
    assert os.stat(prepared.store.root / JOURNAL_NAME).st_nlink == 1


def test_a_restore_syncs_its_new_files_before_the_store_appears(tmp_path, quickstart, monkeypatch):
    cfg, plain = cache_config(quickstart, tmp_path / "cache")
    run_replicate_a(cfg, plain, tmp_path / "first")
    events: list[tuple[str, str]] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd: int) -> None:
        events.append(("fsync", os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))))
        real_fsync(fd)

    def rename(source, target) -> None:
        real_rename(source, target)  # a store to move aside is not there: no event
        events.append(("rename", os.path.basename(target)))

    monkeypatch.setattr(cache.os, "fsync", fsync)
    monkeypatch.setattr(cache.os, "rename", rename)
    store = tmp_path / "second" / "evidence"
    store.parent.mkdir()
    entry = _entry(tmp_path / "cache")
    cache.restore(entry, "sha256:" + entry.name, store)
    synced = {name for kind, name in events if kind == "fsync"}
    assert synced == {JOURNAL_NAME, cache.REUSE_FILE}  # the linked files are not new bytes
    assert events[-1] == ("rename", "evidence")  # the store appears after the barrier
    assert all(kind == "fsync" for kind, _ in events[:-1])
    # Without durability, nothing is synced.
    events.clear()
    cache.restore(entry, "sha256:" + entry.name, tmp_path / "third-evidence", durable=False)
    assert [kind for kind, _ in events] == ["rename"]


def test_a_restore_cut_short_leaves_no_store_and_the_next_run_reuses(
    tmp_path, quickstart, monkeypatch
):
    prepared = prepared_after_a_run(quickstart, tmp_path)
    cfg, out = prepared.cfg, tmp_path / "second"
    linked = 0
    real_share = cache.share_file

    def share_then_die(source: str, target: str) -> bool:
        nonlocal linked
        linked += 1
        if linked == 5:
            raise KeyboardInterrupt  # a kill mid-fill, as the process sees one
        return real_share(source, target)

    monkeypatch.setattr(cache, "share_file", share_then_die)
    with pytest.raises(KeyboardInterrupt):
        experiment.reuse_or_run(prepared)
    # Nothing that could pass for evidence: no store, no half-made copy.
    assert not prepared.store.root.exists()
    assert list(prepared.directory.glob(".evidence.*.tmp")) == []
    monkeypatch.setattr(cache, "share_file", real_share)
    # What a SIGKILL leaves (the half-made copy) is removed by the next run, which reuses.
    half = prepared.directory / ".evidence.4242.tmp"
    (half / "tasks" / "000000").mkdir(parents=True)
    again = experiment.run_replicate(
        cfg, label="a", seed=SEED, out=out, toolbox=experiment_toolbox(cfg),
        intent=prepared.intent,
    )  # fmt: skip
    assert again.reused and not half.exists()


def test_an_entry_gone_after_prepare_runs_the_replicate_in_a_made_store(tmp_path, quickstart):
    prepared = prepared_after_a_run(quickstart, tmp_path)
    assert prepared.entry is not None and not prepared.store.root.exists()
    for path in sorted(prepared.entry.rglob("*"), reverse=True):  # evicted meanwhile
        path.unlink() if path.is_file() else path.rmdir()
    prepared.entry.rmdir()
    produced = experiment.reuse_or_run(prepared)
    assert produced.reused is None and len(produced.runs) == len(prepared.specs)
    published = experiment.assemble_and_publish(prepared, produced)  # verified
    assert len(published.evidence.entries) == len(prepared.specs)
    assert (prepared.store.root / STORE_MARKER).is_file()


def test_a_reused_record_is_linked_from_the_entry_and_an_edited_one_is_not(tmp_path, quickstart):
    cfg, plain = cache_config(quickstart, tmp_path / "cache")
    run_replicate_a(cfg, plain, tmp_path / "first")
    ran = tmp_path / "first" / REPLICATE / REPLICATE_FILE
    entry = _entry(tmp_path / "cache")
    (kept,) = entry.glob("shared.*")
    assert os.stat(kept).st_ino == os.stat(ran).st_ino and kept.read_bytes() == ran.read_bytes()
    run_replicate_a(cfg, plain, tmp_path / "second")
    reused = tmp_path / "second" / REPLICATE / REPLICATE_FILE
    # Linked (no new bytes to sync), the bytes a written record has (the slow path:
    # the first run wrote them with atomic_write).
    assert os.stat(reused).st_ino == os.stat(kept).st_ino
    assert reused.read_bytes() == ran.read_bytes()
    # An edited copy in the entry is never served: the record is written.
    data = bytearray(kept.read_bytes())
    data[len(data) // 2] ^= 1
    kept.unlink()
    kept.write_bytes(bytes(data))
    run_replicate_a(cfg, plain, tmp_path / "third")
    third = tmp_path / "third" / REPLICATE / REPLICATE_FILE
    assert third.read_bytes() == ran.read_bytes() != kept.read_bytes()
    assert os.stat(third).st_nlink == 1
    assert list(entry.glob("shared.*")) == [kept]  # one kept record per entry


def test_a_shared_record_written_again_leaves_no_temporary_file(tmp_path):
    # A resume writes the record again over the link it already is: renaming a link
    # onto the same inode is a no-op that would leave the temporary name behind.
    entry = tmp_path / "entry"
    entry.mkdir()
    target = tmp_path / "replicate" / REPLICATE_FILE
    target.parent.mkdir()
    data = b'{"record":1}\n'
    cache_shared.write_shared(target, data, entry, keep=True)
    cache_shared.write_shared(target, data, entry, keep=True)
    assert target.read_bytes() == data
    assert sorted(p.name for p in target.parent.iterdir()) == [REPLICATE_FILE]
    assert [p.name.startswith("shared.") for p in entry.iterdir()] == [True]
    # Other bytes (a judge's new measurement) are written, and not kept beside the
    # entry's one record.
    cache_shared.write_shared(target, b'{"record":2}\n', entry, keep=True)
    assert target.read_bytes() == b'{"record":2}\n' and os.stat(target).st_nlink == 1
    assert len(list(entry.iterdir())) == 1
