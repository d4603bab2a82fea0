"""Group commit: one batch synced at a time, every submitted seal committed."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from xaytune.harness import _commit
from xaytune.harness._attempt import PendingSeal
from xaytune.harness._commit import GroupCommit


def _pending(root: Path, i: int) -> PendingSeal:
    staged = root / f".seal-{i}.staged"
    staged.write_bytes(b"seal\n")
    return PendingSeal(staged=str(staged), final=str(root / f"seal-{i}.json"), digest=str(i))


def test_batches_are_committed_one_at_a_time_and_all_seals_land(tmp_path, monkeypatch):
    running = 0
    overlaps = []
    lock = threading.Lock()

    def slow_sync() -> None:
        nonlocal running
        with lock:
            running += 1
            overlaps.append(running)
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
    assert sorted(p.name for p in tmp_path.glob("seal-*.json")) == sorted(
        f"seal-{i}.json" for i in range(50)
    )
    assert not list(tmp_path.glob(".seal-*"))
