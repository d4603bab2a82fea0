"""Group commit: one batch synced at a time, every submitted seal appended once."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from xaytune.harness.evidence import commit as _commit
from xaytune.harness.evidence.attempt import PendingSeal
from xaytune.harness.evidence.commit import GroupCommit


def _body(i: int) -> bytes:
    return b'{"spec":%d}\n{"record":%d}\n{"prev":"sha256:0","seq":0}\n' % (i, i)


def _seal(i: int) -> bytes:
    return b'{"attempt":1,"seal":%d}\n' % i


def _pending(root: Path, i: int) -> PendingSeal:
    path = root / f"{i:03d}.jsonl"
    path.write_bytes(_body(i))  # an open attempt: its seal line is still to come
    return PendingSeal(
        path=str(path), line=_seal(i), digest=str(i), position=i, number=1, journal=None
    )


def test_batches_are_committed_one_at_a_time_and_all_seals_land(tmp_path, monkeypatch):
    running = 0
    overlaps = []
    sealed = []  # how many attempts were sealed at each sync
    lock = threading.Lock()

    def slow_sync() -> None:
        nonlocal running
        with lock:
            running += 1
            overlaps.append(running)
            sealed.append(
                sum(p.stat().st_size > len(_body(int(p.stem))) for p in tmp_path.glob("*.jsonl"))
            )
        time.sleep(0.01)
        with lock:
            running -= 1

    monkeypatch.setattr(_commit, "_sync", slow_sync)

    async def main() -> GroupCommit:
        committer = GroupCommit(max_batch=8, max_delay_s=0.001)
        waits = []
        for i in range(50):
            waits.append(asyncio.ensure_future(committer.commit(_pending(tmp_path, i))))
            if i % 7 == 0:
                await asyncio.sleep(0.003)
        await asyncio.gather(*waits)
        await committer.drain()
        return committer

    committer = asyncio.run(main())
    assert max(overlaps) == 1  # never two syncs at once
    assert 50 / 8 <= committer.batches < 50
    # two syncs a batch, its seal lines appended between them and at no other time
    assert len(sealed) == 2 * committer.batches
    before, after = sealed[0::2], sealed[1::2]
    assert before == [0, *after[:-1]] and all(b < a for b, a in zip(before, after, strict=True))
    assert after[-1] == 50
    # every attempt is sealed, once: its seal line appended after its bytes, nothing else
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{i:03d}.jsonl" for i in range(50)]
    for i in range(50):
        assert (tmp_path / f"{i:03d}.jsonl").read_bytes() == _body(i) + _seal(i)
