"""The execution sandbox: model-written code run against a task's tests in a child
process with limits, and an outcome word that says how it ended.

What one run is
---------------
A fresh temporary directory (removed afterwards, whatever happened) is the child's
working directory, ``HOME`` and ``TMPDIR``. The child is this interpreter running
:mod:`._sandbox_runner` as a script with ``-s -P -B`` (no user site, no script
directory on ``sys.path``, no bytecode written) and a clean environment of exactly
``PYTHONHASHSEED=0``, ``LC_ALL=C.UTF-8``, ``HOME``, ``TMPDIR`` and ``PATH`` — the
isolation of ``python -I`` minus its ``-E``, which would ignore the fixed hash seed and
make ``set`` iteration order (and so some results) vary between runs. It is started in
a new session (its own process group) and, where the kernel allows it without
privileges (``unshare -rn true`` succeeds), in a new user and network namespace that
has no network interface but a downed loopback: :func:`network_isolation` says which.

The child reads its job on stdin and sets its own limits before any model-written
line runs (:mod:`._sandbox_runner`): ``RLIMIT_CPU`` (``cpu_s``), ``RLIMIT_AS``
(``memory_mb``), ``RLIMIT_NPROC`` 0 (no process or thread can be created),
``RLIMIT_FSIZE`` (``output_kb``), ``RLIMIT_NOFILE`` (``open_files``), no core file; and
an audit hook that refuses network use, process creation and signals, ``ctypes``, and
writes, removals and renames outside its directory. The parent kills the whole
process group at ``wall_s`` and keeps at most ``output_kb`` of stdout and of stderr.

The pass marker
---------------
Success is one line on a pipe whose descriptor is handed to the runner only (not in
argv or the environment), written after the tests and ``check`` returned, carrying a
token the model's code is not given: ``sha256`` of the answer's and the reference's
digests (deterministic, so a re-run writes the same marker). ``sys.exit(0)``,
``os._exit(0)``, printing "passed", or a clean exit before the tests end as
``exited``, never ``passed``.

Threat model
------------
It stops what an honest-but-wrong or careless answer does: loops forever, eats memory,
forks, fills the disk, writes over files, talks to the network (a listener on
127.0.0.1 included), exits early to look successful, kills its parent. It is **not** a
security boundary against code written to escape: the child runs as the same user,
so code that reads its own interpreter's frames (``sys._getframe``, ``gc``) can find
the token and the marker descriptor; the audit hook is Python-level (a C extension
already installed in the environment can make system calls it never sees; ``ctypes``
is refused for that reason); ``RLIMIT_NPROC`` does not bind root (uid 0), where the
audit hook and the runner's thread refusal alone stop new processes and threads; reads
are not confined (the code can read any file the user can, e.g. the suite's
references); without a network namespace, the network is closed by the audit hook
alone. Run untrusted models' code in a container or VM. And the tests decide: an
answer that games them (an object equal to everything) passes them.

Outcomes (each deterministic for a given answer and reference, except at the edge
of a time limit): ``passed``, ``failed`` (an assertion), ``error`` (another
exception), ``syntax-error``, ``timeout`` (wall or CPU time), ``memory``,
``output-limit`` (a file over the limit), ``forbidden`` (the sandbox refused an
operation; it wins over any later outcome), ``exited`` (the process ended before the
tests passed), ``crashed`` (killed by a signal the sandbox did not send).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

__all__ = [
    "SandboxLimits",
    "SandboxOutcome",
    "SandboxResult",
    "network_isolation",
    "pass_token",
    "run_in_sandbox",
]

SandboxOutcome = Literal[
    "passed",
    "failed",
    "error",
    "syntax-error",
    "timeout",
    "memory",
    "output-limit",
    "forbidden",
    "exited",
    "crashed",
]
_OUTCOMES = frozenset(get_args(SandboxOutcome))
_RUNNER = Path(__file__).with_name("_sandbox_runner.py")
_MARKER_CAP = 64 * 1024
_DRAIN_AFTER_KILL_S = 2.0


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one run may use: wall and CPU seconds, address space, the size of a file
    it writes and of the stdout/stderr kept, and open descriptors."""

    wall_s: float = 10.0
    cpu_s: int = 5
    memory_mb: int = 512
    output_kb: int = 64
    open_files: int = 64

    def __post_init__(self) -> None:
        if not 0 < self.wall_s <= 3600 or not 1 <= self.cpu_s <= 3600:
            raise ValueError("wall_s must be in (0, 3600] and cpu_s in [1, 3600]")
        if not 64 <= self.memory_mb <= 1 << 20 or not 1 <= self.output_kb <= 1 << 20:
            raise ValueError("memory_mb must be in [64, 1048576] and output_kb in [1, 1048576]")
        if not 16 <= self.open_files <= 4096:
            raise ValueError("open_files must be in [16, 4096]")


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """How one run ended: its ``outcome`` word, a deterministic ``detail`` (or None),
    and the stdout and stderr kept (at most ``output_kb`` each)."""

    outcome: SandboxOutcome
    detail: str | None
    stdout: bytes
    stderr: bytes

    @property
    def reason(self) -> str:
        """``<outcome>`` or ``<outcome>: <detail>``: one line, the scorer's reason."""
        return self.outcome if self.detail is None else f"{self.outcome}: {self.detail}"


def pass_token(answer: str, reference: str) -> str:
    """The marker's token for this (answer, reference): derived, not random, so a
    re-run (``verify``) writes the same one; never shown to the model's code."""
    digest = hashlib.sha256(b"xaytune-sandbox/v1\0")
    for text in (answer, reference):
        digest.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    return digest.hexdigest()


@functools.cache
def network_isolation() -> Literal["namespace", "audit-hook"]:
    """``namespace`` when an unprivileged user+network namespace can be made here
    (``unshare -rn true`` succeeds): the child then has no network at all; else
    ``audit-hook`` (the runner's hook alone refuses network use)."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return "audit-hook"
    try:
        done = subprocess.run(
            [unshare, "-rn", "true"], capture_output=True, timeout=10, check=False, env={}
        )
    except (OSError, subprocess.SubprocessError):
        return "audit-hook"
    return "namespace" if done.returncode == 0 else "audit-hook"


def run_in_sandbox(
    solution: str,
    tests: str,
    *,
    entry_point: str | None,
    token: str,
    limits: SandboxLimits,
) -> SandboxResult:
    """Run ``solution`` then ``tests`` (then ``check(<entry_point>)`` when the tests
    define ``check``) in a fresh sandbox (module docstring). ``tests`` must compile:
    a ``SyntaxError`` in them is raised here, before anything runs (the suite's fault,
    not the answer's). Linux only (``RuntimeError`` elsewhere): the limits it relies on
    (``RLIMIT_AS`` above all) are not enforced on other systems."""
    if not sys.platform.startswith("linux"):
        raise RuntimeError(f"the execution sandbox needs Linux, not {sys.platform}")
    compile(tests, "tests.py", "exec")
    job = {
        "solution": solution,
        "tests": tests,
        "entry_point": entry_point,
        "token": token,
        "cpu_s": limits.cpu_s,
        "memory_mb": limits.memory_mb,
        "file_kb": limits.output_kb,
        "open_files": limits.open_files,
    }
    directory = tempfile.mkdtemp(prefix="xaytune-sandbox-")
    try:
        return _run(job, directory, limits)
    finally:
        _remove(directory)


def _run(job: dict[str, object], directory: str, limits: SandboxLimits) -> SandboxResult:
    read_end, write_end = os.pipe()
    prefix = ["unshare", "-rn"] if network_isolation() == "namespace" else []
    env = {
        "PYTHONHASHSEED": "0",
        "LC_ALL": "C.UTF-8",
        "HOME": directory,
        "TMPDIR": directory,
        "PATH": os.defpath,
    }
    job["marker_fd"] = write_end
    try:
        process = subprocess.Popen(
            [*prefix, sys.executable, "-s", "-P", "-B", str(_RUNNER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=directory,
            env=env,
            pass_fds=(write_end,),
            start_new_session=True,
        )
    finally:
        os.close(write_end)
    try:
        kept, timed_out = _communicate(process, read_end, json.dumps(job).encode(), limits)
    finally:
        os.close(read_end)
        if process.poll() is None:
            _kill(process)
        process.wait()  # SIGKILL cannot be caught: this returns
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    outcome, detail = _classify(process.returncode, kept["marker"], timed_out, job, limits)
    return SandboxResult(outcome, detail, kept["stdout"], kept["stderr"])


def _communicate(
    process: subprocess.Popen[bytes], marker: int, job: bytes, limits: SandboxLimits
) -> tuple[dict[str, bytes], bool]:
    """Send the job, then read stdout, stderr and the marker pipe until all three
    close, keeping at most the caps; kill the process group at the wall deadline."""
    assert process.stdin and process.stdout and process.stderr
    try:
        process.stdin.write(job)
        process.stdin.close()
    except BrokenPipeError:
        pass  # the child died at once: its exit status says how
    caps = {"stdout": limits.output_kb * 1024, "stderr": limits.output_kb * 1024}
    caps["marker"] = _MARKER_CAP
    kept = {name: bytearray() for name in caps}
    selector = selectors.DefaultSelector()
    selector.register(process.stdout.fileno(), selectors.EVENT_READ, "stdout")
    selector.register(process.stderr.fileno(), selectors.EVENT_READ, "stderr")
    selector.register(marker, selectors.EVENT_READ, "marker")
    deadline = time.monotonic() + limits.wall_s
    timed_out = False
    try:
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                if timed_out:
                    break  # something outside the group holds a pipe: stop reading
                timed_out = True
                _kill(process)
                deadline = time.monotonic() + _DRAIN_AFTER_KILL_S
                continue
            for key, _ in selector.select(timeout=left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                buffer, cap = kept[key.data], caps[key.data]
                buffer += chunk[: max(0, cap - len(buffer))]
    finally:
        selector.close()
    if not timed_out:  # the pipes closed; the process may still run (it closed them)
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(process)
    return {name: bytes(buffer) for name, buffer in kept.items()}, timed_out


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(process.pid, signal.SIGKILL)


def _classify(
    returncode: int,
    marker: bytes,
    timed_out: bool,
    job: dict[str, object],
    limits: SandboxLimits,
) -> tuple[SandboxOutcome, str | None]:
    record = _record(marker)
    # RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one. Which limit came
    # first depends on the machine's load, so the detail names both, never which one:
    # a re-run (verify) on a busier machine gives the same reason.
    cpu_killed = returncode in (-signal.SIGXCPU, -signal.SIGKILL) and record is None
    if timed_out or cpu_killed:
        return "timeout", f"over the time limit (CPU {limits.cpu_s} s, wall {limits.wall_s:g} s)"
    if record is not None:
        outcome, detail = record.get("outcome"), record.get("detail")
        if outcome == "passed":
            if record.get("token") == job["token"] and returncode == 0:
                return "passed", None
            return "crashed", "a pass marker that is not this run's"
        if outcome in _OUTCOMES and (detail is None or isinstance(detail, str)):
            return outcome, detail  # type: ignore[return-value]
    if returncode < 0:
        return "crashed", f"killed by {signal.Signals(-returncode).name}"
    return "exited", f"the process ended (exit status {returncode}) before the tests passed"


def _record(marker: bytes) -> dict[str, object] | None:
    """The runner's record: the marker's last line as a JSON object, else None."""
    lines = marker.decode("utf-8", "replace").strip().splitlines()
    try:
        record = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _remove(directory: str) -> None:
    """Remove the run's directory even if the code took its permissions away."""

    def retry(function, path, _info):  # type: ignore[no-untyped-def]
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            function(path)
        except OSError as error:
            if error.errno != errno.ENOENT:
                raise

    shutil.rmtree(directory, onerror=retry)
