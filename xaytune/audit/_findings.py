"""What an audit of an output tree has found so far, shared by every check.

One :class:`Audit` per ``audit_tree`` call: the problems and warnings (one line each,
naming the file), the counts of what verified, and what earlier checks read once for
the later ones (the tree's one walk, each manifest, each suite, each store's verified
evidence, each intent, each published statement as loaded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.experiment.tree.layout import TreeFiles
from xaytune.experiment.tree.manifest import REPORT_FILES
from xaytune.experiment.tree.manifest_view import ManifestView
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.publish import PublishedSubject, load_published

__all__ = ["Audit", "Published", "is_file"]


class Published(NamedTuple):
    """A published subject of a store and its evidence, loaded and verified."""

    subject: PublishedSubject
    evidence: HarnessRunEvidence


@dataclass
class Audit:
    """What an audit has found so far."""

    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: {"stores": 0, "subjects": 0, "reports": 0}
    )
    sources: dict[str, SuiteSource] = field(default_factory=dict)
    # Each store's published evidence, once verified (None: it did not verify).
    stores: dict[Path, dict[str, Published] | None] = field(default_factory=dict)
    candidates: set[Path] = field(default_factory=set)
    # The intent of each run directory (None: missing or unreadable, named once).
    intents: dict[Path, tuple[dict[str, Any], str] | None] = field(default_factory=dict)
    intent_pairs: set[tuple[Path | str, ...]] = field(default_factory=set)
    # Not problems: what the tree records is intact, but the code here differs.
    warnings: list[str] = field(default_factory=list)
    # What the one walk of the tree found (set before any check reads it).
    tree: TreeFiles | None = None
    # Each manifest as read (None: refused, named once).
    manifests: dict[Path, ManifestView | None] = field(default_factory=dict)
    # Each published statement as loaded (load_published's checks passed), by subject:
    # the errors record and verification read one parse of it. A statement refused is
    # not kept, so each reader meets the refusal itself.
    loaded: dict[tuple[str, str, str], HarnessRunEvidence] = field(default_factory=dict)

    @property
    def files(self) -> TreeFiles:
        assert self.tree is not None, "the tree is walked first"
        return self.tree

    def load(self, subject: PublishedSubject) -> HarnessRunEvidence:
        """``load_published(subject)``, once per subject per audit."""
        key = (subject.digest, subject.path, subject.store_root)
        evidence = self.loaded.get(key)
        if evidence is None:
            evidence = self.loaded[key] = load_published(subject)
        return evidence

    def problem(self, path: Path, message: str) -> None:
        """One line naming ``path`` (once: an error's message may name it already)."""
        self.problems.append(message if str(path) in message else f"{path}: {message}")

    def reports_under(self, base: Path) -> list[Path]:
        """The reports under ``base`` a manifest written there covers: what
        :func:`~xaytune.experiment.tree.manifest.report_files` finds, from the tree's
        one walk."""
        return [
            path
            for path in self.files.matching(base, REPORT_FILES)
            if not path.name.startswith(".") and path.is_file()
        ]


def is_file(path: Path) -> bool:
    """Whether ``path`` is a file (False for a path the system refuses to stat: a name
    too long, say, is not a file the writer made)."""
    try:
        return path.is_file()
    except OSError:
        return False
