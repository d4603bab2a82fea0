"""One entry for every kind of tree: a run (finished or not) or a models run's root.

``open_tree`` reads a tree without writing into it or taking its lock; ``write_tree_site``
writes its site; ``build_site`` does both (what ``python -m xaytune.view`` and a live
server rebuilding the site on every change call).
"""

from __future__ import annotations

from pathlib import Path

from xaytune.viewer._models import ModelsRun, models_of, open_models_run, write_models_site
from xaytune.viewer._site import PAGE_SIZE, Site, write_site
from xaytune.viewer._tree import RunTree, open_run

__all__ = ["build_site", "open_tree", "write_tree_site"]


def open_tree(root: Path, *, suites: tuple[Path, ...] = ()) -> RunTree | ModelsRun:
    """The tree at ``root``: a models run's root, or a run; ``not-a-run`` otherwise."""
    if root.is_dir() and models_of(root) is not None:
        return open_models_run(root, suites=suites)
    return open_run(root, suites=suites)


def write_tree_site(tree: RunTree | ModelsRun, out: Path, *, page_size: int = PAGE_SIZE) -> Site:
    """Write the site of an opened tree into ``out`` (an empty or new directory)."""
    if isinstance(tree, ModelsRun):
        return write_models_site(tree, out, page_size=page_size)
    return write_site(tree, out, page_size=page_size)


def build_site(
    root: Path, out: Path, *, suites: tuple[Path, ...] = (), page_size: int = PAGE_SIZE
) -> Site:
    """Open the tree at ``root`` (finished, unfinished or being written) and write its
    site into ``out``; never writes into the tree, never takes its lock."""
    return write_tree_site(open_tree(root, suites=suites), out, page_size=page_size)
