"""The attempt deadline and stop requests for code that never yields to the event loop.

asyncio stops an attempt only where it awaits: a loop or tool that never awaits (a CPU
spin, ``time.sleep``, a blocking HTTP call) holds the event loop, out of reach of
``asyncio.timeout`` and of the cancellation SIGINT/SIGTERM ask for. While a runner's
loop runs in the main thread, :func:`watching` has it tick a heartbeat (``HEARTBEAT_S``)
that a daemon thread reads. Held longer than ``GRACE_S`` while an attempt is past its
deadline or a stop was requested (:func:`request_stop`, or SIGINT: its handler is
chained), the thread sends SIGALRM to the main thread (a real signal: it also ends
``time.sleep`` and blocking socket calls). The handler acts only inside an attempt's own
code, marked by its :class:`AttemptWindow`: the watchdog holds which asyncio task runs
which open window (the attempt's task, entered by the runner, and every task created
while a task of that window runs: a task factory the watchdog installs while it watches
records it, as a child task would inherit a context). Past the deadline it raises
:class:`AttemptDeadline` once (not an Exception: ``except Exception`` cannot swallow
it), on a stop KeyboardInterrupt; never in an evidence write, the host's bookkeeping,
the event loop's own code (``_interruptible``) or a callback outside any task. A
signal that could not act is sent again after ``RETRY_S``, and marks the window: the
loop's next call into its context (``ctx.note``, ``generate``, ``call_tool``, before any
bookkeeping) raises there (:meth:`AttemptWindow.checkpoint`), so a loop that spends its
time inside those calls (a spin of ``ctx.note``) is stopped too.

Off unless safe: the loop in the main thread, and SIGALRM's handler the default (a
program, or pytest-timeout's signal method, with its own keeps it). Every handler (and
the task factory) installed is restored, if still ours, when the last :func:`watching`
block exits. Limits: C code that never returns to the interpreter (a catastrophic regex)
is not interrupted; nor is a callback an attempt scheduled outside any task
(``loop.call_soon``), which is no task's code.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import math
import signal
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any, ParamSpec, TypeVar

from xaytune.harness._interruptible import PASS_THROUGH, interruptible

__all__ = [
    "GRACE_S",
    "HEARTBEAT_S",
    "RETRY_S",
    "AttemptDeadline",
    "AttemptWindow",
    "request_stop",
    "watched",
    "watching",
]

HEARTBEAT_S = 0.1  # how often the loop ticks (and the thread looks)
GRACE_S = 1.0  # how long the loop must be held before a signal is considered
RETRY_S = 0.25  # a held signal (the handler could not act) is sent again after this
_PRUNE_AT = 64  # windows listed before closed ones are first dropped

P = ParamSpec("P")
T = TypeVar("T")


class AttemptDeadline(BaseException):  # a stop, like KeyboardInterrupt: not an Exception
    """Raised into an attempt's code that held the event loop past its deadline."""


class AttemptWindow:
    """The block runs one attempt's own code, with a deadline ``seconds`` from entry.
    The runner's sealing comes after the block: nothing is raised for it there.

    Entered in the attempt's task; while the main thread's loop is watched, the
    watchdog then knows that task (and the tasks it creates) as this window's."""

    __slots__ = ("_previous", "_task", "_watchdog", "deadline", "open", "pending", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds, self.deadline, self.open = seconds, 0.0, False
        self.pending = False  # a signal found it where raising is unsafe: see checkpoint()
        self._watchdog: _Watchdog | None = None
        self._task: asyncio.Task[Any] | None = None
        self._previous: AttemptWindow | None = None

    def __enter__(self) -> None:
        self.deadline, self.open = time.monotonic() + self.seconds, True
        watchdog = _active
        if watchdog is not None and watchdog.main == threading.get_ident():
            self._watchdog = watchdog
            watchdog.add(self)

    def __exit__(self, *exc: object) -> None:
        self.open = False  # for good (tasks it left behind see it closed)
        if self._watchdog is not None:
            self._watchdog.remove(self)

    def checkpoint(self) -> None:
        """Raise here what a signal could not raise where it landed (an evidence write,
        the host's bookkeeping): called by the loop context on entry to each of its
        calls, a point where the attempt's own code runs and nothing is half-done."""
        watchdog = self._watchdog
        if self.pending and self.open and watchdog is not None and watchdog is _active:
            watchdog.interrupt(self)


class _Watchdog:
    """One event loop in the main thread, watched by a daemon thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, grace_s: float, heartbeat_s: float):
        self.loop, self.grace_s, self.heartbeat_s = loop, grace_s, heartbeat_s
        self.main = threading.get_ident()
        self.users = 0  # the watching() blocks in it
        self.stopping = False  # a stop was requested
        # The loop's last heartbeat; until when the held code is an attempt within its time.
        self.beat, self.hold_until = time.monotonic(), 0.0
        self._windows: list[AttemptWindow] = []  # the open ones, and some closed
        self._prune_at = _PRUNE_AT
        self._lock = threading.Lock()  # the windows (main thread and watcher)
        # Which open window each task's code belongs to (main thread only: the runner,
        # the task factory and the signal handler). Weak: a finished task drops out.
        self._owners: weakref.WeakKeyDictionary[asyncio.Task[Any], AttemptWindow] = (
            weakref.WeakKeyDictionary()
        )
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="xaytune-watchdog", daemon=True)
        self._tick_handle: asyncio.TimerHandle | None = None
        # Held once: signal.getsignal returns this very object while it is installed.
        self._alarm_hook, self._sigint_hook = self._on_alarm, self._on_sigint
        self._factory_hook = self._create_task
        self._previous_alarm: Any = None
        self._previous_sigint: Any = None  # set while SIGINT is chained
        self._previous_factory: Any = None

    def start(self) -> None:
        self._previous_alarm = signal.signal(signal.SIGALRM, self._alarm_hook)
        previous = signal.getsignal(signal.SIGINT)
        if callable(previous):  # asyncio's (a Runner's); never over SIG_IGN or SIG_DFL
            self._previous_sigint = previous
            signal.signal(signal.SIGINT, self._sigint_hook)
        self._previous_factory = self.loop.get_task_factory()
        self.loop.set_task_factory(self._factory_hook)
        self._tick()
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()  # no SIGALRM is sent once this returns
        if self._tick_handle is not None:
            self._tick_handle.cancel()
        self._unhook_sigint()
        if self.loop.get_task_factory() is self._factory_hook:
            self.loop.set_task_factory(self._previous_factory)
        # signal.signal first runs any handler still pending (ours: it does nothing here).
        if signal.getsignal(signal.SIGALRM) is self._alarm_hook:
            signal.signal(signal.SIGALRM, self._previous_alarm)

    def add(self, window: AttemptWindow) -> None:
        """Watch ``window``, entered by the running task: that task's code is its."""
        with self._lock:
            # Closed windows are dropped once the list has doubled, not on every add
            # (at concurrency c that was c windows walked per attempt).
            windows = self._windows
            windows.append(window)
            if len(windows) > self._prune_at:
                self._windows = windows = [w for w in windows if w.open]
                self._prune_at = max(_PRUNE_AT, 2 * len(windows))
        task = asyncio.current_task(self.loop)
        if task is not None:
            window._task, window._previous = task, self._owners.get(task)
            self._owners[task] = window

    def remove(self, window: AttemptWindow) -> None:
        """``window`` has closed: its task's code is the runner's again."""
        task = window._task
        if task is not None and self._owners.get(task) is window:
            if window._previous is None:
                del self._owners[task]
            else:
                self._owners[task] = window._previous

    def _create_task(self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        """The loop's task factory while watched: a task created by a window's task
        runs that window's code (a loop's ``gather``, a tool's timeout task)."""
        make = self._previous_factory
        if make is None:
            task = asyncio.Task(coro, loop=loop, **kwargs)
        else:
            task = make(loop, coro, **kwargs)
        parent = asyncio.current_task(loop)
        window = None if parent is None else self._owners.get(parent)
        if window is not None and window.open:
            self._owners[task] = window
        return task

    def _overdue(self, now: float) -> bool:
        with self._lock:
            return any(w.open and w.deadline <= now for w in self._windows)

    def _tick(self) -> None:
        self.beat, self.hold_until = time.monotonic(), 0.0
        # An empty context: the heartbeat is nobody's attempt.
        self._tick_handle = self.loop.call_later(
            self.heartbeat_s, self._tick, context=contextvars.Context()
        )

    def _watch(self) -> None:
        next_signal = 0.0
        while not self._done.wait(self.heartbeat_s):
            if self.loop.is_closed():
                return
            now = time.monotonic()
            if now - self.beat <= self.grace_s or now < next_signal:
                continue  # the loop turns (or a signal was just sent)
            if not self.loop.is_running():
                continue  # between runs: nothing is held
            if not self.stopping and (now < self.hold_until or not self._overdue(now)):
                continue
            next_signal = now + RETRY_S
            try:
                signal.pthread_kill(self.main, signal.SIGALRM)
            except OSError:  # the main thread is gone: nothing left to watch
                return

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        task = asyncio.current_task(self.loop)
        window = None if task is None else self._owners.get(task)
        if window is None or not window.open:
            return  # not an attempt's code: the runner's own, or between tasks
        stop = self.stopping
        if not stop and time.monotonic() < window.deadline:
            self.hold_until = window.deadline  # the held attempt still has time
            return
        if not interruptible(frame):
            window.pending = True  # raised at the loop's next safe call (checkpoint)
            return  # and sent again after RETRY_S
        self.interrupt(window)

    def interrupt(self, window: AttemptWindow) -> None:
        """Raise the deadline (once) or the requested stop into ``window``'s code."""
        window.pending = False
        if self.stopping:  # again while a loop swallows it: the block's exit closes the window
            self._unhook_sigint()  # the Runner then restores its default handler
            raise KeyboardInterrupt
        window.deadline = math.inf  # once: a loop that swallows it can still be stopped
        raise AttemptDeadline("the attempt held the event loop past its deadline")

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True  # first: the chained handler may raise
        self._previous_sigint(signum, frame)

    def _unhook_sigint(self) -> None:
        previous, self._previous_sigint = self._previous_sigint, None
        if previous is not None and signal.getsignal(signal.SIGINT) is self._sigint_hook:
            signal.signal(signal.SIGINT, previous)


_active: _Watchdog | None = None  # the main thread's, while its loop is watched


@contextlib.contextmanager
def watching(*, grace_s: float = GRACE_S, heartbeat_s: float = HEARTBEAT_S) -> Iterator[bool]:
    """Watch the running event loop for the block (see the module docstring).

    Yields whether the watchdog is on. Blocks of one loop share one watchdog (the
    first block's settings); the last to exit stops it and restores the handlers.
    """
    global _active
    loop = asyncio.get_running_loop()
    if _active is not None and _active.loop.is_closed():  # left by a loop closed mid-block
        stale, _active = _active, None
        stale.stop()
    watchdog = _active
    if (
        watchdog is None
        and hasattr(signal, "pthread_kill")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) is signal.SIG_DFL  # not a program's own
    ):
        watchdog = _active = _Watchdog(loop, grace_s, heartbeat_s)
        try:
            watchdog.start()
        except BaseException:
            _active = None
            watchdog.stop()
            raise
    if watchdog is None or watchdog.loop is not loop:  # off, or another thread's loop
        yield False
        return
    watchdog.users += 1
    try:
        yield True
    finally:
        watchdog.users -= 1
        if watchdog.users == 0:
            _active = None
            watchdog.stop()


def watched(
    function: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Decorate a coroutine function: its runs are :func:`watching` blocks."""

    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        with watching():
            return await function(*args, **kwargs)

    PASS_THROUGH.add(run.__code__)  # one code object for every decorated function
    return functools.wraps(function)(run)


def request_stop() -> None:
    """Ask the watched run to stop: code holding its event loop gets KeyboardInterrupt.

    Safe from a signal handler or any thread; a no-op when no run is watched. It
    cancels nothing by itself: the caller also cancels the run (the app re-sends
    SIGINT, which asyncio turns into a cancellation and the watchdog also reads).
    """
    if (watchdog := _active) is not None:
        watchdog.stopping = True
