"""A replicate is one its run set out to make (``intent.json``).

The manifest's config and versions are the intent's, the replicate's candidate and
seed are among the intent's, and its evidence was run under that intent: or under an
earlier intent of the same tree (extended with seeds), or, reused from the evidence
cache, under another run's intent that meant the same suite, candidate, seed and
model adapter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xaytune.audit._findings import Audit, Published
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import XaytuneError
from xaytune.experiment.tree.cache import REUSE_FILE
from xaytune.experiment.tree.intent import (
    INTENT_FILE,
    config_changes,
    previous_intents,
    read_intent,
)
from xaytune.experiment.tree.manifest import what_is_run
from xaytune.experiment.tree.manifest_view import ManifestView, ReplicateView

__all__ = ["check_intent"]


def _intent_for(directory: Path, root: Path, audit: Audit) -> tuple[Path, Any]:
    """The intent of the run a replicate directory belongs to: the nearest
    ``intent.json`` above it, up to the manifest's directory ``root``."""
    for base in (directory, *directory.parents):
        if (base / INTENT_FILE).exists() or base == root:
            break
    if base not in audit.intents:
        try:
            audit.intents[base] = read_intent(base)
        except XaytuneError as error:
            audit.problem(base / INTENT_FILE, str(error))
            audit.intents[base] = None
    return base, audit.intents[base]


def check_intent(
    manifest: ManifestView,
    manifest_path: Path,
    directory: Path,
    replicate: ReplicateView,
    published: dict[str, Published],
    audit: Audit,
) -> None:
    """The replicate is one the run set out to make, under the config the manifest
    states: its evidence carries the run's intent digest (every attempt record does,
    checked by verification), its candidate and seed are the intent's, and the
    manifest's config is the intent's."""
    base, found = _intent_for(directory, manifest_path.parent, audit)
    if found is None:
        return
    intent, digest = found
    where = base / INTENT_FILE
    if intent.get("config") != what_is_run(manifest.config):
        key = (manifest_path, where)
        if key not in audit.intent_pairs:
            audit.intent_pairs.add(key)
            audit.problem(
                manifest_path,
                f"intent-mismatch: the manifest's config is not the one {where} records",
            )
    recorded = intent.get("versions")  # trees older than the versions claim carry none
    if recorded is not None and manifest.versions != recorded:
        key = (manifest_path, where, "versions")
        if key not in audit.intent_pairs:
            audit.intent_pairs.add(key)
            audit.problem(
                manifest_path,
                f"claim-mismatch: versions ({config_changes(recorded, manifest.versions)}) "
                f"are not the ones {where} records",
            )
    label = directory.parent.name
    candidates = intent.get("candidates")
    fingerprint = manifest.harness_of(label)
    if (
        not isinstance(candidates, dict)
        or fingerprint not in candidates.values()
        or replicate.seed not in (intent.get("seeds") or ())
    ):
        audit.problem(
            directory,
            f"intent-mismatch: candidate {label} seed {replicate.seed} is not one {where} "
            "set out to run",
        )
    earlier = previous_intents(intent)
    for subject, evidence in published.values():
        if evidence.intent == digest:
            continue
        before = earlier.get(evidence.intent)
        if before is not None:
            # A tree extended with seeds: this replicate ran under the intent before.
            problem = _not_this_replicate(before, intent, fingerprint, replicate.seed)
            if problem is None:
                continue
            audit.problem(directory, f"intent-mismatch: evidence of an earlier intent {problem}")
            continue
        origin = _reused_intent(directory / "evidence" / REUSE_FILE)
        if origin is not None and origin[1] == evidence.intent:
            problem = _not_this_replicate(origin[0], intent, fingerprint, replicate.seed)
            if problem is None:
                continue  # reused from the cache: run under another intent, to this end
            audit.problem(
                directory / "evidence" / REUSE_FILE, f"intent-mismatch: reused evidence {problem}"
            )
            continue
        audit.problem(
            Path(subject.path),
            f"intent-mismatch: the evidence was run under intent {evidence.intent}, "
            f"not {where} ({digest})",
        )


def _reused_intent(path: Path) -> tuple[dict[str, Any], str] | None:
    """The intent a cache entry's evidence was run under, and its digest (None: the
    replicate was run here, or the record is unreadable)."""
    try:
        intent = json.loads(path.read_bytes())["intent"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return intent, sha256_digest(canonical_bytes(intent) + b"\n")


def _not_this_replicate(
    origin: dict[str, Any], intent: dict[str, Any], fingerprint: str | None, seed: int
) -> str | None:
    """Why the origin intent did not set out to run this replicate of ``intent``.

    What the evidence itself settles is checked with it, as for any replicate: the
    harness and its specs, the assignment (suite, sampling, seed) and the model it ran
    on. Here: that the run which recorded it meant this suite, candidate and seed, with
    the model adapter code of this run."""
    if not isinstance(origin, dict) or origin.get("suite_digest") != intent.get("suite_digest"):
        return "was run on another suite"
    candidates = origin.get("candidates")
    if not isinstance(candidates, dict) or fingerprint not in candidates.values():
        return "was run for another candidate"
    if seed not in (origin.get("seeds") or ()):
        return f"was not run for seed {seed}"
    if (origin.get("parts") or {}).get("model_adapter") != (intent.get("parts") or {}).get(
        "model_adapter"
    ):
        return "was run with another model adapter"
    return None
