"""The run's report pages inside the viewer's site, each linking to the viewer.

A report page in the tree (``comparison/report.html``, ...) is rendered from the
released report alone, byte for byte what ``python -m xaytune.verify`` renders again:
it cannot name the directory its run ends up in, so it gives the exact command that
builds the viewer. The site holds a copy of each page, under ``reports/`` with the
tree's relative path (``reports/comparison/report.html``,
``reports/models/<m>/comparison/report.html``), and there a relative link to the
viewer's index (a model's page: that model's site, ``models/<m>/index.html``) is added
at the top of the body.

Only a page the tree's complete manifest records, with the bytes it records, is
copied (a run still writing its reports has none yet); the copy is those bytes and the
link, nothing else changed.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

from xaytune.core.canonical import sha256_digest

__all__ = ["REPORTS_DIR", "write_report_pages"]

REPORTS_DIR = "reports"
MANIFEST = "manifest.json"
_PAGE = re.compile(r"comparison(?:/[^/]+)?/report\.html")
_BODY = re.compile(rb"<body[^>]*>", re.IGNORECASE)


def _plain(relative: str) -> bool:
    """A relative path that stays where it is put (no ``..``, no empty part)."""
    return all(part not in ("", ".", "..") for part in relative.split("/"))


def _recorded_pages(root: Path) -> list[tuple[str, str]]:
    """(path relative to ``root``, recorded digest) of every report page recorded by a
    complete manifest: the root's, and each model's in a models run."""
    pages = []
    prefixes = [""]
    try:
        top = json.loads((root / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return []
    if isinstance(top, dict) and isinstance(top.get("models"), dict):
        prefixes += [f"models/{model}/" for model in sorted(top["models"])]
    for prefix in prefixes:
        try:
            manifest = top if not prefix else json.loads((root / prefix / MANIFEST).read_bytes())
        except (OSError, ValueError):
            continue
        if not isinstance(manifest, dict) or manifest.get("complete") is not True:
            continue
        reports = manifest.get("reports")
        for relative, digest in sorted(reports.items() if isinstance(reports, dict) else ()):
            path = prefix + relative
            if _PAGE.fullmatch(relative) and _plain(path) and isinstance(digest, str):
                pages.append((path, digest))
    return pages


def write_report_pages(root: Path, out: Path) -> tuple[Path, ...]:
    """Copy the tree's recorded report pages into ``out/reports/``, each with a link to
    ``out/index.html``; the pages written. A page whose bytes are not the recorded
    ones is not copied (``python -m xaytune.verify`` names it)."""
    written = []
    for relative, digest in _recorded_pages(root):
        try:
            data = (root / relative).read_bytes()
        except OSError:
            continue
        if sha256_digest(data) != digest:
            continue
        up = "../" * (relative.count("/") + 1)  # from reports/<relative> to the site root
        index = "index.html"
        if relative.startswith("models/"):  # a model's page: its own site when it has one
            model = "/".join(relative.split("/")[:2])
            index = f"{model}/index.html" if (out / model / "index.html").is_file() else index
        link = (
            '<p class="viewer-link" id="viewer-link">The run\'s report page (a copy of '
            f"<code>{escape(relative)}</code>, as its manifest records it). "
            f'<a href="{up}{escape(index)}">Open the per-task viewer</a>: every task\'s outcome '
            "per seed, and the candidates' transcripts side by side.</p>"
        ).encode()
        found = _BODY.search(data)
        at = found.end() if found else 0
        target = out / REPORTS_DIR / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data[:at] + link + data[at:])
        written.append(target)
    return tuple(written)
