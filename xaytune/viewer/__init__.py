"""The per-task viewer: a static site over a run tree's restricted files.

``open_tree`` reads a tree — a run, finished, unfinished or being written, or a models
run's root — checking what can be checked cheaply (suite digest, recomputed
assignments, the replicate records' and published comparisons' digests);
``write_tree_site`` writes the site (every attempt verified as its task page is
written); ``build_site`` does both. ``python -m xaytune.view`` is the command
(:mod:`xaytune.view`); ``serve_live`` follows a tree live (``view --serve``,
:mod:`xaytune.viewer._serve`, imported on first use: it needs aiohttp).
"""

from typing import Any

from xaytune.viewer._build import build_site, open_tree, write_tree_site
from xaytune.viewer._models import ModelsRun, open_models_run
from xaytune.viewer._report_pages import write_report_pages
from xaytune.viewer._site import FILTERS, PAGE_SIZE, Site, write_site
from xaytune.viewer._tree import RunTree, open_run, tree_writer_pid

__all__ = [
    "FILTERS",
    "PAGE_SIZE",
    "ModelsRun",
    "RunTree",
    "Site",
    "build_site",
    "open_models_run",
    "open_run",
    "open_tree",
    "serve_live",
    "tree_writer_pid",
    "write_report_pages",
    "write_site",
    "write_tree_site",
]


def __getattr__(name: str) -> Any:
    if name == "serve_live":  # the live server (aiohttp) only when it is asked for
        from xaytune.viewer._serve import serve_live

        return serve_live
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
