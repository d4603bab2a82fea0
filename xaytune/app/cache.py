"""Never pay twice: an evidence cache addressed by what makes a replicate what it is.

A replicate's key is the sha256 of everything its evidence depends on: the suite and
assignment digests (suite, sampling, seed), the fingerprint of every task's spec (the
harness, its parts' code, the task, the model identity the spec pins), the model's
serving identity, the model adapter's code, the durability, and the evidence formats.
Iterating on a challenger against an unchanged baseline finds the baseline's
replicates under the same keys and pays only for the challenger.

Layout under ``cache.dir`` (default ``$XDG_CACHE_HOME/xaytune/evidence``)::

    v1/<key hex>/evidence/      the replicate's evidence store, as its run left it
    v1/<key hex>/intent.json    the intent of the run that made it
    v1/<key hex>/entry.json     key, evidence digest, timing environment, size in bytes

An entry is built in a temporary directory and renamed into place whole, so a
half-written entry is never found; a run that finds one copies it into its own tree,
where it is assembled and verified like any evidence (against the suite and specs of
this run): an entry edited after it was published is refused (a warning) and the
replicate runs. The reused store keeps the intent digest its attempts were recorded
under; ``evidence/reused.json`` holds that intent, and ``python -m xaytune.verify``
checks that it set out to run this very replicate. The cache is bounded
(``cache.max_gb``, oldest entries go first).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.harness.evidence import EVIDENCE_SCHEMA
from xaytune.harness.evidence.store import STORE_SCHEMA, atomic_write
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
]

CACHE_SCHEMA = "xaytune.evidence-cache/v1"
REUSE_FILE = "reused.json"
_ENTRY = "entry.json"
_INTENT = "intent.json"
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
    base URL and the identity its preflight reported, ``xaytune.app.endpoints``) is part
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
    return root / "v1" / key.removeprefix("sha256:")


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


def restore(entry: Path, key: str, store_root: Path) -> CachedReplicate:
    """Put the entry's evidence in place of the (fresh, empty) store at ``store_root``,
    with a record of where it came from: built beside it and renamed into place, so a
    kill leaves the empty store or the whole copy, never part of one.

    Raises ``OSError``, ``ValueError`` or ``KeyError`` when the entry cannot be read
    whole (evicted meanwhile, or edited): the caller then runs the replicate.
    """
    intent_bytes = (entry / _INTENT).read_bytes()
    intent = json.loads(intent_bytes)
    if canonical_bytes(intent) + b"\n" != intent_bytes:
        raise ValueError(f"{entry / _INTENT}: not canonical")
    timing = json.loads((entry / _ENTRY).read_bytes())["timing_environment"]
    building = store_root.with_name(f".{store_root.name}.{os.getpid()}.tmp")
    shutil.rmtree(building, ignore_errors=True)
    shutil.copytree(entry / "evidence", building)
    reused = {"schema": CACHE_SCHEMA, "key": key, "intent": intent, "timing_environment": timing}
    atomic_write(building / REUSE_FILE, canonical_bytes(reused) + b"\n")
    shutil.rmtree(store_root)
    os.rename(building, store_root)
    return CachedReplicate(
        key=key,
        intent=intent,
        intent_digest=sha256_digest(intent_bytes),
        timing_environment=timing,
    )


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
    ``max_bytes``. A failure is a warning: the cache is an optimisation."""
    final = _entry_dir(root, key)
    if final.exists():
        return
    building = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(building, ignore_errors=True)
        shutil.copytree(store_root, building / "evidence")
        (building / _INTENT).write_bytes(intent_bytes)
        size = sum(p.stat().st_size for p in building.rglob("*") if p.is_file())
        entry = {
            "key": key,
            "evidence_digest": evidence_digest,
            "timing_environment": timing_environment,
            "bytes": size,
        }
        (building / _ENTRY).write_bytes(canonical_bytes(entry) + b"\n")
        try:
            os.rename(building, final)
        except OSError:
            if not final.exists():
                raise
            shutil.rmtree(building, ignore_errors=True)  # another run published it first
    except OSError as error:
        shutil.rmtree(building, ignore_errors=True)
        _log.warning("evidence cache: could not store %s (%s)", key, error.strerror or error)
        return
    _evict(root / "v1", max_bytes)


def _evict(entries: Path, max_bytes: int) -> None:
    """Remove the oldest entries until the cache holds at most ``max_bytes``."""
    found = []
    for entry in entries.iterdir():
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
