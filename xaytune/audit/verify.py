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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from xaytune.audit.comparison import comparison_problems
from xaytune.audit.evaluations import evaluation_problems
from xaytune.audit.recompare import RECOMPARISON_PREFIX
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.experiment.config import ComparisonConfig, ExperimentConfig, validate_config
from xaytune.experiment.models_run import MODELS_DIR, models_problems
from xaytune.experiment.order import order_problem
from xaytune.experiment.parts import part_change
from xaytune.experiment.replicate import CANDIDATE_FILE, REPLICATE_FILE
from xaytune.experiment.tree.cache import REUSE_FILE
from xaytune.experiment.tree.intent import (
    INTENT_FILE,
    config_changes,
    previous_intents,
    read_intent,
)
from xaytune.experiment.tree.layout import LOCK_FILE, TreeFiles, tree_writer, walk_tree
from xaytune.experiment.tree.looks import LOOKS_FILE, looks_problems
from xaytune.experiment.tree.manifest import MANIFEST, REPORT_FILES, what_is_run
from xaytune.experiment.tree.manifest_view import (
    ManifestView,
    ReplicateView,
    inside,
    read_manifest,
    recorded_suite,
)
from xaytune.harness import Harness
from xaytune.harness.evidence import HarnessRunEvidence, verify_run_evidence
from xaytune.harness.evidence.journal import JOURNAL_NAME, journal_problems
from xaytune.harness.evidence.publish import PublishedSubject, load_published
from xaytune.harness.evidence.store import STORE_MARKER, HarnessEvidenceStore
from xaytune.plugins import CodeIdentity

__all__ = ["audit_tree", "refuse_busy_tree"]


class _Published(NamedTuple):
    """A published subject of a store and its evidence, loaded and verified."""

    subject: PublishedSubject
    evidence: HarnessRunEvidence


@dataclass
class _Audit:
    """What an audit has found so far."""

    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: {"stores": 0, "subjects": 0, "reports": 0}
    )
    sources: dict[str, SuiteSource] = field(default_factory=dict)
    # Each store's published evidence, once verified (None: it did not verify).
    stores: dict[Path, dict[str, _Published] | None] = field(default_factory=dict)
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


def refuse_busy_tree(root: Path, *, command: str) -> None:
    """``tree-busy`` when a live process is writing ``root`` (it holds the tree's lock):
    a tree mid-run is not yet what it will be, and "resume it" would start a second
    writer. A tree whose writer has died is not busy; its manifest then says how to
    finish it. ``command`` (e.g. "verify") says what to do again once it is done."""
    from xaytune.core.errors import XaytuneError

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
    audit = _Audit()
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
    _check_no_links(audit)
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
        source = _source(manifest, path, audit)
        _check_reports(manifest, path.parent, audit)
        cfg = _config(manifest, path, audit)
        # A run with several models holds a run per model (each with its manifest,
        # checked as such) and the summary across them.
        models = path.parent / MODELS_DIR if cfg is not None and cfg.models else None
        if models is not None:
            for file, message in models_problems(cfg, path.parent):
                audit.problem(file, message)
        elif source is not None and cfg is not None:
            under = [record for record in records if record.is_relative_to(path.parent)]
            differing = comparison_problems(
                path.parent, cfg, source, records=under, load=audit.load
            )
            for file, message in differing:
                audit.problem(file, message)
        _check_recomparisons(manifest, path, source, cfg, audit)
        if cfg is not None and models is None:
            for message in looks_problems(path.parent, cfg.seeds):
                audit.problem(path.parent / LOOKS_FILE, message)
        _warn_adapter_change(manifest, path, audit)
        _check_hydra_config(manifest, path, audit)
        if cfg is not None and (problem := order_problem(path, cfg.job_seeds)) is not None:
            audit.problem(path, problem)
        if cfg is not None and models is None:
            _check_coverage(manifest, path, cfg, audit)
        mine: set[Path] = set()
        for replicate in manifest.replicates:
            store_root = _check_replicate(manifest, replicate, path, source, cfg, audit)
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
    for marker in audit.files.named(STORE_MARKER):
        if marker.parent not in listed:
            audit.problem(marker.parent, "unlisted-store: an evidence store no manifest lists")
    _check_strays(root, manifests, listed, audit)
    return audit.problems, audit.counts, audit.warnings


def _warn_adapter_change(manifest: ManifestView, path: Path, audit: _Audit) -> None:
    """A warning when the model adapter class here is not the code the run recorded."""
    try:
        recorded = CodeIdentity.model_validate(manifest.parts.get("model_adapter"))
    except ValueError:
        return  # nothing readable recorded: the replicate facets still tie the evidence
    change = part_change(recorded)
    if change is not None:
        audit.warnings.append(f"{path}: {change}")


def _check_recomparisons(
    manifest: ManifestView,
    path: Path,
    source: SuiteSource | None,
    cfg: ExperimentConfig | None,
    audit: _Audit,
) -> None:
    """Each comparison made again (``python -m xaytune.compare``) is what the replicates
    give under the comparison config the manifest records for it; a ``comparison-*``
    directory the manifest does not record is refused."""
    base = path.parent
    listed = set()
    for entry in manifest.recomparisons:
        directory = inside(base, entry.path)
        if (
            directory is None
            or directory.parent != base
            or not entry.path.startswith(RECOMPARISON_PREFIX)
        ):
            audit.problem(
                path, f"bad-manifest: recomparison {entry.path!r} is not a directory here"
            )
            continue
        listed.add(directory)
        if source is None or cfg is None:
            continue
        try:
            again = cfg.model_copy(
                update={"comparison": ComparisonConfig.model_validate(entry.comparison)}
            )
        except ValueError as error:
            audit.problem(path, f"bad-manifest: recomparison {entry.path}: {error}")
            continue
        records = [
            record for record in audit.files.named(REPLICATE_FILE) if record.is_relative_to(base)
        ]
        differing = comparison_problems(
            base, again, source, directory, records=records, load=audit.load
        )
        for file, message in differing:
            audit.problem(file, message)
    prefix = os.path.join(base, RECOMPARISON_PREFIX)
    found = [
        Path(path)
        for kind in (audit.files.dirs, audit.files.links)  # a link to a directory too
        for path in audit.files.starting(kind, prefix)
        if os.sep not in path[len(prefix) :]
    ]
    for directory in sorted(found):
        if directory.is_dir() and directory not in listed:
            audit.problem(directory, f"unlisted-comparison: {path} records no such comparison")


def _check_no_links(audit: _Audit) -> None:
    for path in sorted(map(Path, audit.files.links)):
        audit.problem(path, "symlink: an output tree holds no links")


def _source(manifest: ManifestView, path: Path, audit: _Audit) -> SuiteSource | None:
    """The manifest's suite, pinned by its digest (None, with a problem, if not)."""
    suite = manifest.suite
    known = audit.sources.get(suite.digest)
    if known is not None:
        return known
    try:
        source = recorded_suite(manifest, path)
    except XaytuneError as error:
        audit.problem(path, str(error))
        return None
    except OSError as error:
        audit.problem(path, f"suite-missing: suite unreadable ({error.strerror})")
        return None
    audit.sources[suite.digest] = source
    return source


def _check_reports(manifest: ManifestView, base: Path, audit: _Audit) -> None:
    manifest_path = base / MANIFEST
    for name, digest in manifest.reports.items():
        report = inside(base, name)
        if report is None:
            audit.problem(manifest_path, f"bad-manifest: report {name!r} is not inside {base}")
            continue
        try:
            data = report.read_bytes()
        except OSError as error:
            audit.problem(report, f"report-missing: listed in {MANIFEST} ({error.strerror})")
            continue
        if sha256_digest(data) != digest:
            audit.problem(report, "digest-mismatch: not the file the manifest recorded")
        else:
            audit.counts["reports"] += 1
    for report in _report_files(audit, base):
        if str(report.relative_to(base)) not in manifest.reports:
            audit.problem(report, f"report-unlisted: a report {manifest_path} does not list")


def _config(manifest: ManifestView, path: Path, audit: _Audit) -> ExperimentConfig | None:
    try:
        return validate_config(manifest.config)
    except XaytuneError as error:
        audit.problem(path, f"bad-manifest: config: {error}")
        return None


def _check_replicate(
    manifest: ManifestView,
    replicate: ReplicateView,
    manifest_path: Path,
    source: SuiteSource | None,
    cfg: ExperimentConfig | None,
    audit: _Audit,
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
    if not _is_file(store_root / STORE_MARKER):
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
    _check_intent(manifest, manifest_path, directory, replicate, published, audit)
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


def _intent_for(directory: Path, root: Path, audit: _Audit) -> tuple[Path, Any]:
    """The intent of the run a replicate directory belongs to: the nearest
    ``intent.json`` above it, up to the manifest's directory ``root``."""
    for base in (directory, *directory.parents):
        if (base / INTENT_FILE).exists() or base == root:
            break
    if base not in audit.intents:
        try:
            audit.intents[base] = read_intent(base)
        except XaytuneError as error:
            audit.problem(base / INTENT_FILE, str(error))
            audit.intents[base] = None
    return base, audit.intents[base]


def _check_intent(
    manifest: ManifestView,
    manifest_path: Path,
    directory: Path,
    replicate: ReplicateView,
    published: dict[str, _Published],
    audit: _Audit,
) -> None:
    """The replicate is one the run set out to make, under the config the manifest
    states: its evidence carries the run's intent digest (every attempt record does,
    checked by verification), its candidate and seed are the intent's, and the
    manifest's config is the intent's."""
    base, found = _intent_for(directory, manifest_path.parent, audit)
    if found is None:
        return
    intent, digest = found
    where = base / INTENT_FILE
    if intent.get("config") != what_is_run(manifest.config):
        key = (manifest_path, where)
        if key not in audit.intent_pairs:
            audit.intent_pairs.add(key)
            audit.problem(
                manifest_path,
                f"intent-mismatch: the manifest's config is not the one {where} records",
            )
    recorded = intent.get("versions")  # trees older than the versions claim carry none
    if recorded is not None and manifest.versions != recorded:
        key = (manifest_path, where, "versions")
        if key not in audit.intent_pairs:
            audit.intent_pairs.add(key)
            audit.problem(
                manifest_path,
                f"claim-mismatch: versions ({config_changes(recorded, manifest.versions)}) "
                f"are not the ones {where} records",
            )
    label = directory.parent.name
    candidates = intent.get("candidates")
    fingerprint = manifest.harness_of(label)
    if (
        not isinstance(candidates, dict)
        or fingerprint not in candidates.values()
        or replicate.seed not in (intent.get("seeds") or ())
    ):
        audit.problem(
            directory,
            f"intent-mismatch: candidate {label} seed {replicate.seed} is not one {where} "
            "set out to run",
        )
    earlier = previous_intents(intent)
    for subject, evidence in published.values():
        if evidence.intent == digest:
            continue
        before = earlier.get(evidence.intent)
        if before is not None:
            # A tree extended with seeds: this replicate ran under the intent before.
            problem = _not_this_replicate(before, intent, fingerprint, replicate.seed)
            if problem is None:
                continue
            audit.problem(directory, f"intent-mismatch: evidence of an earlier intent {problem}")
            continue
        origin = _reused_intent(directory / "evidence" / REUSE_FILE)
        if origin is not None and origin[1] == evidence.intent:
            problem = _not_this_replicate(origin[0], intent, fingerprint, replicate.seed)
            if problem is None:
                continue  # reused from the cache: run under another intent, to this end
            audit.problem(
                directory / "evidence" / REUSE_FILE, f"intent-mismatch: reused evidence {problem}"
            )
            continue
        audit.problem(
            Path(subject.path),
            f"intent-mismatch: the evidence was run under intent {evidence.intent}, "
            f"not {where} ({digest})",
        )


def _reused_intent(path: Path) -> tuple[dict[str, Any], str] | None:
    """The intent a cache entry's evidence was run under, and its digest (None: the
    replicate was run here, or the record is unreadable)."""
    try:
        intent = json.loads(path.read_bytes())["intent"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return intent, sha256_digest(canonical_bytes(intent) + b"\n")


def _not_this_replicate(
    origin: dict[str, Any], intent: dict[str, Any], fingerprint: str | None, seed: int
) -> str | None:
    """Why the origin intent did not set out to run this replicate of ``intent``.

    What the evidence itself settles is checked with it, as for any replicate: the
    harness and its specs, the assignment (suite, sampling, seed) and the model it ran
    on. Here: that the run which recorded it meant this suite, candidate and seed, with
    the model adapter code of this run."""
    if not isinstance(origin, dict) or origin.get("suite_digest") != intent.get("suite_digest"):
        return "was run on another suite"
    candidates = origin.get("candidates")
    if not isinstance(candidates, dict) or fingerprint not in candidates.values():
        return "was run for another candidate"
    if seed not in (origin.get("seeds") or ()):
        return f"was not run for seed {seed}"
    if (origin.get("parts") or {}).get("model_adapter") != (intent.get("parts") or {}).get(
        "model_adapter"
    ):
        return "was run with another model adapter"
    return None


def _check_claims(
    manifest: ManifestView,
    path: Path,
    record: dict[str, Any],
    published: dict[str, _Published],
    audit: _Audit,
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


def _check_coverage(
    manifest: ManifestView, path: Path, cfg: ExperimentConfig, audit: _Audit
) -> None:
    """The manifest's replicates are exactly its seeds x candidates: a replicate
    dropped (a seed cherry-picked away) or added is refused."""
    seeds = cfg.seeds if cfg.seed is None else (cfg.seed,)
    expected = {(c.name, seed) for c in manifest.candidates.values() for seed in seeds}
    found = {
        ((PurePosixPath(r.path).parts[-2:-1] or ("?",))[0], r.seed) for r in manifest.replicates
    }
    if found != expected:
        missing = sorted(expected - found)
        extra = sorted(found - expected)
        audit.problem(
            path,
            f"replicates-mismatch: not seeds x candidates (missing {missing}, extra {extra})",
        )


def _check_hydra_config(manifest: ManifestView, path: Path, audit: _Audit) -> None:
    """``.hydra/config.yaml`` (when the run wrote one) is the config the manifest
    records, but for the keys that may change on a resume."""
    from omegaconf import OmegaConf

    hydra_config = path.parent / ".hydra" / "config.yaml"
    if not _is_file(hydra_config):
        return
    try:
        composed = OmegaConf.to_container(OmegaConf.load(hydra_config), resolve=True)
    except Exception as error:  # a file that is not the composed config Hydra wrote
        audit.problem(hydra_config, f"config-mismatch: unreadable ({type(error).__name__})")
        return
    if not isinstance(composed, dict) or what_is_run(composed) != what_is_run(manifest.config):
        audit.problem(hydra_config, "config-mismatch: not the config the manifest records")


def _report_files(audit: _Audit, base: Path) -> list[Path]:
    """The reports under ``base`` a manifest written there covers: what
    :func:`~xaytune.experiment.tree.manifest.report_files` finds, from the tree's one walk."""
    return [
        path
        for path in audit.files.matching(base, REPORT_FILES)
        if not path.name.startswith(".") and path.is_file()
    ]


def _check_strays(root: Path, manifests: list[Path], listed: set[Path], audit: _Audit) -> None:
    """Every file of the tree is one a manifest accounts for: its own files, Hydra's,
    its reports, and the files of the stores it lists. Anything else (a temporary
    file, a note) is named."""
    accounted: set[str] = set()
    for path in manifests:
        base = path.parent
        accounted.update(str(base / name) for name in _RUN_FILES)
        # (an unlisted report is report-unlisted already)
        accounted.update(map(str, _report_files(audit, base)))
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


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long, say: not a file the writer made
        return False


def _check_candidate(manifest: ManifestView, directory: Path, audit: _Audit) -> None:
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
    published: dict[str, _Published],
    audit: _Audit,
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


def _verified_store(
    store_root: Path, source: SuiteSource, audit: _Audit
) -> dict[str, _Published] | None:
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
    published: dict[str, _Published] = {}
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
        published[subject.digest] = _Published(subject, evidence)
        audit.counts["subjects"] += 1
    if len(published) != len(statements):
        return None
    audit.stores[store_root] = published
    return published
