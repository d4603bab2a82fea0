"""Comparing a finished run again under other comparison settings, without rerunning.

``python -m xaytune.compare <run dir> comparison.objectives.0.min_effect=0.2 ...``
parses its Hydra-style overrides in the app (:mod:`xaytune.app.overrides`); here each
is a :class:`ComparisonOverride` of the ``comparison`` group only (objectives, k,
fail_on, calibrate, ...). :func:`recompare` recomputes the comparison from the
replicate records already in the tree, and writes it into a new
``comparison-<timestamp>/`` beside the original, which is never touched. The tree
must verify first (a comparison of evidence that does not verify would be worth
nothing). The manifest records the new comparison's config and the digests of its
files, so ``python -m xaytune.verify`` recomputes it like the original and refuses an
edit to either.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xaytune.audit._manifests import RECOMPARISON_PREFIX
from xaytune.comparison.compare import ComparisonReport
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import ConfigError, XaytuneError
from xaytune.experiment.config import ExperimentConfig, validate_config
from xaytune.experiment.tree.layout import fresh_dir
from xaytune.harness.evidence.store import atomic_write

__all__ = ["ComparisonOverride", "recompare", "recompared_config"]

_ONLY_COMPARISON = "only comparison.* keys may change when comparing again"


@dataclass(frozen=True, slots=True)
class ComparisonOverride:
    """One comparison setting changed: the dotted ``key`` (``comparison.k``,
    ``comparison.objectives.0.min_effect``; a number indexes a list), its new ``value``
    (plain data: a number, a string, None, a list or a dict), and ``line``, the text
    the user gave (recorded in the manifest; by default ``key=<value as JSON>``).

    Refused (``bad-override``) when ``key`` is not under ``comparison.``: comparing
    again changes how the evidence is compared, never what was run."""

    key: str
    value: Any
    line: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key.startswith("comparison."):
            raise ConfigError("bad-override", f"{self.text}: {_ONLY_COMPARISON}")

    @property
    def text(self) -> str:
        """The override as a command line gives it."""
        if self.line:
            return self.line
        return f"{self.key}={json.dumps(self.value, ensure_ascii=False, default=repr)}"


def _set(config: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted ``key`` of the plain ``config`` to ``value`` in place: a missing
    mapping on the way is created, a number indexes a list (as OmegaConf's ``update``
    does, which this replaces so that the audit room needs no config library)."""
    *path, last = key.split(".")
    node: Any = config
    for part in path:
        if isinstance(node, dict):
            node = node.setdefault(part, {})
        elif isinstance(node, list):
            node = node[_index(node, part, key)]
        else:
            raise ConfigError("bad-override", f"{key}: {part!r} is not inside a mapping or list")
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list):
        node[_index(node, last, key)] = value
    else:
        raise ConfigError("bad-override", f"{key}: {last!r} is not inside a mapping or list")


def _index(items: list[Any], part: str, key: str) -> int:
    if not (part.isascii() and part.isdigit()) or int(part) >= len(items):
        raise ConfigError(
            "bad-override", f"{key}: {part!r} is not an index of a list of {len(items)}"
        )
    return int(part)


def recompared_config(
    config: dict[str, Any], overrides: Sequence[ComparisonOverride]
) -> ExperimentConfig:
    """The run's config with ``overrides`` applied in order, validated (``bad-config``
    when the result is not a config). ``config`` itself is not changed."""
    plain = copy.deepcopy(config)
    for override in overrides:
        if not isinstance(override, ComparisonOverride):  # e.g. a command line's text
            raise ConfigError(
                "bad-override",
                f"{override!r} is not a ComparisonOverride (a command line's overrides are "
                "parsed by xaytune.app.overrides.comparison_overrides)",
            )
        _set(plain, override.key, copy.deepcopy(override.value))
    return validate_config(plain)


def recompare(
    tree: Path, overrides: Sequence[ComparisonOverride] = ()
) -> tuple[Path, ComparisonReport]:
    """Write the comparison of ``tree`` under ``overrides`` into a new directory of the
    tree and record it in the manifest; returns the directory and the comparison.

    Refused, with nothing written: ``not-a-run`` (no readable manifest, or no
    comparison: a sweep's job), ``tree-does-not-verify``, ``bad-override`` /
    ``bad-config`` (the overrides do not give a config), ``several-challengers``."""
    from xaytune.audit.verify import audit_tree
    from xaytune.experiment.attempt_errors import ERRORS_FILE, comparison_errors, errors_bytes
    from xaytune.experiment.reports import page_model, write_reports
    from xaytune.experiment.source import load_source
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
        "overrides": [override.text for override in overrides],
        "comparison": cfg.comparison.model_dump(mode="json"),
    }
    manifest.setdefault("recomparisons", []).append(entry)
    reports = manifest.setdefault("reports", {})
    looked = [tree / "looks.json", tree / "looks.md"]  # the look just recorded
    for path in [*sorted(p for p in directory.rglob("*") if p.is_file()), *looked]:
        reports[str(path.relative_to(tree))] = sha256_digest(path.read_bytes())
    atomic_write(manifest_path, canonical_bytes(manifest) + b"\n")
    return directory, report
