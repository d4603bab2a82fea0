"""Code identity: what a part *is*, not only what it is called.

A part's identity is its kind, its name, the dotted path of the object that
implements it, its declared ``version`` and the sha256 of the source of the module
that defines it (line endings normalised, so a checkout on another platform gives
the same digest). The whole module is hashed, not only the object's own lines: a
helper the tool calls in the same module changes what the tool does, and must change
its identity (DESIGN: a part that can change a result is identified by its code).
Code in *other* modules is covered by the part's declared ``version``, or, when the part
names them in ``__xaytune_sources__`` (a tuple of module names, e.g. the built-in
calculator's evaluator module), by their sources too.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from xaytune.core.errors import PluginError

__all__ = ["CodeIdentity", "PartKind", "code_identity", "target_path"]

PartKind = Literal["tool", "loop", "scorer", "model", "environment"]


class CodeIdentity(BaseModel):
    """The pinned identity of one part; enters the fingerprint that covers the part."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: PartKind
    name: str
    target: str
    version: str
    source_sha256: str


def _code_object(obj: object, where: str) -> object:
    """The function or class whose code ``obj`` runs: through decorators that keep
    ``__wrapped__`` (``functools.wraps``, ``lru_cache``) and ``functools.partial``; an
    instance of a class is its class. A partial's own arguments are not code: they
    must be declared as params in config, where the fingerprint covers them."""
    while True:
        if isinstance(obj, functools.partial):
            if obj.args or obj.keywords:
                raise PluginError(
                    "bad-part",
                    f"{where}: a functools.partial with bound arguments cannot be identified; "
                    "declare the arguments as params in config",
                )
            obj = obj.func
        elif hasattr(obj, "__wrapped__") and not inspect.isclass(obj):
            obj = obj.__wrapped__
        else:
            break
    if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj):
        return obj
    return type(obj)


def target_path(obj: object) -> str:
    """``module.qualname`` of the function or class whose code ``obj`` runs."""
    obj = _code_object(obj, "part")
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


_SOURCE_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}


def _file_digest(filename: str) -> str:
    """sha256 of a source file with LF line endings, remembered per file version."""
    stat = Path(filename).stat()
    # ctime and inode too: an edit that keeps size and restores the mtime still
    # changes the ctime (only the kernel sets it).
    key = (filename, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_size)
    digest = _SOURCE_DIGESTS.get(key)
    if digest is None:
        data = Path(filename).read_bytes().replace(b"\r\n", b"\n")
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        _SOURCE_DIGESTS[key] = digest
    return digest


def _module_file(name: str) -> str | None:
    module = sys.modules.get(name)
    filename = getattr(module, "__file__", None) if module is not None else None
    if filename and filename.endswith(".py") and Path(filename).is_file():
        return filename
    return None


def _source_digest(obj: object, where: str) -> str:
    target = _code_object(obj, where)
    filename = _module_file(getattr(target, "__module__", "") or "")
    if filename is not None:
        digest = _file_digest(filename)
        # A part whose logic lives in other modules names them: their sources count too.
        also = getattr(target, "__xaytune_sources__", ())
        if also:
            digests = [digest]
            for name in also:
                importlib.import_module(name)
                other = _module_file(name)
                if other is None:
                    raise PluginError("no-source", f"{where}: module {name} has no source file")
                digests.append(_file_digest(other))
            digest = "sha256:" + hashlib.sha256("\n".join(digests).encode()).hexdigest()
        return digest
    try:  # a module without a file (python -c, a notebook): the object's own lines
        source = inspect.getsource(target)
    except (OSError, TypeError):
        raise PluginError(
            "no-source",
            f"{where}: the source of {target_path(obj)} cannot be read, so its code "
            "cannot be identified; define it in a module file",
        ) from None
    return "sha256:" + hashlib.sha256(source.replace("\r\n", "\n").encode()).hexdigest()


def code_identity(
    kind: PartKind, name: str, obj: object, *, version: str | None = None, where: str = ""
) -> CodeIdentity:
    """The identity of ``obj`` (a function, class or instance) as the part ``name``.

    ``version`` defaults to the version its decorator declared, else the object's
    ``version`` attribute, else ``"0"``.
    """
    declared = version
    if declared is None:
        code = _code_object(obj, where or f"{kind} {name!r}")
        declared = getattr(obj, "__xaytune_version__", None) or getattr(
            code, "__xaytune_version__", None
        )
        if declared is None:
            declared = getattr(obj, "version", None)
    # Only a declared string counts: a property or other object read off a class would
    # spell differently in every process.
    if not isinstance(declared, str):
        declared = "0"
    return CodeIdentity(
        kind=kind,
        name=name,
        target=target_path(obj),
        version=declared,
        source_sha256=_source_digest(obj, where or f"{kind} {name!r}"),
    )
