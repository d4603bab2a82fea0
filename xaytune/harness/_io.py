"""Plain file writes of the store: whole-or-nothing, unbuffered, fsync on request."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "atomic_write",
    "atomic_write_chunks",
    "durable_dir",
    "fsync_dir",
    "fsync_file",
    "write_all",
    "write_file",
]


def atomic_write(path: Path | str, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` whole or not at all (temp file, fsync, rename)."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    write_file(tmp, data, durable=durable)
    os.replace(tmp, path)


def atomic_write_chunks(path: Path | str, chunks: Iterable[bytes], *, durable: bool) -> None:
    """:func:`atomic_write` of the concatenated ``chunks``, never held whole."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        pending: list[bytes] = []
        size = 0
        for chunk in chunks:  # written in pieces of about a MiB
            pending.append(chunk)
            size += len(chunk)
            if size >= 1 << 20:
                write_all(fd, b"".join(pending))
                pending, size = [], 0
        write_all(fd, b"".join(pending))
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file(path: Path | str, data: bytes, *, durable: bool, exclusive: bool = False) -> None:
    """Create (or truncate) ``path`` and write ``data``; fsync it when ``durable``.

    Plain ``os`` calls: no buffered file object, no tty probe, no seek.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, 0o666)
    try:
        write_all(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path | str) -> None:
    """Flush a file already written to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path | str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable_dir(path: Path | str, *, durable: bool) -> None:
    """fsync a directory (so a rename or a new file in it is durable) when ``durable``."""
    if durable:
        fsync_dir(path)
