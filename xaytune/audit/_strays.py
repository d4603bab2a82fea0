"""What no manifest accounts for: a symbolic link anywhere in the tree, and any file
that is not a run's own file, Hydra's, a listed report or a file of a listed store.
"""

from __future__ import annotations

import os
from pathlib import Path

from xaytune.audit._findings import Audit
from xaytune.experiment.tree.cache import REUSE_FILE
from xaytune.experiment.tree.intent import INTENT_FILE
from xaytune.experiment.tree.layout import LOCK_FILE
from xaytune.experiment.tree.manifest import MANIFEST
from xaytune.harness.evidence.journal import JOURNAL_NAME
from xaytune.harness.evidence.store import STORE_MARKER

__all__ = ["check_no_links", "check_strays"]


def check_no_links(audit: Audit) -> None:
    """Each symbolic link of the tree, named (a writer never makes one; a link could show
    files from elsewhere)."""
    for path in sorted(map(Path, audit.files.links)):
        audit.problem(path, "symlink: an output tree holds no links")


def check_strays(root: Path, manifests: list[Path], listed: set[Path], audit: Audit) -> None:
    """Every file of the tree is one a manifest accounts for: its own files, Hydra's,
    its reports, and the files of the stores it lists. Anything else (a temporary
    file, a note) is named."""
    accounted: set[str] = set()
    for path in manifests:
        base = path.parent
        accounted.update(str(base / name) for name in _RUN_FILES)
        # (an unlisted report is report-unlisted already)
        accounted.update(map(str, audit.reports_under(base)))
        manifest = audit.manifests.get(path)
        if manifest is not None:  # a manifest refused is named already
            accounted.update(str(base / name) for name in manifest.reports)
    tree = audit.files
    for store in listed:
        start = len(str(store)) + 1
        for kind in (tree.files, tree.links):
            accounted.update(p for p in tree.under(kind, store) if _store_file(p[start:]))
    strays = [Path(p) for kind in (tree.files, tree.links) for p in kind if p not in accounted]
    for path in sorted(strays):
        audit.problem(path, "stray-file: no manifest accounts for this file")


# Files of a run directory beside its reports and stores.
_RUN_FILES = (
    MANIFEST,
    INTENT_FILE,
    LOCK_FILE,
    "main.log",
    "multirun.yaml",
    "signature.dsse.json",
    ".hydra/config.yaml",
    ".hydra/hydra.yaml",
    ".hydra/overrides.yaml",
)


def _store_file(relative: str) -> bool:
    """Whether ``relative`` (a path inside an evidence store) is a file a store writes."""
    parts = tuple(relative.split(os.sep))
    if parts in ((STORE_MARKER,), (JOURNAL_NAME,), (REUSE_FILE,)):
        return True
    if len(parts) == 3 and parts[0] == "tasks" and parts[1].isdigit():
        return parts[2].endswith(".jsonl") and parts[2][:-6].isdigit()
    return len(parts) == 2 and parts[0] == "published" and parts[1].endswith(".intoto.json")
