"""A process that draws a run's plots, started when the run starts (issue 33, item 3).

Importing matplotlib costs ~0.35 s and the comparison it draws exists only at the end
of a run. :func:`start_plot_worker` starts ``python -c`` on :func:`serve`: the command
line starts it first thing, before Hydra is imported and composes (:mod:`xaytune.app.cli`,
:func:`hand_over`), and the task function takes it (:func:`take_handed`). It imports
matplotlib (and the report modules) on the other core while the replicates run, then
waits. At the end, :func:`xaytune.report.plot_png` sends it the released report (pickled)
and gets back :func:`xaytune.report.draw_png`'s bytes, drawn there: the same function,
the same matplotlib, the same bytes, written where and when they are written without a
worker (tests/app/test_app_plot_worker.py). It draws a comparison's plots as soon as it
has sent the comparison back (the run asks for them after writing its JSON reports),
the first in its own process and the others in a forked copy of it on the other core
(:func:`draw_in_two`); asked for another report's plots, it draws those. While it waits
for the first request it draws a throw-away figure (:func:`~xaytune.report._plots.warm_up`),
so the run's first plot does not pay for loading the font.

It is started only when a core is free (:func:`core_is_free`): on a machine busy
with other work its second import of numpy and the report modules costs more than the
parallel import saves. A worker that cannot answer (it failed to start, died, or
refused the request) costs only the speed: :meth:`PlotWorker.draw` returns None and
the plots are drawn in the run's own process. The worker ignores SIGINT (Ctrl-C stops
the run, which kills it as it exits; a run killed outright closes the worker's stdin:
it exits on end of file) and writes nothing to the terminal.

The comparison itself is computed there too: its scipy imports (``special``,
``integrate``, ``optimize``: ~0.4 s) are the worker's first, and :meth:`PlotWorker.compare`,
set as :func:`xaytune.comparison.compare.set_compare_delegate`, sends it the two
candidates' runs and gets back :func:`~xaytune.comparison.compare.compare_here`'s report
(the same function, the same scipy: the same floats, which pickle keeps bit for bit).
A refused comparison is answered None: the caller compares, and refuses, itself. The
audit (``python -m xaytune.verify``) starts one that only compares (``draw=False``), and
sends each comparison ahead (:meth:`PlotWorker.compare_ahead`, whatever its size) before
it verifies the attempts: the worker computes it meanwhile and the audit collects it
last.

Protocol, on the worker's stdin and stdout: each message is an 8-byte big-endian length
then that many bytes of pickle; a request is ``("draw", ComparisonReport)``,
``("compare", (a, b, spec, SuiteName))`` or ``("render", (released, images, model,
errors))``, a reply is ``("ok", value)`` (the plots ``{name: png bytes}``, the
``ComparisonReport``, or ``{"report.md": ..., "report.html": ...}``) or ``("error",
"<type>: <message>")``. :func:`lent` sets the worker's methods as the delegates of the
comparison, the pages and the plots for as long as a run or an audit goes on.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "MAX_SENT_OBSERVATIONS",
    "PlotWorker",
    "core_is_free",
    "draw_in_two",
    "hand_over",
    "lent",
    "serve",
    "start_plot_worker",
    "take_handed",
]

_LENGTH = 8
_CODE = "from xaytune.report.plot_worker import serve; serve(draw={draw})"


def _send(stream: IO[bytes], payload: bytes) -> None:
    stream.write(len(payload).to_bytes(_LENGTH, "big") + payload)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes | None:
    """One message, or None at end of file (or a message cut short)."""
    head = stream.read(_LENGTH)
    if len(head) < _LENGTH:
        return None
    size = int.from_bytes(head, "big")
    payload = stream.read(size)
    return payload if len(payload) == size else None


# Above this many per-task observations (both candidates) the runs are compared where
# they are: pickling them there and the report back (~10 µs per observation each way,
# the quickstart's 240 in 2.5 ms) would cost more than the ~0.4 s of scipy imports the
# worker saves (a 10,000-task tree: ~1 s).
MAX_SENT_OBSERVATIONS = 5_000


def _observations(runs: Any) -> int:
    return sum(
        len(values)
        for replicate in runs.replicates
        for values in (replicate.task_observations or {}).values()
    )


class PlotWorker:
    """The run's side of a plot worker process (see the module docstring)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        # The arguments of each comparison sent ahead whose reply is not read yet, in
        # the order the replies come.
        self._ahead: list[tuple[Any, Any, Any, Any]] = []

    def draw(self, report: Any) -> dict[str, bytes] | None:
        """:func:`~xaytune.report.draw_png` of ``report``, drawn by the worker; None
        when the worker cannot answer (then it is closed: the caller draws)."""
        self._collect_ahead(None)  # replies to comparisons sent ahead come first
        return self._ask("draw", report, close_on_error=True)

    def render(
        self, released: Any, images: dict[str, bytes], model: str | None, errors: Any
    ) -> dict[str, bytes] | None:
        """:func:`~xaytune.report._files.rendered_reports_here` of the arguments (report.md
        and report.html), rendered by the worker; None when it cannot answer (the
        caller renders)."""
        self._collect_ahead(None)  # replies to comparisons sent ahead come first
        return self._ask("render", (released, images, model, errors), close_on_error=False)

    def compare(self, a: Any, b: Any, spec: Any, suite: Any) -> Any:
        """:func:`~xaytune.comparison.compare.compare_here` of the arguments, computed
        by the worker; None when it cannot answer or refuses, or when the runs hold more
        than ``MAX_SENT_OBSERVATIONS`` per-task observations (the caller compares) and
        were not sent ahead (:meth:`compare_ahead`)."""
        found, report = self._collect_ahead((a, b, spec, suite))
        if found:
            return report
        if _observations(a) + _observations(b) > MAX_SENT_OBSERVATIONS:
            return None
        return self._ask("compare", (a, b, spec, suite), close_on_error=False)

    def compare_ahead(self, a: Any, b: Any, spec: Any, suite: Any) -> None:
        """Send the comparison now, whatever its size (the worker computes it while the
        caller does other work: sending ~10 us per observation is then worth it); a later
        :meth:`compare` of the same runs (the same objects) and spec collects the reply."""
        if self._request("compare", (a, b, spec, suite)):
            self._ahead.append((a, b, spec, suite))

    def _collect_ahead(self, wanted: tuple[Any, Any, Any, Any] | None) -> tuple[bool, Any]:
        """Read the replies to comparisons sent ahead, up to the one ``wanted`` asks for:
        (True, its report or None) when one was; (False, None) when none was (every
        reply read; None: read them all)."""
        while self._ahead:
            sent = self._ahead.pop(0)
            value = self._reply(close_on_error=False)
            if wanted is not None and _same_comparison(sent, wanted):
                return True, value
        return False, None

    def _ask(self, kind: str, argument: Any, *, close_on_error: bool) -> Any:
        if not self._request(kind, argument):
            return None
        return self._reply(close_on_error=close_on_error)

    def _request(self, kind: str, argument: Any) -> bool:
        """Send a request; False when the worker is gone (then it is closed)."""
        process = self._process
        if process.poll() is not None or process.stdin is None or process.stdout is None:
            return False
        try:
            request = pickle.dumps((kind, argument), protocol=pickle.HIGHEST_PROTOCOL)
            _send(process.stdin, request)
        except OSError:  # the worker is gone (a broken pipe)
            self.close()
            return False
        return True

    def _reply(self, *, close_on_error: bool) -> Any:
        """The value of the worker's next reply; None when it cannot answer (then it is
        closed) or answers an error (then closed when ``close_on_error``)."""
        process = self._process
        if process.stdout is None:
            return None
        try:
            reply = _receive(process.stdout)
        except OSError:  # the worker is gone (a broken pipe)
            reply = None
        if reply is None:
            self.close()
            return None
        status, value = pickle.loads(reply)  # our own child's answer
        if status != "ok":
            # A refused comparison leaves the worker able to draw; a failed drawing does not.
            if close_on_error:
                self.close()
            return None
        return value

    def close(self) -> None:
        """End the worker now (it holds nothing that must finish: a run that ends
        before its plots, a refused config, must not wait for matplotlib's import)."""
        self._ahead.clear()
        process = self._process
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):  # a pipe the dead worker left unread
                    stream.close()


def _same_comparison(sent: tuple[Any, ...], wanted: tuple[Any, ...]) -> bool:
    """The same runs (the same objects: the caller gathered them once), spec and suite."""
    return sent[0] is wanted[0] and sent[1] is wanted[1] and sent[2:] == wanted[2:]


def core_is_free() -> bool:
    """Whether a second process would run beside this one: the last minute's load
    average is below the number of CPUs. On a busy machine the worker's imports (numpy
    and the report modules again, besides matplotlib: ~0.35 s of CPU more in all) only
    compete with the run for the same cores."""
    cpus = os.cpu_count() or 1
    return cpus > 1 and os.getloadavg()[0] < cpus


def start_plot_worker(*, always: bool = False, draw: bool = True) -> PlotWorker | None:
    """Start a worker importing scipy (for the comparison) and, when ``draw``, matplotlib
    now; None when no process can be started, or when no core is free
    (:func:`core_is_free`) unless ``always``."""
    if not always and not core_is_free():
        return None
    # The worker must import this xaytune, whatever the current directory.
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _CODE.format(draw=bool(draw))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    return PlotWorker(process)


@contextlib.contextmanager
def lent(worker: PlotWorker) -> Iterator[None]:
    """While inside, the comparison (also sent ahead: the audit), report.md and
    report.html, and the plots are asked of ``worker`` first (or, gone, made here);
    at the end this process makes them again, and the worker is ended."""
    from xaytune.comparison.delegate import set_compare_delegate
    from xaytune.report._files import set_report_renderer
    from xaytune.report._plots import set_plot_drawer

    set_compare_delegate(worker.compare, ahead=worker.compare_ahead)
    set_report_renderer(worker.render)
    set_plot_drawer(worker.draw)
    try:
        yield
    finally:
        set_compare_delegate(None)
        set_report_renderer(None)
        set_plot_drawer(None)
        worker.close()


# A worker the command line started before Hydra's import and composition (~0.5 s
# sooner than the task function could), for the task function to take.
_handed: list[PlotWorker] = []


def hand_over(worker: PlotWorker) -> None:
    """Leave ``worker`` for :func:`take_handed` (xaytune.app.cli, as it starts)."""
    _handed[:] = [worker]


def take_handed() -> PlotWorker | None:
    """The worker left by :func:`hand_over`, once; None when there is none or it is
    gone (xaytune.app.main takes it for the run, or ends it when nothing is drawn)."""
    worker = _handed.pop() if _handed else None
    if worker is not None and worker._process.poll() is not None:
        worker.close()
        return None
    return worker


def serve(*, draw: bool = True) -> None:
    """The worker's main loop: import scipy and the comparison, then (when ``draw``)
    matplotlib, then answer each request until end of file on stdin."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The protocol owns the real stdout; anything printed while drawing goes to stderr.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    # The comparison comes first in a run (and alone in an audit): what compare_here
    # imports on first use (xaytune.comparison.stats, .power).
    import scipy.integrate
    import scipy.optimize
    import scipy.special  # noqa: F401

    from xaytune.comparison.compare import compare_here

    if draw:
        # What the first plot_png would import in the run's process (xaytune.report._plots).
        import matplotlib.backends.backend_agg
        import matplotlib.figure
        import matplotlib.ticker  # noqa: F401

        from xaytune.report._plots import warm_up

        if not _asked(requests):  # time to spare
            warm_up()

    from xaytune.report._files import HTML_TEMPLATE, rendered_reports_here
    from xaytune.report.jinja import prepare

    prepared = False  # report.html's template compiled (when nothing is asked)
    # The plots of the last comparison, drawn as soon as it is sent back: the run asks
    # for them after writing its JSON reports (report, plots); another report is drawn
    # when asked.
    drawn: tuple[Any, dict[str, bytes]] | None = None
    while True:
        if not prepared and not _asked(requests):
            prepare(HTML_TEMPLATE)
            prepared = True
        if (request := _receive(requests)) is None:
            break
        compared = None
        try:
            kind, argument = pickle.loads(request)
            if kind == "compare":
                compared = compare_here(*argument)
                reply: tuple[str, Any] = ("ok", compared)
            elif kind == "render":
                released, images, model, errors = argument
                rendered = rendered_reports_here(released, images, model=model, errors=errors)
                reply = ("ok", rendered)
            elif drawn is not None and drawn[0] == argument:
                reply = ("ok", drawn[1])
            else:
                reply = ("ok", draw_in_two(argument))
        except Exception as error:  # reported to the run, which then works itself
            reply = ("error", f"{type(error).__name__}: {error}")
        _send(replies, pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))
        if draw and compared is not None:
            drawn = _drawn_ahead(compared)


def _asked(requests: IO[bytes]) -> bool:
    """Whether a request waits on ``requests``' descriptor. One already read into the
    stream's buffer with the one before is not seen: it is answered after the work this
    check allowed (later, never otherwise)."""
    return bool(select.select([requests], [], [], 0)[0])


def _drawn_ahead(report: Any) -> tuple[Any, dict[str, bytes]] | None:
    """(the released report, its plots) drawn before they are asked for; None when
    they cannot be drawn (asked for, they are drawn again and the error answered)."""
    released = report.released()
    try:
        return released, draw_in_two(released)
    except Exception:  # the request for them reports it
        return None


def draw_in_two(report: Any) -> dict[str, bytes]:
    """:func:`~xaytune.report.draw_png` of ``report``, its first plot drawn here and the
    others in a forked copy of this process on the other core (~0.2 s each): the same
    functions on the same state, so the same bytes. When the copy cannot be made or
    does not answer, this process draws them too."""
    from xaytune.report._plots import plot_drawings

    drawings = plot_drawings(report)
    if len(drawings) < 2:
        return {name: draw() for name, draw in drawings}
    rest = drawings[1:]
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return {name: draw() for name, draw in drawings}
    try:
        child = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return {name: draw() for name, draw in drawings}
    if child == 0:  # the copy: draw the rest, send their bytes, exit without cleanup
        status = 1
        try:
            os.close(read_end)
            with os.fdopen(write_end, "wb") as out:
                out.write(pickle.dumps([draw() for _, draw in rest]))
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    first = drawings[0][1]()
    with os.fdopen(read_end, "rb") as pipe:
        sent = pipe.read()
    _, status = os.waitpid(child, 0)
    # Our own copy's answer; or, when it failed, drawn here.
    others = pickle.loads(sent) if status == 0 and sent else [draw() for _, draw in rest]
    names = [name for name, _ in drawings]
    return dict(zip(names, [first, *others], strict=True))
