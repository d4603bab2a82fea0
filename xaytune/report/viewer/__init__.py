"""The per-task viewer: a static site over a run tree's restricted files.

``open_run`` reads a run tree (checking what can be checked cheaply: suite digest,
recomputed assignments, the replicate records' digests), ``write_site`` writes the
site (every attempt verified as its task page is written). ``python -m xaytune.view``
is the command (:mod:`xaytune.view`).
"""

from xaytune.report.viewer._site import FILTERS, PAGE_SIZE, Site, write_site
from xaytune.report.viewer._tree import RunTree, open_run

__all__ = ["FILTERS", "PAGE_SIZE", "RunTree", "Site", "open_run", "write_site"]
