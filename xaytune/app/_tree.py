"""Facts about an output tree on disk that several commands need: links, the lock.

One writer per tree: :func:`tree_lock` takes an exclusive ``flock`` on
``<tree>/.xaytune.lock`` for a run or a resume; a second writer is refused
(``tree-locked``, naming the pid that holds it) before it changes anything. The lock
is released by the kernel when the process ends, however it ends.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from xaytune.core.errors import ConfigError

__all__ = ["LOCK_FILE", "find_links", "fresh_dir", "remove_stale_temporaries", "tree_lock"]

LOCK_FILE = ".xaytune.lock"
# What a whole-or-nothing write leaves when its writer is killed before the rename:
# ``.<name>.<pid>.tmp`` beside the file it was to replace (the file is untouched).
_TEMPORARY = re.compile(r"\..+\.[0-9]+\.tmp")


def fresh_dir(path: Path) -> Path:
    """``path``, or ``path-2``, ``path-3``, ...: the first one this process creates.

    mkdir is atomic, so two runs (or sweeps, or comparisons) started in the same
    second never share a timestamped directory.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        candidate = path if n == 1 else path.with_name(f"{path.name}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise ConfigError("bad-output", f"{path}: no free directory name")


def find_links(root: Path) -> list[Path]:
    """Every symbolic link under ``root`` (one scandir per directory, no lstat)."""
    links, pending = [], [str(root)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_symlink():
                    links.append(Path(entry.path))
                elif entry.is_dir():
                    pending.append(entry.path)
    return sorted(links)


def remove_stale_temporaries(root: Path) -> list[Path]:
    """Remove the temporary files killed writers left under ``root``; return them.

    Call only while holding the tree's lock: no writer of this tree is alive then,
    so each such file is a write that never happened (its target kept its bytes).
    """
    stale = []
    for directory, _, files in os.walk(root):
        for name in files:
            if _TEMPORARY.fullmatch(name):
                path = Path(directory, name)
                path.unlink()
                stale.append(path)
    return sorted(stale)


@contextmanager
def tree_lock(tree: Path) -> Iterator[None]:
    """Hold the tree's write lock for the body; ``tree-locked`` if another holds it."""
    path = tree / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        word = errno.errorcode.get(error.errno or 0, "oserror")
        raise ConfigError("tree-unwritable", f"{path}: {word}: {error.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise ConfigError(
                "tree-locked", f"{tree} is being written by pid {holder}; nothing was changed"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
