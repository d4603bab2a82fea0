"""Plain file I/O of the store: whole reads, whole-or-nothing or appended writes,
unbuffered, fsync on request."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "atomic_write",
    "atomic_write_chunks",
    "durable_dir",
    "read_file",
    "write_all",
    "write_file",
]

_READ = os.O_RDONLY | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC


def atomic_write(path: Path | str, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` whole or not at all (temp file, fsync, rename)."""
    atomic_write_chunks(path, (data,), durable=durable)


def atomic_write_chunks(path: Path | str, chunks: Iterable[bytes], *, durable: bool) -> None:
    """:func:`atomic_write` of the concatenated ``chunks``, never held whole.

    On any failure (a chunk that raises, a full disk, an interrupt) the temp file is
    removed and ``path`` is left as it was. The temp file is never a symlink
    followed: a write lands in ``path``'s directory or nowhere.
    """
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, _CREATE | os.O_NOFOLLOW, 0o666)
    try:
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
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file(path: Path | str, data: bytes, *, durable: bool, append: bool = False) -> None:
    """Create (or truncate) ``path``, or append to it when ``append``, and write
    ``data``; fsync it when ``durable``.

    Plain ``os`` calls: no buffered file object, no tty probe, no seek.
    """
    fd = os.open(path, _APPEND if append else _CREATE, 0o666)
    try:
        write_all(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


_FIRST_READ = 1 << 16  # most attempt files are smaller: one read, no fstat


def read_file(path: Path | str) -> bytes:
    """A whole file, in one read when it is under 64 KiB (a short read of a regular
    file is its end); a larger one is sized by ``fstat`` and read in one more."""
    fd = os.open(path, _READ)
    try:
        data = os.read(fd, _FIRST_READ)
        if len(data) < _FIRST_READ:
            return data
        size = os.fstat(fd).st_size
        chunks = [data, os.read(fd, max(size - len(data), 0) + 1)]
        if len(data) + len(chunks[1]) > size:  # it grew while being read: read the rest
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def durable_dir(path: Path | str, *, durable: bool) -> None:
    """fsync a directory (so a rename or a new file in it is durable) when ``durable``."""
    if durable:
        fd = os.open(path, _READ)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
