"""Group commit: many attempts sealed durably with two syncs per batch.

A seal may exist only when every file it refers to is on disk. Sealing one attempt
at a time costs several fsyncs each; a batch costs two system-wide syncs: the first
makes the batch's trajectories, records and staged seals durable, the renames then
put the seals in place, and the second makes the renames durable. A crash before
the renames leaves open attempts (recovered partial on resume), never a torn seal.
"""

from __future__ import annotations

import asyncio
import os

from xaytune.harness._attempt import PendingSeal

__all__ = ["GroupCommit"]


def _sync() -> None:
    os.sync()


class GroupCommit:
    """Batches :class:`PendingSeal` commits; ``await commit(p)`` returns once p is sealed."""

    def __init__(self, *, max_batch: int = 256, max_delay_s: float = 0.005) -> None:
        self.max_batch = max_batch
        self.max_delay_s = max_delay_s
        self._batch: list[tuple[PendingSeal, asyncio.Future[None]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self.batches = 0

    async def commit(self, pending: PendingSeal) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._batch.append((pending, done))
        if len(self._batch) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.max_delay_s, self._flush)
        await asyncio.shield(done)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._batch = self._batch, []
        if batch:
            task = asyncio.get_running_loop().create_task(self._commit(batch))
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)

    async def _commit(self, batch: list[tuple[PendingSeal, asyncio.Future[None]]]) -> None:
        try:
            await asyncio.to_thread(self._durable_renames, [pending for pending, _ in batch])
        except BaseException as error:  # the seals stay staged: their attempts stay open
            for _, done in batch:
                if not done.done():
                    done.set_exception(error)
            return
        self.batches += 1
        for _, done in batch:
            if not done.done():
                done.set_result(None)

    @staticmethod
    def _durable_renames(batch: list[PendingSeal]) -> None:
        _sync()
        for pending in batch:
            os.replace(pending.staged, pending.final)
        _sync()

    async def drain(self) -> None:
        """Commit whatever is waiting (end of a run)."""
        self._flush()
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)
