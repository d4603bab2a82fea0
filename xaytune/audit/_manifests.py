"""What one manifest of an output tree says of its own directory, checked.

Its suite (pinned by digest), its config, its reports (each listed one is there with
the digest recorded, each one there is listed), the comparisons made again beside the
original (each recomputed under the config recorded for it), the Hydra config written
beside it, its coverage (seeds x candidates) and the model adapter's code. Each check
adds one-line problems to the :class:`~xaytune.audit._findings.Audit`.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from xaytune.audit._findings import Audit, is_file
from xaytune.audit.comparison import comparison_problems
from xaytune.core.canonical import sha256_digest
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.experiment.config import ComparisonConfig, ExperimentConfig, validate_config
from xaytune.experiment.parts import part_change
from xaytune.experiment.tree.files import REPLICATE_FILE
from xaytune.experiment.tree.manifest import MANIFEST, what_is_run
from xaytune.experiment.tree.manifest_view import ManifestView, inside, recorded_suite
from xaytune.plugins import CodeIdentity

__all__ = [
    "RECOMPARISON_PREFIX",
    "check_coverage",
    "check_hydra_config",
    "check_recomparisons",
    "check_reports",
    "run_config",
    "suite_source",
    "warn_adapter_change",
]

# The directories of the comparisons made again (``python -m xaytune.compare``).
RECOMPARISON_PREFIX = "comparison-"


def suite_source(manifest: ManifestView, path: Path, audit: Audit) -> SuiteSource | None:
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


def run_config(manifest: ManifestView, path: Path, audit: Audit) -> ExperimentConfig | None:
    """The config the manifest records, validated (None, with a problem, if not)."""
    try:
        return validate_config(manifest.config)
    except XaytuneError as error:
        audit.problem(path, f"bad-manifest: config: {error}")
        return None


def check_reports(manifest: ManifestView, base: Path, audit: Audit) -> None:
    """Each report the manifest lists is inside ``base`` with the digest recorded (counted
    when it is), and each report under ``base`` is listed."""
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
    for report in audit.reports_under(base):
        if str(report.relative_to(base)) not in manifest.reports:
            audit.problem(report, f"report-unlisted: a report {manifest_path} does not list")


def check_recomparisons(
    manifest: ManifestView,
    path: Path,
    source: SuiteSource | None,
    cfg: ExperimentConfig | None,
    audit: Audit,
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


def warn_adapter_change(manifest: ManifestView, path: Path, audit: Audit) -> None:
    """A warning when the model adapter class here is not the code the run recorded."""
    try:
        recorded = CodeIdentity.model_validate(manifest.parts.get("model_adapter"))
    except ValueError:
        return  # nothing readable recorded: the replicate facets still tie the evidence
    change = part_change(recorded)
    if change is not None:
        audit.warnings.append(f"{path}: {change}")


def check_hydra_config(manifest: ManifestView, path: Path, audit: Audit) -> None:
    """``.hydra/config.yaml`` (when the run wrote one) is the config the manifest
    records, but for the keys that may change on a resume."""
    from omegaconf import OmegaConf

    hydra_config = path.parent / ".hydra" / "config.yaml"
    if not is_file(hydra_config):
        return
    try:
        composed = OmegaConf.to_container(OmegaConf.load(hydra_config), resolve=True)
    except Exception as error:  # a file that is not the composed config Hydra wrote
        audit.problem(hydra_config, f"config-mismatch: unreadable ({type(error).__name__})")
        return
    if not isinstance(composed, dict) or what_is_run(composed) != what_is_run(manifest.config):
        audit.problem(hydra_config, "config-mismatch: not the config the manifest records")


def check_coverage(manifest: ManifestView, path: Path, cfg: ExperimentConfig, audit: Audit) -> None:
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
