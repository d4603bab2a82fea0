"""A models run as one site: a cross-model summary page, and each model's run as a site
of its own under ``models/<label>/`` with a model switcher on every page.

A models run's root (``python -m xaytune +experiment=quickstart_models``) holds one run
per model in ``models/<label>/`` (each with its manifest, replicates and comparison)
and the summary across them in ``comparison/models.json``, whose digest the root's
manifest records. The summary page shows, per challenger and objective, each model's
verdict as that file states it (each a link to the model's ranked tasks behind it),
and what they say together (:func:`xaytune.experiment.models_run.row_words`); it never
compares models with each other. A summary that is not the file the manifest recorded
is shown as a problem, without its verdicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from xaytune.core import limits
from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import XaytuneError
from xaytune.experiment.models_run import MODELS_DIR, row_words
from xaytune.experiment.tree.manifest import MANIFEST
from xaytune.experiment.tree.manifest_view import inside
from xaytune.report.jinja import render
from xaytune.viewer._site import PAGE_SIZE, ModelsNav, Site, write_site
from xaytune.viewer._tree import RunTree, open_run, tree_writer_pid

__all__ = ["ModelsRun", "models_of", "open_models_run", "write_models_site"]

SUMMARY = "comparison/models.json"


@dataclass(frozen=True, slots=True)
class ModelsRun:
    """Every model's run (label order as the root's manifest lists them), the summary
    across them (None with its ``problem``, or while the run is unfinished)."""

    root: Path
    runs: dict[str, RunTree]
    summary: dict[str, Any] | None
    problem: str | None
    complete: bool
    writer: str | None


def _root_manifest(root: Path) -> dict[str, Any] | None:
    path = root / MANIFEST
    try:
        size = limits.MAX_JSON_FILE_BYTES
        raw = limits.read_bounded(path, size, size_name="MAX_JSON_FILE_BYTES")
        data = json.loads(raw)
    except (OSError, ValueError, limits.LimitError):
        return None  # open_run names what is wrong with it
    return data if isinstance(data, dict) else None


def models_of(root: Path) -> dict[str, Path] | None:
    """Each model's run directory when ``root`` is a models run's root (its manifest
    names ``models``), else None; ``bad-manifest`` for a path outside the root."""
    manifest = _root_manifest(root)
    if manifest is None or not isinstance(manifest.get("models"), dict):
        return None
    found = {}
    for label, where in manifest["models"].items():
        directory = inside(root, where) if isinstance(where, str) else None
        if directory is None or directory.parent != root / MODELS_DIR:
            raise XaytuneError(
                "bad-manifest",
                f"{root / MANIFEST}: models.{label}: {where!r} is not models/<label>",
            )
        found[str(label)] = directory
    return found


def _summary(root: Path, manifest: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    if manifest.get("complete") is not True:
        return None, None
    recorded = (manifest.get("reports") or {}).get(SUMMARY)
    try:
        data = (root / SUMMARY).read_bytes()
    except OSError as error:
        return None, f"{SUMMARY}: unreadable ({error.strerror})"
    if recorded is None or sha256_digest(data) != recorded:
        return None, f"{SUMMARY}: digest-mismatch: not the file the manifest recorded"
    try:
        return json.loads(data), None
    except ValueError:
        return None, f"{SUMMARY}: not JSON"


def open_models_run(root: Path, *, suites: tuple[Path, ...] = ()) -> ModelsRun:
    """The models run at ``root`` (a model whose run has not started is left out)."""
    labels = models_of(root)
    if labels is None:
        raise XaytuneError("not-a-run", f"{root}: not a models run's root")
    manifest = _root_manifest(root) or {}
    writer = tree_writer_pid(root)
    runs = {}
    for label, directory in labels.items():
        if not (directory / MANIFEST).is_file():
            continue  # not started yet
        tree = open_run(directory, suites=suites)
        if writer is not None and tree.writer is None:
            tree = _with_writer(tree, writer)  # the root's lock covers its models
        runs[label] = tree
    summary, problem = _summary(root, manifest)
    return ModelsRun(root, runs, summary, problem, manifest.get("complete") is True, writer)


def _with_writer(tree: RunTree, writer: str) -> RunTree:
    return replace(tree, writer=writer)


def _rows(run: ModelsRun) -> list[dict[str, Any]]:
    if run.summary is None:
        return []
    models = run.summary["models"]
    baseline = run.summary["baseline"]["name"]
    rows = []
    for row in run.summary["rows"]:
        rows.append(
            {
                **row,
                "slug": f"{row['challenger']}-{row['metric']}",
                "words": row_words(row, baseline, len(models)),
            }
        )
    return rows


def write_models_site(run: ModelsRun, out: Path, *, page_size: int = PAGE_SIZE) -> Site:
    """Write the summary page (``index.html``) and each model's site under
    ``models/<label>/`` into ``out``."""
    labels = tuple(run.runs)
    site = Site(out)
    for label, tree in run.runs.items():
        sub = write_site(
            tree,
            out / MODELS_DIR / label,
            page_size=page_size,
            models=ModelsNav(labels, label),
        )
        site.models[label] = sub
        site.tasks = max(site.tasks, sub.tasks)
    first = next(iter(run.runs.values()), None)
    html = render(
        "viewer_models.html.j2",
        run=run.root.name,
        labels=labels,
        trees=run.runs,
        first=first,
        summary=run.summary,
        problem=run.problem,
        rows=_rows(run),
        complete=run.complete,
        writer=run.writer,
    )
    (out / "index.html").write_text(html, encoding="utf-8")
    return site
