"""Re-verifying an output tree from its files alone (``python -m xaytune.verify DIR``).

Every manifest in the tree is read (:mod:`xaytune.experiment.tree.manifest_view`) and holds
for its own directory:

- every report it lists is inside that directory and has the digest it records, and
  every report file there is listed (a report cannot be added, or edited and
  dropped from the manifest); its comparison is the one its replicate records
  give, recomputed (:mod:`xaytune.audit.comparison`);
- every replicate it lists has an evidence store whose published subjects are
  exactly the ones recorded, each of which loads untampered, verifies against the
  suite and the store, and is the evidence of that replicate's seed, assignment
  and candidate; the replicate's evaluations are of that evidence.

Every evidence store in the tree must be listed by a manifest, and the tree holds
no symbolic links (a writer never makes one; a link could show files from
elsewhere). Problems are one line each, naming the file.

The tree is walked once (:func:`~xaytune.experiment.tree.layout.walk_tree`); every check reads
what that walk found. Each store is verified once (``verify_run_evidence``), and
what its verification found serves every later check of that store in the audit.

This module walks the tree and runs the checks; each check is a module of its own:
a manifest's own directory (``_manifests``), a listed replicate and its store
(``_replicates``), the intent it was run under (``_intents``), and what no manifest
accounts for (``_strays``); what they find is one ``_findings.Audit``.
"""

from __future__ import annotations

from pathlib import Path

from xaytune.audit._findings import Audit
from xaytune.audit._manifests import (
    check_coverage,
    check_hydra_config,
    check_recomparisons,
    check_reports,
    run_config,
    suite_source,
    warn_adapter_change,
)
from xaytune.audit._replicates import check_replicate
from xaytune.audit._strays import check_no_links, check_strays
from xaytune.audit.comparison import comparison_problems, start_comparisons
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.experiment.models_run import MODELS_DIR, models_problems
from xaytune.experiment.order import order_problem
from xaytune.experiment.tree.files import REPLICATE_FILE
from xaytune.experiment.tree.layout import tree_writer, walk_tree
from xaytune.experiment.tree.looks import LOOKS_FILE, looks_problems
from xaytune.experiment.tree.manifest import MANIFEST
from xaytune.experiment.tree.manifest_view import read_manifest
from xaytune.harness.evidence.store import STORE_MARKER

__all__ = ["audit_tree", "refuse_busy_tree"]


def refuse_busy_tree(root: Path, *, command: str) -> None:
    """``tree-busy`` when a live process is writing ``root`` (it holds the tree's lock):
    a tree mid-run is not yet what it will be, and "resume it" would start a second
    writer. A tree whose writer has died is not busy; its manifest then says how to
    finish it. ``command`` (e.g. "verify") says what to do again once it is done."""
    pid = tree_writer(root)
    if pid is not None:
        raise XaytuneError(
            "tree-busy",
            f"{root} is being written by process {pid}; {command} it when that run has ended",
        )


def audit_tree(
    root: Path, *, suites: tuple[Path, ...] = ()
) -> tuple[list[str], dict[str, int], list[str]]:
    """Problems (one line each), counts of what verified, and warnings (one line
    each: a part whose code here is not the code the run recorded).

    ``suites``: suite directories to use instead of the path a manifest records (a
    tree verified on another machine); each is matched to a manifest by its digest.
    """
    audit = Audit()
    for location in suites:
        try:
            given = SuiteSource(location)
        except (XaytuneError, OSError) as error:
            audit.problem(location, f"suite-missing: {error}")
            continue
        audit.sources[given.digest] = given
    root = root.absolute()  # every problem names its file in full
    audit.tree = walk_tree(root)
    manifests = audit.files.named(MANIFEST)
    if not manifests:
        return [f"{root}: no {MANIFEST}; not an xaytune output tree"], audit.counts, []
    check_no_links(audit)
    records = audit.files.named(REPLICATE_FILE)
    listed: set[Path] = set()
    for path in manifests:
        try:
            manifest = read_manifest(path)
        except XaytuneError as error:
            audit.manifests[path] = None
            audit.problem(path, str(error))
            continue
        audit.manifests[path] = manifest
        source = suite_source(manifest, path, audit)
        check_reports(manifest, path.parent, audit)
        cfg = run_config(manifest, path, audit)
        # A run with several models holds a run per model (each with its manifest,
        # checked as such) and the summary across them.
        models = path.parent / MODELS_DIR if cfg is not None and cfg.models else None
        if models is not None:
            for file, message in models_problems(cfg, path.parent):
                audit.problem(file, message)
        check_recomparisons(manifest, path, source, cfg, audit)
        if cfg is not None and models is None:
            for message in looks_problems(path.parent, cfg.seeds):
                audit.problem(path.parent / LOOKS_FILE, message)
        warn_adapter_change(manifest, path, audit)
        check_hydra_config(manifest, path, audit)
        if cfg is not None and (problem := order_problem(path, cfg.job_seeds)) is not None:
            audit.problem(path, problem)
        if cfg is not None and models is None:
            check_coverage(manifest, path, cfg, audit)
        under = [record for record in records if record.is_relative_to(path.parent)]
        # The comparison is started now where a helper process computes it (xaytune.verify)
        # and collected once the attempts are verified.
        candidates = None
        if models is None and source is not None and cfg is not None:
            candidates = start_comparisons(path.parent, cfg, source, records=under)
        mine: set[Path] = set()
        for replicate in manifest.replicates:
            store_root = check_replicate(manifest, replicate, path, source, cfg, audit)
            if store_root is not None:
                listed.add(store_root)
                mine.add(store_root.parent)
        # The comparison reads every replicate record under the run: each must be a
        # listed replicate's.
        for record in records:
            if not record.is_relative_to(path.parent):
                continue
            if models is not None and record.is_relative_to(models):
                continue  # listed by that model's own manifest
            if record.parent not in mine:
                audit.problem(record, "unlisted-replicate: a replicate the manifest does not list")
        # Last: the helper process imports scipy and computes it meanwhile.
        if models is None and source is not None and cfg is not None:
            differing = comparison_problems(
                path.parent, cfg, source, records=under, load=audit.load, candidates=candidates
            )
            for file, message in differing:
                audit.problem(file, message)
    for marker in audit.files.named(STORE_MARKER):
        if marker.parent not in listed:
            audit.problem(marker.parent, "unlisted-store: an evidence store no manifest lists")
    check_strays(root, manifests, listed, audit)
    return audit.problems, audit.counts, audit.warnings
