"""A replicate record written once, linked by every reuse: no new bytes, no fsync.

A reused replicate's record (``replicate.restricted.json``) is, when its evaluations
come from the cache too, byte for byte the record of the run that made the entry.
Writing it again costs a file created and an fsync (the slowest step of a reuse on a
busy disk). The entry keeps the record of each run that stored into it, linked (the
same inode) under the sha256 of its bytes, beside the entry's own files (a directory
for them would cost a ``mkdir``, ten links' worth on this disk)::

    v2/<key hex>/shared.<sha256 hex>

A later replicate that would write exactly those bytes links the entry's file in
place of writing: its bytes were fsynced when the record was first written, so the
link is all that is new (metadata, as every link of a reuse). The linked file is
read back and compared with the bytes this run computed before it replaces anything:
an entry's copy edited since is never served, the record is written as before. The
kept copy is read-only (mode 0444), as every file the cache shares, and an entry
keeps one (the first written under it; not counted in its size, as its evaluations).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from xaytune.harness.evidence.store import atomic_write

__all__ = ["keep_shared", "link_shared", "write_shared"]

_PREFIX = "shared."


def _shared(entry: Path, data: bytes) -> str:
    return os.path.join(entry, _PREFIX + hashlib.sha256(data).hexdigest())


def write_shared(target: Path, data: bytes, entry: Path | None, *, keep: bool) -> None:
    """``data`` at ``target``, whole and durable: linked from the cache ``entry`` when
    it keeps these very bytes, else written (``atomic_write``) and, with ``keep``,
    kept in the entry for the next."""
    if entry is not None and link_shared(entry, data, target):
        return
    atomic_write(target, data)
    if entry is not None and keep:
        keep_shared(entry, target, data)


def link_shared(entry: Path, data: bytes, target: Path) -> bool:
    """Put the entry's copy of ``data`` at ``target`` (replacing what is there, whole
    or not at all) when the entry holds exactly these bytes; False otherwise (nothing
    changed: the caller writes ``data``)."""
    target_name = os.fspath(target)
    temporary = os.path.join(os.path.dirname(target_name), f".{target.name}.{os.getpid()}.tmp")
    try:
        os.link(_shared(entry, data), temporary, follow_symlinks=False)
    except OSError:
        return False  # not kept, evicted, or not linkable here (another filesystem)
    try:
        # Read through the new link: the inode placed is the one compared.
        fd = os.open(temporary, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, "rb") as file:
            same = file.read() == data
        if same:
            os.replace(temporary, target_name)
    except OSError:
        same = False
    # Renaming a link over another link of the same inode (a resume) leaves both.
    with contextlib.suppress(OSError):
        os.unlink(temporary)
    return same


def keep_shared(entry: Path, path: Path, data: bytes) -> None:
    """Keep ``path`` (just written durably, holding ``data``) in the entry for later
    replicates, linked and made read-only, unless the entry keeps a record already
    (one per entry: a judge's records, a new measurement each time, never pile up; a
    kept copy edited since stays unserved). A failure keeps nothing (the cache is an
    optimisation)."""
    kept = _shared(entry, data)
    with contextlib.suppress(OSError):
        if any(name.startswith(_PREFIX) for name in os.listdir(entry)):
            return
        temporary = f"{kept}.{os.getpid()}.tmp"
        os.link(path, temporary, follow_symlinks=False)
        try:
            os.chmod(temporary, 0o444)  # the tree's record is this inode too
            os.replace(temporary, kept)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)  # left by a rename onto the same inode
