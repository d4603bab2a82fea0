"""Never pay twice: an evidence cache addressed by what makes a replicate what it is.

A replicate's key is the sha256 of everything its evidence depends on: the suite and
assignment digests (suite, sampling, seed), the fingerprint of every task's spec (the
harness, its parts' code, the task, the model identity the spec pins), the model's
serving identity, the model adapter's code, the durability, and the evidence formats.
Iterating on a challenger against an unchanged baseline finds the baseline's
replicates under the same keys and pays only for the challenger.

Layout under ``cache.dir`` (default ``$XDG_CACHE_HOME/xaytune/evidence``)::

    v2/<key hex>/files/<quoted path>  the replicate's evidence store, as its run left it,
                                      one flat directory (``tasks%2F000003%2F001.jsonl``)
    v2/<key hex>/intent.json          the intent of the run that made it
    v2/<key hex>/entry.json           key, evidence digest, timing environment, size in bytes
    v2/<key hex>/evaluations/, shared.<sha256 hex>  cached evaluations and replicate
                                      records (``cache_evaluations``, ``cache_shared``)

Reused evidence is shared, not copied: every file of a store is hard-linked between
the tree and the cache (a copy where linking fails: another filesystem, a link
limit), except the seal journal, which a store appends to and is always copied. The
linked files are the ones the store never writes again (sealed attempt files, the
published statement, the marker, all replaced by rename if ever rewritten), and they
are made read-only (mode 0444), so an edit in place in either the tree or the cache
is refused to any user but root; an edit that gets through anyway is caught by the
verification below, wherever the file is used. The entry is flat because creating a
directory costs ten times a link here (0.03-0.4 ms of kernel time on the ext4 this
was measured on). A reuse makes no fresh store first: the replicate's specs are
compiled without touching the disk, and the store is built whole from the entry
(its task directories, links, the journal's copy, ``reused.json``), then renamed
into place (:func:`restore`).

An entry is built in a temporary directory and renamed into place whole, so a
half-written entry is never found; a run that finds one links it into its own tree,
where it is assembled and verified like any evidence (against the suite and specs of
this run): an entry edited after it was published is refused (a warning) and the
replicate runs. The reused store keeps the intent digest its attempts were recorded
under; ``evidence/reused.json`` holds that intent, and ``python -m xaytune.verify``
checks that it set out to run this very replicate. The cache is bounded
(``cache.max_gb``, oldest entries go first); entries of the first layout (``v1/``,
copied per task directory) are removed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.harness.evidence import EVIDENCE_SCHEMA
from xaytune.harness.evidence.journal import JOURNAL_NAME
from xaytune.harness.evidence.store import STORE_MARKER, STORE_SCHEMA
from xaytune.harness.spec import AgentExecutionSpec

if TYPE_CHECKING:  # the runner is imported by the runs that need it, not by a lookup
    from xaytune.harness.runner import AttemptResult

__all__ = [
    "CACHE_SCHEMA",
    "REUSE_FILE",
    "CachedReplicate",
    "cache_root",
    "cacheable",
    "lookup",
    "publish",
    "remove_restores",
    "replicate_key",
    "restore",
    "reused_from",
    "share_file",
]

CACHE_SCHEMA = "xaytune.evidence-cache/v1"
REUSE_FILE = "reused.json"
_ENTRY = "entry.json"
_INTENT = "intent.json"
_FILES = "files"
_LAYOUT = "v2"  # v1 copied the store's directory tree into each entry
# What an entry may hold: a store's top-level names (anything else in a store, a
# temporary file a kill left, is not evidence and is not stored).
_STORE_NAMES = frozenset({STORE_MARKER, JOURNAL_NAME, "tasks", "published"})
# A link that cannot be made here is a copy: another filesystem, the link limit, or a
# filesystem without hard links.
_COPY_INSTEAD = frozenset(
    {errno.EXDEV, errno.EMLINK, errno.EPERM, errno.EACCES, errno.ENOTSUP, errno.EOPNOTSUPP}
)
# A store's marker as this xaytune writes it: an entry's must be this to be linked.
_MARKER_BYTES = canonical_bytes({"schema": STORE_SCHEMA}) + b"\n"
# Above this many files written new by a restore (copies from a cache on another
# filesystem), one system-wide sync makes them durable instead of an fsync each.
_FSYNC_EACH = 4
_log = logging.getLogger("xaytune.cache")


def cache_root(directory: str | None) -> Path:
    """``directory``, or ``$XDG_CACHE_HOME/xaytune/evidence`` (``~/.cache`` without it)."""
    if directory is not None:
        return Path(directory).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "xaytune" / "evidence"


def replicate_key(
    *,
    suite_digest: str,
    assignment_digest: str,
    specs: Sequence[AgentExecutionSpec],
    model: dict[str, Any],
    seed: int,
    durability: str,
    model_adapter: dict[str, Any] | None,
    endpoint: dict[str, Any] | None = None,
) -> str:
    """The content address of a replicate's evidence. ``endpoint`` (an HTTP model's
    base URL and the identity its preflight reported, ``xaytune.experiment.preflight``) is part
    of the key when given; models without an endpoint keep the keys they had."""
    extra = {} if endpoint is None else {"endpoint": endpoint}
    return sha256_digest(
        canonical_bytes(
            {
                **extra,
                "schema": CACHE_SCHEMA,
                "formats": [STORE_SCHEMA, EVIDENCE_SCHEMA],
                "suite_digest": suite_digest,
                "assignment_digest": assignment_digest,
                "specs": sha256_digest("\n".join(s.fingerprint for s in specs).encode()),
                "model": model,
                "seed": seed,
                "durability": durability,
                "model_adapter": model_adapter,
            }
        )
    )


def cacheable(attempts: Iterable[AttemptResult]) -> bool:
    """Whether a replicate whose run made ``attempts`` may be stored: only when every
    attempt is complete (none partial, so no ``model-unavailable``), none ended
    ``model-error`` and no model call of any attempt raised. An endpoint that erred
    says something about that endpoint at that moment, not about the harness: reusing
    such evidence would replay the error into every later run with the same key."""
    return all(
        attempt.outcome is not None
        and attempt.outcome.terminal != "model-error"
        and attempt.spend.model_errors == 0
        for attempt in attempts
    )


def _entry_dir(root: Path, key: str) -> Path:
    return root / _LAYOUT / key.removeprefix("sha256:")


@dataclass(frozen=True)
class CachedReplicate:
    """A cache entry copied into a tree: its key, the intent it was run under, and
    the timing environment it was run in."""

    key: str
    intent: dict[str, Any]
    intent_digest: str
    timing_environment: str


def reused_from(store_root: Path) -> CachedReplicate | None:
    """What ``<store>/reused.json`` records (None: the replicate was run here)."""
    try:
        record = json.loads((store_root / REUSE_FILE).read_bytes())
    except FileNotFoundError:
        return None
    intent = record["intent"]
    return CachedReplicate(
        key=record["key"],
        intent=intent,
        intent_digest=sha256_digest(canonical_bytes(intent) + b"\n"),
        timing_environment=record["timing_environment"],
    )


def remove_restores(replicate_dir: Path) -> None:
    """Remove the copies from the cache a kill left half-made in ``replicate_dir``."""
    for path in replicate_dir.glob(".evidence.*.tmp"):
        shutil.rmtree(path, ignore_errors=True)


def lookup(root: Path, key: str) -> Path | None:
    """The entry stored under ``key``, or None."""
    entry = _entry_dir(root, key)
    return entry if (entry / _ENTRY).is_file() else None


def share_file(source: str, target: str) -> bool:
    """Hard-link ``source`` (never a symlink followed) as ``target``; copy it where a
    link cannot be made. True when linked. ``FileNotFoundError`` and
    ``FileExistsError`` are raised as they are."""
    try:
        os.link(source, target, follow_symlinks=False)
        return True
    except OSError as error:
        if error.errno not in _COPY_INSTEAD:
            raise
    shutil.copy2(source, target, follow_symlinks=False)
    return False


def _relative(name: str) -> str:
    """The store path a flat entry file name stands for; ``ValueError`` for a name
    that would lead outside the store or to something a store does not hold."""
    relative = unquote(name)
    parts = relative.split("/")
    if parts[0] not in _STORE_NAMES or any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise ValueError(f"{name}: not a file of an evidence store")
    return relative


def _store_files(store_root: Path) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(path relative to the store, entry) of every file the cache keeps; a symlink or
    other non-regular file is refused (``ValueError``): it is not what a run writes."""
    pending = [("", os.fspath(store_root))]
    while pending:
        prefix, directory = pending.pop()
        with os.scandir(directory) as found:
            for item in found:
                relative = prefix + item.name
                if not prefix and item.name not in _STORE_NAMES:
                    continue
                if item.is_dir(follow_symlinks=False):
                    pending.append((relative + "/", item.path))
                elif item.is_file(follow_symlinks=False):
                    yield relative, item
                else:
                    raise ValueError(f"{item.path}: not a regular file")


def restore(entry: Path, key: str, store_root: Path, *, durable: bool = True) -> CachedReplicate:
    """Put the entry's evidence in place of the (fresh) store at ``store_root``, with a
    record of where it came from. The store is built whole beside it (a store already
    there, fresh, is moved aside and kept), filled with links to the entry's files,
    and renamed into place, so a kill leaves no store or the whole one, never part of
    one (``remove_restores`` clears the rest).

    Durability, one barrier before the rename (``durable``): what the store holds new
    (the journal's copy, ``reused.json``) is fsynced; the linked files (the marker
    included) are the entry's inodes, whose bytes the run that made them wrote durably
    (the key covers the durability), and a link is metadata, ordered before the
    rename by the filesystem's journal as every link of a reuse always was.

    Raises ``OSError``, ``ValueError`` or ``KeyError`` when the entry cannot be read
    whole (evicted meanwhile, or edited): the store is then gone, and the caller
    makes it again and runs the replicate.
    """
    intent_bytes = (entry / _INTENT).read_bytes()
    intent = json.loads(intent_bytes)
    if canonical_bytes(intent) + b"\n" != intent_bytes:
        raise ValueError(f"{entry / _INTENT}: not canonical")
    timing = json.loads((entry / _ENTRY).read_bytes())["timing_environment"]
    building = store_root.with_name(f".{store_root.name}.{os.getpid()}.tmp")
    shutil.rmtree(building, ignore_errors=True)
    try:
        os.rename(store_root, building)  # a fresh store a resume found: kept as it is
    except FileNotFoundError:
        os.mkdir(building)
    try:
        new = _fill(entry / _FILES, building)
        reused = {"schema": CACHE_SCHEMA, "key": key, "intent": intent}
        reused["timing_environment"] = timing
        record = canonical_bytes(reused) + b"\n"
        new.append(_write_new(os.path.join(building, REUSE_FILE), record))
        if durable:
            _durable(new)
        os.rename(building, store_root)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return CachedReplicate(
        key=key,
        intent=intent,
        intent_digest=sha256_digest(intent_bytes),
        timing_environment=timing,
    )


def _fill(files: Path, store: Path) -> list[str]:
    """Link every file of a flat entry into ``store`` (the journal copied; the marker
    linked unless the store holds one, which must be the same), making the
    directories they go in first. The paths of the files written new (copies)."""
    source_dir = os.fspath(files)
    target_dir = os.fspath(store)
    found = [(name, _relative(name)) for name in os.listdir(source_dir)]
    directories = set()
    for _, relative in found:
        parts = relative.split("/")[:-1]
        directories.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    for directory in sorted(directories):  # a parent sorts before its children
        with contextlib.suppress(FileExistsError):
            os.mkdir(os.path.join(target_dir, directory))
    new = []
    for name, relative in found:
        source = os.path.join(source_dir, name)
        target = os.path.join(target_dir, relative)
        if relative == STORE_MARKER:
            if _read(source) != _MARKER_BYTES:
                raise ValueError(f"{source}: another store layout")
            if os.path.lexists(target):
                if _read(target) != _MARKER_BYTES:
                    raise ValueError(f"{target}: another store layout")
                continue
        if relative == JOURNAL_NAME:  # appended to by a store: never shared
            new.append(_write_new(target, _read(source)))
            continue
        if not share_file(source, target):
            new.append(target)  # a copy (another filesystem): its bytes are new here
    return new


def _read(path: str) -> bytes:
    """A regular file's bytes (a symlink is refused: ``OSError``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with open(fd, "rb") as file:
        return file.read()


def _write_new(path: str, data: bytes) -> str:
    """Create ``path`` (never there before) holding ``data``; its path."""
    with open(path, "xb") as file:
        file.write(data)
    return path


def _durable(paths: list[str]) -> None:
    """The bytes of ``paths`` on disk: an fsync each, or one sync for many."""
    if len(paths) > _FSYNC_EACH:
        os.sync()
        return
    for path in paths:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def publish(
    root: Path,
    key: str,
    *,
    store_root: Path,
    intent_bytes: bytes,
    evidence_digest: str,
    timing_environment: str,
    max_bytes: int,
) -> None:
    """Store a finished replicate's evidence under ``key`` (whole or not at all; an
    entry another run published first is kept), then evict the oldest entries beyond
    ``max_bytes``. The store's files are linked into the entry and made read-only
    (the journal is copied). A failure is a warning: the cache is an optimisation."""
    final = _entry_dir(root, key)
    if final.exists():
        return
    building = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(building, ignore_errors=True)
        files = building / _FILES
        files.mkdir(parents=True)
        size = 0
        for relative, item in _store_files(store_root):
            target = os.path.join(files, quote(relative, safe=""))
            if relative == JOURNAL_NAME:  # appended to by a store: never shared
                shutil.copyfile(item.path, target, follow_symlinks=False)
            else:
                share_file(item.path, target)
            # Linked: the tree's file is this inode too, and neither is written again.
            os.chmod(target, 0o444)
            size += item.stat(follow_symlinks=False).st_size
        (building / _INTENT).write_bytes(intent_bytes)
        entry = {
            "key": key,
            "evidence_digest": evidence_digest,
            "timing_environment": timing_environment,
            "bytes": size + len(intent_bytes),
        }
        (building / _ENTRY).write_bytes(canonical_bytes(entry) + b"\n")
        try:
            os.rename(building, final)
        except OSError:
            if not final.exists():
                raise
            shutil.rmtree(building, ignore_errors=True)  # another run published it first
    except (OSError, ValueError) as error:
        shutil.rmtree(building, ignore_errors=True)
        reason = getattr(error, "strerror", None) or error
        _log.warning("evidence cache: could not store %s (%s)", key, reason)
        return
    _evict(root, max_bytes)


def _evict(root: Path, max_bytes: int) -> None:
    """Remove the oldest entries until the cache holds at most ``max_bytes``, and
    every entry of the first layout (never read again)."""
    shutil.rmtree(root / "v1", ignore_errors=True)
    found = []
    for entry in (root / _LAYOUT).iterdir():
        try:
            record = json.loads((entry / _ENTRY).read_bytes())
            found.append(((entry / _ENTRY).stat().st_mtime, entry.name, entry, record["bytes"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being built, or not an entry
    total = sum(size for *_, size in found)
    for _, _, entry, size in sorted(found):
        if total <= max_bytes:
            break
        shutil.rmtree(entry, ignore_errors=True)
        total -= size
