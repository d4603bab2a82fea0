"""The program the execution sandbox runs as its child (stdlib only; never imported by
xaytune, run as a script by :mod:`xaytune.evaluation.scorers._sandbox`).

It reads its whole job from stdin (one JSON object: the solution's source, the tests'
source, the entry point, the limits, the pass token and the marker pipe's descriptor),
then, before any model-written line runs:

1. points stdin at ``/dev/null`` and forgets the job's text (the token is kept in a
   closure only);
2. sets its resource limits with ``resource.setrlimit`` (CPU seconds, address space,
   processes, output file size, open files): they hold for the rest of its life;
3. replaces the ``_thread`` functions that start a thread with a refusal, and
   installs an audit hook (``sys.addaudithook``, which cannot be removed) that refuses
   network use, process (and thread) creation, signals to other processes, ``ctypes`` and any
   write, removal or rename outside the working directory (the sandbox's fresh
   temporary directory). A refused operation raises ``PermissionError`` in the model's
   code *and* is remembered: the run's outcome is then ``forbidden`` even when the
   code caught the error.

Then it executes the solution, then the tests in the solution's namespace, then
``check(<entry point>)`` when the job names one and the tests define ``check``. Only
after all of that returns does it write ``{"outcome": "passed", "token": <token>}`` to
the marker pipe (a descriptor the model's code is not told about); any other ending is
written as its outcome and a short, deterministic detail (exception type and the line
of ``solution.py`` / ``tests.py`` it was raised on, never a message that could hold
an address). It then leaves with ``os._exit`` (no atexit handler of the model's runs).
"""

import contextlib
import errno
import json
import os
import resource
import sys

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_NETWORK = frozenset(
    {
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.gethostname",
    }
)
_PROCESSES = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "subprocess.Popen",
        "pty.spawn",
    }
)
# Events whose every path argument is written (created, removed, renamed, changed).
_PATH_EVENTS = {
    "os.remove": 1,
    "os.rmdir": 1,
    "os.mkdir": 1,
    "os.rename": 2,
    "os.truncate": 1,
    "os.chmod": 1,
    "os.chown": 1,
    "os.symlink": 2,
    "os.link": 2,
    "os.utime": 1,
    "os.chflags": 1,
    "os.setxattr": 1,
    "os.removexattr": 1,
    "shutil.rmtree": 1,
}


def _limits(job):
    mb = 1024 * 1024
    cpu = int(job["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = int(job["memory_mb"]) * mb
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    output = int(job["file_kb"]) * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (output, output))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file
    # Descriptors already open (the marker pipe) stay usable above the limit.
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(job["open_files"]),) * 2)
    # No new process or thread at all: a fork bomb (or a thread bomb) fails at once.
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


def _hook(root, refused):
    """The audit hook: refusals are recorded in ``refused`` and raised."""
    realpath, fspath, sep = os.path.realpath, os.fspath, os.sep
    inside = root + sep

    def outside(path):
        if isinstance(path, int):  # an open descriptor: already vetted when opened
            return False
        try:
            full = realpath(fspath(path))
        except (TypeError, ValueError):
            return True
        return full != root and not full.startswith(inside) and full != os.devnull

    def refuse(what):
        if not refused:
            refused.append(what)
        raise PermissionError(f"xaytune sandbox: {what} is not allowed")

    def hook(event, args):
        if event == "open":
            path, _mode, flags = args
            if isinstance(flags, int) and flags & _WRITE_FLAGS and outside(path):
                refuse("a write outside the sandbox directory")
        elif event in _NETWORK:
            refuse("network use")
        elif event in _PROCESSES:
            refuse("process creation or signalling")
        elif event.startswith("ctypes."):
            refuse("ctypes")
        elif event in _PATH_EVENTS and any(outside(path) for path in args[: _PATH_EVENTS[event]]):
            refuse("a change outside the sandbox directory")

    return hook


def _no_threads(refused):
    """Thread creation refused like a process: ``RLIMIT_NPROC`` stops threads too, but
    not for root, and Python 3.11 raises no audit event for a thread; without this a
    threaded answer would pass or fail depending on the user running it."""
    import _thread
    import threading

    def refuse(*_args, **_kwargs):
        if not refused:
            refused.append("thread creation")
        raise PermissionError("xaytune sandbox: thread creation is not allowed")

    for module, names in (
        (_thread, ("start_new_thread", "start_new", "start_joinable_thread")),
        (threading, ("_start_new_thread", "_start_joinable_thread")),  # 3.13 uses the latter
    ):
        for name in names:
            if hasattr(module, name):
                setattr(module, name, refuse)


def _where(error):
    """``<file> line <n>``: the last frame of the solution or the tests."""
    found = None
    trace = error.__traceback__
    while trace is not None:
        name = trace.tb_frame.f_code.co_filename
        if name in ("solution.py", "tests.py"):
            found = f"{name} line {trace.tb_lineno}"
        trace = trace.tb_next
    if found is None and isinstance(error, SyntaxError) and error.filename:
        found = f"{error.filename} line {error.lineno}"
    return found or "the runner"


def _run(job, refused):
    """(outcome, detail) of the job's solution against its tests."""
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        code = compile(job["solution"], "solution.py", "exec")
    except SyntaxError as error:
        return "syntax-error", f"{type(error).__name__} at {_where(error)}"
    except (ValueError, MemoryError, RecursionError) as error:
        return "syntax-error", f"{type(error).__name__} compiling solution.py"
    tests = compile(job["tests"], "tests.py", "exec")
    try:
        exec(code, namespace)
        exec(tests, namespace)
        entry, check = job["entry_point"], namespace.get("check")
        # Only the tests' own check: a check the solution defined would judge itself.
        if entry is not None and getattr(check, "__code__", None) is not None:
            if check.__code__.co_filename != "tests.py":
                return "error", "check is not defined by the tests"
            if entry not in namespace:
                return "error", f"the solution defines no {entry!r}"
            check(namespace[entry])
    except SystemExit as error:
        code_ = error.code if isinstance(error.code, int) or error.code is None else 1
        return "exited", f"SystemExit({code_}) at {_where(error)} before the tests passed"
    except MemoryError as error:
        return "memory", f"MemoryError at {_where(error)}"
    except AssertionError as error:
        return "failed", f"AssertionError at {_where(error)}"
    except OSError as error:
        if error.errno == errno.EFBIG:  # RLIMIT_FSIZE (Python ignores SIGXFSZ)
            return "output-limit", f"a file over {job['file_kb']} KB at {_where(error)}"
        return "error", f"{type(error).__name__} at {_where(error)}"
    except BaseException as error:  # the model's code may raise anything
        return "error", f"{type(error).__name__} at {_where(error)}"
    if refused:
        return "forbidden", refused[0]
    return "passed", None


def main():
    # Bound before the model's code runs: patching json.dumps or os._exit then changes
    # nothing the runner does afterwards.
    dumps, leave = json.dumps, os._exit
    job = json.loads(sys.stdin.buffer.read())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    marker = os.fdopen(int(job.pop("marker_fd")), "w", encoding="utf-8")
    token = job.pop("token")
    _limits(job)
    refused = []
    _no_threads(refused)
    sys.addaudithook(_hook(os.path.realpath(os.getcwd()), refused))
    outcome, detail = _run(job, refused)
    if refused and outcome != "passed":
        outcome, detail = "forbidden", refused[0]
    record = {"outcome": outcome, "detail": detail}
    if outcome == "passed":
        record["token"] = token
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the code may have closed them
                stream.flush()
        marker.write(dumps(record) + "\n")
        marker.flush()
    finally:
        leave(0)


if __name__ == "__main__":
    main()
