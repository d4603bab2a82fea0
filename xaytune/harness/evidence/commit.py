"""Group commit: many attempts sealed durably with two syncs per batch.

A seal may exist only when every byte it refers to is on disk, and only once the
store's seal journal lists it. Sealing one attempt at a time costs three fsyncs
each; a batch costs two system-wide syncs: the first makes the batch's attempt files
(spec, record, events) and the journal lines listing its seals durable, the seal
lines are then appended, and the second makes them durable. A crash before the appends leaves
open attempts (recovered partial on resume), never a torn sealed one.
"""

from __future__ import annotations

import asyncio
import os

from xaytune.harness.evidence.attempt import PendingSeal
from xaytune.harness.evidence.journal import SealJournal

__all__ = ["GroupCommit"]


def _sync() -> None:
    os.sync()


class GroupCommit:
    """Batches :class:`PendingSeal` commits; ``await commit(p)`` returns once p is sealed.

    One batch is committed at a time: seals submitted while it syncs wait and go
    together in the next one, started as soon as it ends (the first waits
    ``max_delay_s`` for company). So the syncs, which hold up every file created
    meanwhile, come no more often than one at a time, however fast seals arrive.
    """

    def __init__(self, *, max_batch: int = 1024, max_delay_s: float = 0.005) -> None:
        self.max_batch = max_batch
        self.max_delay_s = max_delay_s
        self._batch: list[tuple[PendingSeal, asyncio.Future[None]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._running: asyncio.Task[None] | None = None
        self.batches = 0

    def submit(self, pending: PendingSeal) -> asyncio.Future[None]:
        """Queue ``pending`` for the next batch; the future is done once it is sealed."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._batch.append((pending, done))
        if self._running is None and self._timer is None:
            self._timer = loop.call_later(self.max_delay_s, self._start)
        return done

    async def commit(self, pending: PendingSeal) -> None:
        await asyncio.shield(self.submit(pending))

    def _start(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running is not None or not self._batch:
            return
        batch, self._batch = self._batch[: self.max_batch], self._batch[self.max_batch :]
        self._running = asyncio.get_running_loop().create_task(self._commit(batch))

    async def _commit(self, batch: list[tuple[PendingSeal, asyncio.Future[None]]]) -> None:
        try:
            await asyncio.to_thread(self._durable_appends, [pending for pending, _ in batch])
        except BaseException as error:  # seals not appended: their attempts stay open
            for _, done in batch:
                if not done.done():
                    done.set_exception(error)
        else:
            self.batches += 1
            for _, done in batch:
                if not done.done():
                    done.set_result(None)
        finally:
            self._running = None
            if self._batch:
                self._start()  # the next batch has waited for this one: at once

    @staticmethod
    def _durable_appends(batch: list[PendingSeal]) -> None:
        journals: dict[int, tuple[SealJournal, list[tuple[int, int, str]]]] = {}
        for pending in batch:
            if pending.journal is not None:
                listed = journals.setdefault(id(pending.journal), (pending.journal, []))
                listed[1].append(pending.entry)
        for journal, entries in journals.values():
            journal.append(entries, durable=False)
        _sync()  # the attempts' bytes and the journal lines that list their seals
        for pending in batch:
            pending.append(durable=False)
        _sync()

    async def drain(self) -> None:
        """Commit whatever is waiting (end of a run)."""
        self._start()
        while self._running is not None:
            await asyncio.wait({self._running})
