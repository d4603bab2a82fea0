"""Whose code a signal lands in: the watchdog's own record of tasks and windows.

The watchdog raises into an attempt's code only: the task that entered the attempt's
:class:`AttemptWindow`, and every task created while one of that window's tasks runs
(a loop's ``gather``), as a context would be inherited. A task of nobody's window, or
a window's task once it has closed, is the runner's: nothing is raised there. The
task factory the watchdog installs is gone after the last watched block.

Each case raises SIGALRM in the main thread itself, with windows already past their
deadline (0 s), so the handler decides at once: no timing is involved.
"""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from xaytune.harness import AttemptDeadline, _watchdog
from xaytune.harness._watchdog import AttemptWindow, watching

pytestmark = [
    pytest.mark.skipif(not hasattr(signal, "raise_signal"), reason="POSIX signals"),
    # pytest-timeout's signal method would own SIGALRM (and keep the watchdog off).
    pytest.mark.timeout(60, method="thread"),
]


def _alarm() -> str:
    """Raise SIGALRM here (the handler runs before this returns): what it raised."""
    try:
        signal.raise_signal(signal.SIGALRM)
    except AttemptDeadline:
        return "deadline"
    return "nothing"


async def _in_task() -> str:
    return _alarm()


def test_a_signal_acts_in_a_windows_task_and_the_tasks_it_creates_only() -> None:
    seen: dict[str, str] = {}

    async def attempt(window: AttemptWindow, *, via_child: bool) -> None:
        with window:
            if via_child:  # a task of the loop's own: the attempt's code too
                [seen["child"]] = await asyncio.gather(_in_task())
            else:
                seen["own"] = _alarm()
        seen["own-after-close"] = _alarm()  # the runner's code again

    async def probe() -> tuple[object, object]:
        loop = asyncio.get_running_loop()
        before = loop.get_task_factory()
        with watching() as on:
            assert on is True
            await asyncio.create_task(attempt(AttemptWindow(0.0), via_child=False))
            await asyncio.create_task(attempt(AttemptWindow(0.0), via_child=True))
            # A task created outside any window while another window is open and overdue.
            other = AttemptWindow(0.0)
            started, release = asyncio.Event(), asyncio.Event()

            async def holder() -> None:
                with other:
                    started.set()
                    await release.wait()

            holding = asyncio.create_task(holder())
            await started.wait()
            seen["outsider"] = await asyncio.create_task(_in_task())
            seen["main"] = _alarm()
            release.set()
            await holding
            during = loop.get_task_factory()
        return before, during, loop.get_task_factory()

    before, during, after = asyncio.run(probe())
    assert seen == {
        "own": "deadline",
        "child": "deadline",
        "own-after-close": "nothing",
        "outsider": "nothing",
        "main": "nothing",
    }
    assert before is None and during is not None and after is None
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_a_deadline_is_raised_once_per_window() -> None:
    async def attempt() -> list[str]:
        with AttemptWindow(0.0):
            return [_alarm(), _alarm()]

    async def probe() -> list[str]:
        with watching():
            return await asyncio.create_task(attempt())

    # The second signal finds the deadline spent: a loop that swallowed it is stopped
    # by a stop request, not by another deadline.
    assert asyncio.run(probe()) == ["deadline", "nothing"]


def test_a_window_entered_while_unwatched_is_never_raised_into() -> None:
    # Without a watched block there is no watchdog: the window only keeps its deadline,
    # and a pending mark (which only a watchdog sets) raises nothing at a checkpoint.
    window = AttemptWindow(0.0)

    async def probe() -> bool:
        with window:
            window.pending = True
            window.checkpoint()
            return window.open

    assert asyncio.run(probe()) is True
    assert window.open is False


def test_closed_windows_are_dropped_and_an_open_one_among_them_is_still_overdue() -> None:
    # The watchdog drops closed windows in batches (once its list has doubled), not on
    # every add: many attempts come and go, the list stays bounded, and an overdue
    # window listed among closed ones is still found.
    async def probe() -> tuple[int, bool, bool]:
        with watching():
            watchdog = _watchdog._active
            assert watchdog is not None
            late = AttemptWindow(0.0)
            late.__enter__()
            for _ in range(1_000):
                with AttemptWindow(3600.0):
                    pass
            listed = len(watchdog._windows)
            overdue = watchdog._overdue(time.monotonic())
            late.__exit__(None, None, None)
            return listed, overdue, watchdog._overdue(time.monotonic())

    listed, overdue, after = asyncio.run(probe())
    assert listed <= 2 * _watchdog._PRUNE_AT  # 1,001 windows added, one open
    assert overdue and not after
