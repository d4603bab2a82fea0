"""Where a signal handler may raise into the code it interrupted (the watchdog's rule).

The watchdog (``xaytune.harness._watchdog``) raises AttemptDeadline or KeyboardInterrupt
inside code that holds the event loop, wherever the main thread is. That is safe in an
attempt's own code (a loop, a tool, a model adapter); it is not in the middle of an
evidence write (a torn event or seal makes the tree unverifiable), of the host's
bookkeeping between the loop and the evidence (spend and events would disagree), or of
the event loop's own code (a task's state). A refused interruption is retried later.
"""

from __future__ import annotations

from types import CodeType, FrameType

__all__ = ["PASS_THROUGH", "interruptible"]

# Frames of these modules are never interrupted, wherever they are on the stack.
_WRITERS = (
    "xaytune.harness.evidence",
    "xaytune.core.canonical",
    "xaytune.harness._watchdog",
    __name__,
)
# The host between the loop and the evidence: interrupted only while awaiting the model.
_HOST = "xaytune.harness._loop_context"
# Code of the writer modules that only awaits what it wraps (the watchdog's ``watched``).
PASS_THROUGH: set[CodeType] = set()


def interruptible(frame: FrameType | None) -> bool:
    """Whether raising into ``frame`` (the frame a signal interrupted) is safe.

    Walks outward to the first event-loop frame (the task's boundary). Refused when
    the innermost frame is the event loop's, when any frame is an evidence writer's or
    the watchdog's, or when the innermost xaytune frame is the host's bookkeeping and
    not its call of the model adapter's ``complete`` (a blocking adapter is the
    attempt's own code).
    """
    callee: FrameType | None = None
    seen_xaytune = False
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith(_WRITERS) and frame.f_code not in PASS_THROUGH:
            return False
        if module == "asyncio" or module.startswith("asyncio."):
            return callee is not None  # inside the loop's own code, or at a task's base
        if not seen_xaytune and module.startswith("xaytune."):
            seen_xaytune = True
            if module == _HOST and (callee is None or callee.f_code.co_name != "complete"):
                return False
        callee = frame
        frame = frame.f_back
    return callee is not None
