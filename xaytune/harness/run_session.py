"""One run call's shared state, handed explicitly to every attempt the call runs.

A call of ``HarnessRunner.run_task`` or ``run_many`` makes one :class:`RunSession`:

- the parts every attempt uses: the model (with its identity serialised once), the
  toolbox, the tools the host authorized, the host's cancel token, the run's intent;
- how seals reach the disk: with ``durable`` (fsync), an attempt alone makes its own
  seal durable; under ``run_many`` a :class:`GroupCommit` makes the seals of concurrent
  attempts durable in batches, and each task's commits are awaited by ``run_many`` once
  the task has left its concurrency slot (waiting for the disk does not need the model);
- the seal journal of each store the call's attempts write to, opened once per call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from xaytune.harness.evidence.attempt import PendingSeal
from xaytune.harness.evidence.commit import GroupCommit
from xaytune.harness.evidence.journal import SealJournal, journal_path
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.harness.toolbox import Toolbox
from xaytune.models.protocol import Model

__all__ = ["RunSession", "SealsPending"]

# The commits of one task's seals, awaited by run_many after the task left its slot.
SealsPending = list[asyncio.Future[None]]


class RunSession:
    """What every attempt of one run call shares (see the module docstring)."""

    __slots__ = (
        "_journals",
        "authorized",
        "cancel",
        "committer",
        "durable",
        "identity",
        "intent",
        "model",
        "toolbox",
    )

    def __init__(
        self,
        *,
        model: Model,
        identity: tuple[dict[str, Any], bytes],
        toolbox: Toolbox,
        authorized: frozenset[str],
        cancel: asyncio.Event | None,
        durable: bool,
        intent: str | None,
        grouped: bool,
    ) -> None:
        self.model, self.identity, self.toolbox = model, identity, toolbox
        self.authorized, self.cancel = authorized, cancel
        self.durable, self.intent = durable, intent
        # Group commit only where there is something to make durable.
        self.committer = GroupCommit() if grouped and durable else None
        self._journals: dict[str, SealJournal] = {}

    def journal_of(self, spec: AgentExecutionSpec) -> SealJournal | None:
        """The journal of the store a task-bound spec writes to (None for other specs),
        opened once per call and store."""
        if spec.output_uri is None or spec.task_id is None:  # task_id: no binding is built
            return None
        path = journal_path(spec.output_uri)
        journal = self._journals.get(path)
        if journal is None:
            journal = self._journals[path] = SealJournal(path)
        return journal

    async def commit(self, pending: PendingSeal, *, later: SealsPending | None) -> None:
        """Commit ``pending`` in the group commit: awaited now, or, given ``later``, its
        commit is added there for the caller to await."""
        assert self.committer is not None
        if later is None:
            await self.committer.commit(pending)
        else:
            later.append(self.committer.submit(pending))

    async def drain(self) -> None:
        """Wait for every commit the call submitted (its end, whatever happened)."""
        if self.committer is not None:
            await self.committer.drain()
