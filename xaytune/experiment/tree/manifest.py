"""The output tree's manifest: resolved config, every fingerprint, versions, timing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes, fingerprint, sha256_digest
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import ConfigError
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.facets import timing_environment
from xaytune.experiment.order import order_record
from xaytune.experiment.parts import experiment_parts
from xaytune.experiment.tree.cache import REUSE_FILE
from xaytune.experiment.tree.files import REPLICATE_FILE
from xaytune.experiment.tree.intent import config_changes, runtime_versions
from xaytune.experiment.tree.layout import find_links
from xaytune.harness.evidence.store import atomic_write
from xaytune.harness.spec import Harness

__all__ = [
    "MANIFEST",
    "REPORT_FILES",
    "check_resume",
    "report_files",
    "what_is_run",
    "write_manifest",
]

MANIFEST = "manifest.json"
# Every report the run wrote (digests in the manifest; ``python -m xaytune.verify``
# checks them): the comparison, with its plots, and each replicate's evaluation.
REPORT_FILES = (
    "looks.json",  # every look at the tree, hash-chained (xaytune.experiment.tree.looks)
    "looks.md",
    "comparison/**/*",
    "comparison-*/**/*",
    "**/candidates/*/candidate.json",
    "**/seed-*/evaluation/**/*",
    f"**/seed-*/{REPLICATE_FILE}",
)
# Keys that may change between a run and its resumption without changing what is run.
_OPERATIONAL = {"resume", "progress", "concurrency", "seed", "cache"}


def _replicates(out: Path, *, nested: Path | None = None) -> list[dict[str, Any]]:
    """The replicates under ``out`` but not under ``nested`` (runs of their own)."""
    found = []
    for path in sorted(out.rglob(REPLICATE_FILE)):
        if nested is not None and path.is_relative_to(nested):
            continue
        replicate = json.loads(path.read_bytes())
        published = sorted((path.parent / "evidence" / "published").glob("*.intoto.json"))
        found.append(
            {
                "path": str(path.parent.relative_to(out)),
                "seed": replicate["seed"],
                "assignment_digest": replicate["assignment_digest"],
                "evaluator_fingerprints": sorted(
                    {e["evaluator_fingerprint"] for e in replicate["evaluations"]}
                ),
                "evidence_digests": ["sha256:" + p.name.split(".")[0] for p in published],
                "reused": _reused_key(path.parent / "evidence" / REUSE_FILE),
            }
        )
    return found


def _reused_key(path: Path) -> str | None:
    """The cache key a replicate's evidence was copied from (None: it was run here)."""
    try:
        return json.loads(path.read_bytes())["key"]
    except FileNotFoundError:
        return None


def write_manifest(
    out: Path, cfg: ExperimentConfig, plain: dict[str, Any], source: SuiteSource, *, final: bool
) -> None:
    """Write ``manifest.json`` (again when ``final``, with replicates and report digests)."""
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "schema": "xaytune.experiment-manifest/v1",
        "experiment": cfg.experiment.name,
        "config": plain,
        "config_fingerprint": fingerprint(what_is_run(plain)),
        "suite": {
            "name": source.suite.name,
            "version": source.suite.version,
            "digest": source.digest,
            "builtin": cfg.suite.builtin,
            "path": None if cfg.suite.path is None else str(Path(cfg.suite.path).resolve()),
        },
        "candidates": {
            label: {
                "name": h.name,
                "harness_fingerprint": h.fingerprint,
                "parts": [part.model_dump(mode="json") for part in h.parts],
            }
            for label, h in sorted(cfg.candidates.items())
        },
        "parts": experiment_parts(cfg),
        # The order the candidates run in on each seed (xaytune.experiment.order).
        "candidate_order": order_record(
            cfg.job_seeds, {label: h.fingerprint for label, h in cfg.candidates.items()}
        ),
        "durability": cfg.durability,
        "timing_environment": timing_environment(),
        "versions": runtime_versions(),
        "complete": final,
    }
    if cfg.models:  # each model is a run of its own, with its own manifest
        manifest["models"] = {label: f"models/{label}" for label in cfg.models}
    if final:
        manifest["replicates"] = _replicates(out, nested=out / "models" if cfg.models else None)
        manifest["reports"] = {
            str(path.relative_to(out)): sha256_digest(path.read_bytes())
            for path in report_files(out)
        }
    atomic_write(out / MANIFEST, canonical_bytes(manifest) + b"\n")


def report_files(out: Path) -> list[Path]:
    """The reports under ``out`` a manifest written there covers (REPORT_FILES)."""
    found = {path for pattern in REPORT_FILES for path in out.glob(pattern)}
    return sorted(path for path in found if path.is_file() and not path.name.startswith("."))


def what_is_run(plain: dict[str, Any]) -> dict[str, Any]:
    """The config without the keys that may change between a run and its resumption."""
    return {k: v for k, v in plain.items() if k not in _OPERATIONAL}


def check_resume(out: Path, plain: dict[str, Any], cfg: ExperimentConfig) -> tuple[int, ...]:
    """Refuse to resume into a tree made from another config, or with parts whose
    code has changed since (``resume-mismatch``, naming the part). A finished tree
    may be *extended*: the same config with a longer ``seeds`` list that keeps the
    recorded seeds first; the recorded seeds are returned then (only the new ones
    run), and () for a plain resume."""
    path = out / MANIFEST
    try:
        previous = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ConfigError(
            "resume-mismatch", f"{path}: no manifest; not an xaytune output"
        ) from None
    links = find_links(out)
    if links:
        raise ConfigError("symlink", f"{links[0]}: a tree to resume holds no links")
    extended: tuple[int, ...] = ()
    if previous.get("config_fingerprint") != fingerprint(what_is_run(plain)):
        extended = _check_extension(out, previous, plain)
    recorded = previous.get("candidates") if isinstance(previous, dict) else None
    for label, harness in sorted(cfg.candidates.items()):
        before = recorded.get(label) if isinstance(recorded, dict) else None
        if isinstance(before, dict) and before.get("harness_fingerprint") == harness.fingerprint:
            continue
        raise ConfigError(
            "resume-mismatch",
            f"{out}: candidate {label} ({harness.name}): {_changed_part(before, harness)}; "
            "resume needs the same code",
        )
    parts = previous.get("parts") if isinstance(previous, dict) else None
    current = experiment_parts(cfg)
    if parts != current:
        raise ConfigError(
            "resume-mismatch",
            f"{out}: {_changed_experiment_part(parts, current)}; resume needs the same code",
        )
    return extended


def _check_extension(out: Path, previous: dict[str, Any], plain: dict[str, Any]) -> tuple[int, ...]:
    """Allow a resume whose only change is a longer ``seeds`` list that keeps the
    recorded seeds first (only the new seeds run; each comparison written is a look,
    see xaytune.experiment.tree.looks); refuse anything else with ``resume-mismatch``. Under the
    sequential method the new seeds must also be larger than every recorded one: its
    e-process reads seeds in ascending order, and an extension must extend that path."""
    same = "was run with another config; resume needs the same one"
    before = previous.get("config")
    if not isinstance(before, dict):
        raise ConfigError("resume-mismatch", f"{out}: {same}")
    old_seeds, new_seeds = list(before.get("seeds") or []), list(plain.get("seeds") or [])
    rest = {k: v for k, v in what_is_run(plain).items() if k != "seeds"}
    old_rest = {k: v for k, v in what_is_run(before).items() if k != "seeds"}
    if fingerprint(rest) != fingerprint(old_rest):
        changed = config_changes(old_rest, rest)
        raise ConfigError(
            "resume-mismatch",
            f"{out}: was run with another config ({changed}); resume needs the same one",
        )
    if len(new_seeds) <= len(old_seeds) or new_seeds[: len(old_seeds)] != old_seeds:
        raise ConfigError(
            "resume-mismatch",
            f"{out}: seeds {new_seeds} do not extend the recorded {old_seeds} (a longer list "
            "that keeps them first)",
        )
    comparison = plain.get("comparison") or {}
    if comparison.get("method") == "sequential-paired/v1" and min(
        new_seeds[len(old_seeds) :]
    ) <= max(old_seeds):
        raise ConfigError(
            "resume-mismatch",
            f"{out}: under sequential-paired/v1 new seeds must be larger than {max(old_seeds)} "
            "(the e-process reads seeds in ascending order)",
        )
    if previous.get("complete") is not True or plain.get("seed") is not None or plain.get("models"):
        raise ConfigError(
            "resume-mismatch",
            f"{out}: only a finished run of one model in one process can be extended with "
            "seeds; finish it first (resume with its own seeds)",
        )
    return tuple(old_seeds)


def _changed_experiment_part(before: Any, now: dict[str, Any]) -> str:
    """Which scorer or model adapter differs from the one the tree was run with."""
    if not isinstance(before, dict):
        return "the tree records no scorer or model adapter identity"
    if before.get("model_adapter") != now["model_adapter"]:
        old = before.get("model_adapter") or {}
        new = now["model_adapter"]
        return (
            f"model adapter {new['target']} code changed "
            f"({old.get('source_sha256')} -> {new['source_sha256']})"
        )
    old_scorers = before.get("scorers") or {}
    for label, code in now["scorers"].items():
        old = old_scorers.get(label) or {}
        if old != code:
            return (
                f"scorer {code['name']!r} of evaluator {label} code changed "
                f"({old.get('source_sha256')} -> {code['source_sha256']})"
            )
    return "the evaluators are not the ones the tree was run with"


def _changed_part(before: Any, harness: Harness) -> str:
    """Which part's code differs from the one the tree was run with."""
    parts = before.get("parts") if isinstance(before, dict) else None
    pinned = {(p.get("kind"), p.get("name")): p for p in parts or () if isinstance(p, dict)}
    for part in harness.parts:
        old = pinned.get((part.kind, part.name))
        if old is None:
            return f"{part.kind} {part.name!r} was not part of the run"
        if old != part.model_dump(mode="json"):
            return (
                f"{part.kind} {part.name!r} code changed ({old.get('source_sha256')} -> "
                f"{part.source_sha256})"
            )
    return "the harness is not the one the tree was run with"
