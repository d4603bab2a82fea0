"""Re-verifying an output tree from its files alone (``python -m xaytune.verify DIR``).

Checks every evidence store (each published subject loads untampered and its
evidence verifies against the suite and the store), that every store has a
published subject, and that every report digest in each manifest matches its file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from xaytune.app.manifest import MANIFEST
from xaytune.core.canonical import sha256_digest
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.harness.evidence import verify_run_evidence
from xaytune.harness.publish import PublishedSubject, load_published
from xaytune.harness.store import STORE_MARKER, HarnessEvidenceStore
from xaytune.suites import builtin_suite_path

__all__ = ["audit_tree"]


def _source(manifest: dict) -> SuiteSource:
    suite = manifest["suite"]
    path = builtin_suite_path(suite["builtin"]) if suite.get("builtin") else Path(suite["path"])
    source = SuiteSource(path)
    if source.digest != suite["digest"]:
        raise XaytuneError(
            "suite-mismatch", f"suite at {path} is not the manifest's {suite['digest']}"
        )
    return source


def audit_tree(root: Path) -> tuple[list[str], dict[str, int]]:
    """Problems (one line each) and counts of what verified."""
    problems: list[str] = []
    counts = {"stores": 0, "subjects": 0, "reports": 0}
    manifests = sorted(root.rglob(MANIFEST))
    if not manifests:
        return [f"{root}: no {MANIFEST}; not an xaytune output tree"], counts
    sources: dict[str, SuiteSource] = {}
    for path in manifests:
        manifest = json.loads(path.read_bytes())
        try:
            sources.setdefault(manifest["suite"]["digest"], _source(manifest))
        except XaytuneError as error:
            problems.append(f"{path}: {error}")
        for name, digest in manifest.get("reports", {}).items():
            report = path.parent / name
            if not report.exists():
                problems.append(f"{report}: listed in {path.name} but missing")
            elif sha256_digest(report.read_bytes()) != digest:
                problems.append(f"{report}: digest-mismatch: not the file the manifest recorded")
            else:
                counts["reports"] += 1
    for store_root in _stores(root):
        counts["stores"] += 1
        store = HarnessEvidenceStore(store_root)
        published = sorted(store.published_dir.glob("*.intoto.json"))
        if not published:
            problems.append(f"{store_root}: no published evidence subject")
        for statement in published:
            subject = PublishedSubject(
                digest="sha256:" + statement.name.split(".")[0],
                path=str(statement),
                store_root=str(store_root),
            )
            try:
                evidence = load_published(subject)
                source = sources.get(evidence.suite_digest)
                if source is None:
                    problems.append(f"{statement}: suite {evidence.suite_digest} is in no manifest")
                    continue
                verify_run_evidence(evidence, source.suite, source, store)
                counts["subjects"] += 1
            except XaytuneError as error:
                problems.append(f"{statement}: {error}")
    return problems, counts


def _stores(root: Path) -> Iterator[Path]:
    for marker in sorted(root.rglob(STORE_MARKER)):
        yield marker.parent
