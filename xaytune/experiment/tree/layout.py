"""Facts about an output tree on disk that several commands need: links, the lock,
and one walk of the whole tree (:func:`walk_tree`) for an auditor that needs every
file, every directory and every link, and should not walk the tree for each.

One writer per tree: :func:`tree_lock` takes an exclusive ``flock`` on
``<tree>/.xaytune.lock`` for a run or a resume; a second writer is refused
(``tree-locked``, naming the pid that holds it) before it changes anything. The lock
is released by the kernel when the process ends, however it ends.
"""

from __future__ import annotations

import bisect
import errno
import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from xaytune.core.errors import ConfigError

__all__ = [
    "LOCK_FILE",
    "TreeFiles",
    "find_links",
    "fresh_dir",
    "remove_stale_temporaries",
    "tree_lock",
    "tree_writer",
    "walk_tree",
]

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


@dataclass(frozen=True)
class TreeFiles:
    """What one walk of a tree found, as path strings under ``root`` (a link is
    listed, never followed): ``files`` (regular files), ``links``, ``others`` (a
    FIFO, a socket: no writer makes one) and ``dirs``, each sorted as strings."""

    root: Path
    files: tuple[str, ...]
    links: tuple[str, ...]
    others: tuple[str, ...]
    dirs: tuple[str, ...]

    def named(self, name: str) -> list[Path]:
        """Every entry named ``name`` (a file, link or directory), sorted as paths:
        what ``sorted(root.rglob(name))`` gives."""
        tail = os.sep + name
        found = (
            path
            for kind in (self.files, self.links, self.others, self.dirs)
            for path in kind
            if path.endswith(tail)
        )
        return sorted(map(Path, found))

    def under(self, kind: tuple[str, ...], base: Path) -> tuple[str, ...]:
        """The paths of ``kind`` (one of this listing's tuples) inside ``base``."""
        return self.starting(kind, os.fspath(base) + os.sep)

    @staticmethod
    def starting(kind: tuple[str, ...], prefix: str) -> tuple[str, ...]:
        """The paths of ``kind`` (sorted strings) that start with ``prefix``."""
        # In sorted order they lie from ``prefix`` up to its last character's successor.
        low = bisect.bisect_left(kind, prefix)
        high = bisect.bisect_left(kind, prefix[:-1] + chr(ord(prefix[-1]) + 1), low)
        return kind[low:high]

    def matching(self, base: Path, patterns: tuple[str, ...]) -> list[Path]:
        """The files and links under ``base`` whose path relative to it matches one of
        the glob ``patterns`` (``*``, ``?`` and ``**`` as ``Path.glob`` reads them)."""
        regex = re.compile("|".join(f"(?:{_glob_regex(pattern)})" for pattern in patterns))
        cut = len(os.fspath(base)) + 1
        return sorted(
            Path(path)
            for kind in (self.files, self.links)
            for path in self.under(kind, base)
            if regex.fullmatch(path[cut:])
        )


def _glob_regex(pattern: str) -> str:
    """A regular expression of the relative paths ``Path.glob(pattern)`` yields: ``**``
    any number of directories (none included), ``*`` any part of one name."""
    parts = []
    for part in pattern.split("/"):
        if part == "**":
            parts.append("(?:[^/]+/)*")
            continue
        name = "".join(
            "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char) for char in part
        )
        parts.append(name + "/")
    return "".join(parts)[:-1]


def walk_tree(root: Path) -> TreeFiles:
    """One walk of the tree under ``root`` (one scandir per directory, no stat; a
    link is listed, never followed)."""
    files: list[str] = []
    links: list[str] = []
    others: list[str] = []
    dirs: list[str] = []
    pending = [os.fspath(root)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_symlink():
                    links.append(entry.path)
                elif entry.is_dir():
                    dirs.append(entry.path)
                    pending.append(entry.path)
                elif entry.is_file():
                    files.append(entry.path)
                else:
                    others.append(entry.path)
    return TreeFiles(
        root, tuple(sorted(files)), tuple(sorted(links)), tuple(sorted(others)), tuple(sorted(dirs))
    )


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


def tree_writer(tree: Path) -> str | None:
    """The pid of the live process writing ``tree`` (a run or a resume holding its
    lock, :func:`tree_lock`; in a sweep, a job's own directory under it), or None.

    Read-only: the lock file is opened for reading and probed with a shared lock, so a
    verifier never creates or changes a file in the tree. A lock file whose writer has
    died is not held (the kernel released it): None."""
    candidates = [tree / LOCK_FILE, *sorted(tree.glob(f"*/{LOCK_FILE}"))]
    candidates += sorted(tree.glob(f"*/*/{LOCK_FILE}"))  # a sweep's job, a model's run
    for path in candidates:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # no lock file (or not a regular one): no writer here
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        finally:
            os.close(fd)
    return None


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
