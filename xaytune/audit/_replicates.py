"""One listed replicate of a manifest, checked against its evidence.

Its evidence store verifies (each published subject loaded and verified once per
audit), publishes exactly the subjects the manifest records, and is the evidence of
the replicate's seed, assignment and candidate; its ``candidate.json`` is the
manifest's candidate; its record's evaluations are of that evidence and its claims
(model, durability, timing environment) are what the evidence and the manifest say.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from xaytune.audit._findings import Audit, Published, is_file
from xaytune.audit._intents import check_intent
from xaytune.audit.evaluations import evaluation_problems
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.parts import part_change
from xaytune.experiment.tree.cache import REUSE_FILE
from xaytune.experiment.tree.files import CANDIDATE_FILE, REPLICATE_FILE
from xaytune.experiment.tree.manifest_view import ManifestView, ReplicateView, inside
from xaytune.harness import Harness
from xaytune.harness.evidence import verify_run_evidence
from xaytune.harness.evidence.journal import journal_problems
from xaytune.harness.evidence.publish import PublishedSubject
from xaytune.harness.evidence.store import STORE_MARKER, HarnessEvidenceStore

__all__ = ["check_replicate"]


def check_replicate(
    manifest: ManifestView,
    replicate: ReplicateView,
    manifest_path: Path,
    source: SuiteSource | None,
    cfg: ExperimentConfig | None,
    audit: Audit,
) -> Path | None:
    """Check one listed replicate's store; its root, when the path is inside the tree."""
    directory = inside(manifest_path.parent, replicate.path)
    if directory is None:
        audit.problem(
            manifest_path, f"bad-manifest: replicate {replicate.path!r} is not inside the tree"
        )
        return None
    store_root = directory / "evidence"
    _check_candidate(manifest, directory.parent, audit)
    if not is_file(store_root / STORE_MARKER):
        audit.problem(store_root, "store-missing: the manifest lists this replicate's evidence")
        return store_root
    if source is None:
        return store_root  # the manifest's suite is refused already
    published = _verified_store(store_root, source, audit)
    if published is None:
        return store_root
    recorded = set(replicate.evidence_digests)
    if set(published) != recorded:
        audit.problem(
            store_root,
            f"evidence-mismatch: published {sorted(published)}, "
            f"{manifest_path} records {sorted(recorded)}",
        )
        return store_root
    record = _check_evaluations(directory / REPLICATE_FILE, replicate, published, audit)
    if record is None:
        return store_root
    _check_claims(manifest, directory / REPLICATE_FILE, record, published, audit)
    if cfg is not None:
        for subject, evidence in published.values():
            problems = evaluation_problems(
                cfg, source, directory, record, subject, evidence, replicate.seed, audit.warnings
            )
            for file, message in problems:
                audit.problem(file, message)
    harness = manifest.harness_of(directory.parent.name)
    check_intent(manifest, manifest_path, directory, replicate, published, audit)
    for digest, (_, evidence) in published.items():
        if (
            evidence.seed != replicate.seed
            or evidence.assignment_digest != replicate.assignment_digest
            or evidence.harness_fingerprint != harness
        ):
            audit.problem(
                store_root,
                f"evidence-mismatch: {digest} is not the evidence of candidate "
                f"{directory.parent.name} seed {replicate.seed} as {manifest_path} records",
            )
    return store_root


def _check_candidate(manifest: ManifestView, directory: Path, audit: Audit) -> None:
    """``candidate.json`` is the manifest's candidate of that name: its label, its
    harness fingerprint, and a harness declaration with that fingerprint (the
    comparison reads labels and declarations from it). Checked once per directory."""
    if directory in audit.candidates:
        return
    audit.candidates.add(directory)
    path = directory / CANDIDATE_FILE
    try:
        candidate = json.loads(path.read_bytes())
        label, name = candidate["label"], candidate["name"]
        fingerprint = candidate["harness_fingerprint"]
        declared = Harness.model_validate(candidate["harness"]).fingerprint
        listed = manifest.candidates[label]
    except (OSError, ValueError, RecursionError, KeyError, TypeError, XaytuneError):
        audit.problem(path, "candidate-mismatch: not a candidate record of the manifest")
        return
    if (
        name != directory.name
        or listed.name != name
        or listed.harness_fingerprint != fingerprint
        or declared != fingerprint
    ):
        audit.problem(
            path,
            f"candidate-mismatch: not candidate {label} of the manifest "
            "(its name, harness fingerprint or harness declaration)",
        )
        return
    for part in Harness.model_validate(candidate["harness"]).parts:
        change = part_change(part)
        if change is not None:
            audit.warnings.append(f"{path}: {change}")


def _check_evaluations(
    path: Path,
    replicate: ReplicateView,
    published: dict[str, Published],
    audit: Audit,
) -> dict[str, Any] | None:
    """The replicate record, if its evaluations are of its published evidence (the
    file's own bytes are checked against the manifest's digest with the reports)."""
    try:
        record = json.loads(path.read_bytes())
        evaluations = record["evaluations"]
        subjects = [(e["subject_digest"], e["seed"], e["assignment_digest"]) for e in evaluations]
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        audit.problem(path, "evaluation-mismatch: not a replicate record")
        return None
    for subject, seed, assignment in subjects:
        if (
            type(subject) is not str
            or subject not in published
            or seed != replicate.seed
            or assignment != replicate.assignment_digest
        ):
            audit.problem(
                path,
                f"evaluation-mismatch: an evaluation of {subject}, not of this replicate's "
                "published evidence",
            )
            return None
    return record


def _check_claims(
    manifest: ManifestView,
    path: Path,
    record: dict[str, Any],
    published: dict[str, Published],
    audit: Audit,
) -> None:
    """What the manifest and the replicate record claim about how the run ran is what
    the evidence and each other say: the model facet is the evidence's model, and the
    manifest's durability and timing environment are the replicate's."""
    try:
        facets = record["facets"]
        model = dict(facets["model"])
        durability, timing = facets["durability"], record["timing_environment"]
    except (KeyError, TypeError, ValueError):
        audit.problem(path, "claim-mismatch: the replicate record states no facets")
        return
    for _, evidence in published.values():
        pinned = evidence.model.model_dump(mode="json")
        parameters = {k: v for k, v in pinned.pop("parameters").items() if k != "seed"}
        if model != {**pinned, "parameters": parameters}:
            audit.problem(path, "claim-mismatch: facets.model is not the evidence's model")
    if manifest.durability is not None and durability != manifest.durability:
        audit.problem(
            path,
            f"claim-mismatch: durability {durability!r}, the manifest says {manifest.durability!r}",
        )
    reused = (path.parent / "evidence" / REUSE_FILE).exists()  # timed where it ran
    if (
        manifest.timing_environment is not None
        and timing != manifest.timing_environment
        and not reused
    ):
        audit.problem(path, "claim-mismatch: timing environment is not the manifest's")


def _verified_store(
    store_root: Path, source: SuiteSource, audit: Audit
) -> dict[str, Published] | None:
    """Every published subject of a store, each loaded and verified (once per audit);
    None, with problems, if any does not."""
    if store_root in audit.stores:
        return audit.stores[store_root]
    audit.stores[store_root] = None
    audit.counts["stores"] += 1
    store = HarnessEvidenceStore(store_root)
    published_dir = os.path.join(store.published_dir, "")
    tree = audit.files
    statements = sorted(
        Path(path)
        for kind in (tree.files, tree.links, tree.others, tree.dirs)
        for path in tree.starting(kind, published_dir)
        if path.endswith(".intoto.json") and os.sep not in path[len(published_dir) :]
    )
    if not statements:
        audit.problem(store_root, "subject-missing: no published evidence subject")
        for error in journal_problems(store_root):  # what can be said of it without one
            audit.problem(store_root, str(error))
        return None
    published: dict[str, Published] = {}
    for statement in statements:
        subject = PublishedSubject(
            digest="sha256:" + statement.name.split(".")[0],
            path=str(statement),
            store_root=str(store_root),
        )
        try:
            evidence = audit.load(subject)
            verify_run_evidence(evidence, source.suite, source, store)
        except XaytuneError as error:
            audit.problem(statement, str(error))
            continue
        except OSError as error:
            audit.problem(statement, f"unreadable: {error.strerror}")
            continue
        published[subject.digest] = Published(subject, evidence)
        audit.counts["subjects"] += 1
    if len(published) != len(statements):
        return None
    audit.stores[store_root] = published
    return published
