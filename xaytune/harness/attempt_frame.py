"""The values one attempt runs with, travelling together as one record.

The runner makes an :class:`AttemptFrame` for each attempt it opens and hands it to
the host (``xaytune.harness._loop_context``), which is all the loop's context acts on:
nothing reaches the host through module or context state.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from xaytune.harness._watchdog import AttemptWindow
from xaytune.harness.evidence.attempt import AttemptSession
from xaytune.harness.evidence.store import Spend
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.harness.toolbox import Toolbox
from xaytune.models.protocol import Model

__all__ = ["AttemptFrame"]


@dataclass(frozen=True, slots=True)
class AttemptFrame:
    """One attempt: the spec it runs, where it is recorded, what it spends, what it may
    call, and its deadline window.

    ``session`` is the open attempt in the store (its events and seal); ``spend`` the
    attempt's running spend (the host adds to it; the seal records it); ``granted`` the
    tools the model may call (authorized by the host *and* requested by the harness);
    ``cancel`` the host's cancel token; ``window`` the attempt's deadline window, which
    the watchdog raises into and the loop context checks on every call.
    """

    spec: AgentExecutionSpec
    session: AttemptSession
    spend: Spend
    model: Model
    toolbox: Toolbox
    granted: frozenset[str]
    cancel: asyncio.Event | None
    window: AttemptWindow
