"""Comparing a finished run again under other comparison settings, without rerunning.

``python -m xaytune.compare <run dir> comparison.objectives.0.min_effect=0.2 ...``
takes Hydra-style overrides of the ``comparison`` group only (objectives, k, fail_on,
calibrate), recomputes the comparison from the replicate records already in the
tree, and writes it into a new ``comparison-<timestamp>/`` beside the original,
which is never touched. The tree must verify first (a comparison of evidence that
does not verify would be worth nothing). The manifest records the new comparison's
config and the digests of its files, so ``python -m xaytune.verify`` recomputes it
like the original and refuses an edit to either.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from xaytune.comparison.compare import ComparisonReport
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import ConfigError, XaytuneError
from xaytune.experiment.config import ExperimentConfig, validate_config
from xaytune.experiment.tree.layout import fresh_dir
from xaytune.harness.evidence.store import atomic_write

__all__ = ["RECOMPARISON_PREFIX", "recompare", "recompared_config"]

RECOMPARISON_PREFIX = "comparison-"


def recompared_config(config: dict[str, Any], overrides: list[str]) -> ExperimentConfig:
    """The run's config with ``overrides`` (``comparison.*`` only) applied, validated."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as error:  # Hydra's grammar errors span several lines
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ConfigError("bad-override", message) from None
    conf = OmegaConf.create(config)
    for override in parsed:
        key = override.key_or_group
        if not key.startswith("comparison.") or override.is_delete() or override.is_add():
            raise ConfigError(
                "bad-override",
                f"{override.input_line}: only comparison.* keys may change when comparing again",
            )
        try:
            OmegaConf.update(conf, key, override.value(), merge=False)
        except OmegaConfBaseException as error:
            raise ConfigError("bad-override", f"{key}: {str(error).splitlines()[0]}") from None
    plain = OmegaConf.to_container(conf, resolve=False)
    assert isinstance(plain, dict)
    return validate_config(plain)


def recompare(tree: Path, overrides: list[str]) -> tuple[Path, ComparisonReport]:
    """Write the comparison of ``tree`` under ``overrides`` into a new directory of the
    tree and record it in the manifest; returns the directory and the comparison."""
    from xaytune.audit.verify import audit_tree
    from xaytune.experiment.attempt_errors import ERRORS_FILE, comparison_errors, errors_bytes
    from xaytune.experiment.replicate import load_source
    from xaytune.experiment.reports import page_model, write_reports
    from xaytune.experiment.tree.gather import comparison_files, comparison_report
    from xaytune.experiment.tree.looks import read_looks, record_look
    from xaytune.experiment.tree.manifest import MANIFEST

    manifest_path = tree / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_bytes())
        config = manifest["config"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError("not-a-run", f"{tree}: no readable {MANIFEST}; not a run tree") from None
    if not (tree / "comparison").is_dir():
        raise ConfigError("not-a-run", f"{tree}: holds no comparison (a sweep's job?)")
    problems, _, _ = audit_tree(tree)
    if problems:
        raise XaytuneError(
            "tree-does-not-verify",
            f"{tree}: {len(problems)} problem(s), first: {problems[0]}",
        )
    cfg = recompared_config(config, overrides)
    if len(cfg.challengers) > 1:
        raise ConfigError(
            "several-challengers",
            f"{tree}: compares {len(cfg.challengers)} challengers with a baseline; comparing "
            "again is for a two-candidate run (run the experiment again: the evidence "
            "cache reuses every replicate)",
        )
    source = load_source(cfg)
    report = comparison_report(tree, cfg, source, looks=read_looks(tree))
    directory = fresh_dir(tree / (RECOMPARISON_PREFIX + time.strftime("%Y-%m-%d_%H-%M-%S")))
    for name, data in comparison_files(report).items():
        atomic_write(directory / name, data)
    # Errors at this comparison's bound (comparison.max_model_error_share may change).
    recorded = comparison_errors(tree, cfg)
    atomic_write(directory / ERRORS_FILE, errors_bytes(recorded))
    write_reports(directory, report.released(), model=page_model(cfg, tree), errors=recorded.data())
    record_look(
        tree, directory.name, [(cfg.challengers[0], report)], withheld=recorded.not_compared
    )
    entry = {
        "path": directory.name,
        "overrides": list(overrides),
        "comparison": cfg.comparison.model_dump(mode="json"),
    }
    manifest.setdefault("recomparisons", []).append(entry)
    reports = manifest.setdefault("reports", {})
    looked = [tree / "looks.json", tree / "looks.md"]  # the look just recorded
    for path in [*sorted(p for p in directory.rglob("*") if p.is_file()), *looked]:
        reports[str(path.relative_to(tree))] = sha256_digest(path.read_bytes())
    atomic_write(manifest_path, canonical_bytes(manifest) + b"\n")
    return directory, report
