"""A replicate from the evidence cache: linked into the tree, verified, published.

The verification is the one every replicate's evidence gets (``assemble_evidence``
against this run's suite and specs, under the intent the attempts were recorded
with), and the entry's published statement is compared with the verified evidence
(``publish_evidence``). An entry that fails either is refused with a warning: its
files leave the tree, the store is made fresh again, and the replicate runs.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import XaytuneError
from xaytune.evaluation.harness import PublishedSubject, publish_evidence
from xaytune.experiment.tree import cache
from xaytune.harness.evidence import HarnessRunEvidence, assemble_evidence
from xaytune.harness.evidence.store import STORE_MARKER, STORE_SCHEMA, atomic_write

__all__ = ["reuse_replicate"]

_log = logging.getLogger("xaytune.cache")


def reuse_replicate(
    root: Path, key: str, specs, sampling, assignment, source, store
) -> tuple[cache.CachedReplicate, HarnessRunEvidence, PublishedSubject] | None:
    """The replicate's evidence linked from the cache under ``root``, verified and
    published in ``store`` (its statement compared with the entry's), or None (a
    miss, or an entry that does not verify: it is removed from this tree, never
    served, and the replicate runs)."""
    entry = cache.lookup(root, key)
    if entry is None:
        return None
    try:
        restored = cache.restore(entry, key, store.root, durable=store.durable)
        evidence = assemble_evidence(
            specs, source.suite, sampling, assignment, source, store,
            intent=restored.intent_digest,
        )  # fmt: skip
        subject = publish_evidence(evidence, store)  # an edited statement is refused too
    except (XaytuneError, OSError, ValueError, KeyError) as error:
        _log.warning("evidence cache: entry %s refused (%s); running the replicate", key, error)
        store.root.mkdir(parents=True, exist_ok=True)
        for path in store.root.iterdir():  # the links go; the store's marker stays
            if path.name != STORE_MARKER:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        atomic_write(store.root / STORE_MARKER, canonical_bytes({"schema": STORE_SCHEMA}) + b"\n")
        for position in range(len(specs)):
            store.task_output(position)  # the empty task directories the specs write to
        return None
    _log.info("evidence cache: reused %s for %s", key, store.root)
    return restored, evidence, subject
