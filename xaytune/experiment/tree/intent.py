"""The run's intent: what it set out to do, bound before anything runs.

``intent.json`` is written once, at the start of a run, before any replicate: the
config (without the keys a resume may change), the suite digest, each candidate's
harness fingerprint, the seeds and the code identities of the experiment's parts.
Every attempt record carries its digest, and so does each replicate's evidence.
Changing what the comparison is made under after the fact (``min_effect``,
``disclosure``, the seeds, a candidate) then means writing a new intent, and every
attempt record with it: re-chaining every attempt, the hard class of rewrite.
``python -m xaytune.verify`` checks the manifest, ``.hydra/config.yaml`` and every
replicate against it, and that the replicates are exactly its seeds x candidates.

The one rewrite allowed: a finished tree *extended* with more seeds (the same config, a
longer ``seeds`` list that keeps the recorded ones first) gets the longer intent, with
the intents before it kept whole in its ``previous`` list; the replicates run under
one of those carry its digest, and verify accepts them for that intent's seeds only.
"""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import ConfigError
from xaytune.experiment.config import ExperimentConfig
from xaytune.experiment.parts import experiment_parts
from xaytune.harness.evidence.store import atomic_write

__all__ = [
    "INTENT_FILE",
    "INTENT_SCHEMA",
    "config_changes",
    "intent_of",
    "previous_intents",
    "read_intent",
    "runtime_versions",
    "write_intent",
]

INTENT_FILE = "intent.json"
INTENT_SCHEMA = "xaytune.run-intent/v1"


def intent_of(
    cfg: ExperimentConfig, run_config: dict[str, Any], source: SuiteSource
) -> dict[str, Any]:
    """The intent of a run (``run_config``: the config without its operational keys)."""
    return {
        "schema": INTENT_SCHEMA,
        "config": run_config,
        "suite_digest": source.digest,
        "candidates": {
            label: harness.fingerprint for label, harness in sorted(cfg.candidates.items())
        },
        "seeds": list(cfg.job_seeds),
        "parts": experiment_parts(cfg),
        # What the tree is made with: the manifest's claim is checked against this, and
        # a resume under other versions is refused (a tree is made by one set of them).
        "versions": runtime_versions(),
    }


# The packages whose versions a tree records (its own, and what its numbers pass through).
_PACKAGES = ("xaytune", "pydantic", "hydra-core", "omegaconf", "numpy", "scipy", "rfc8785")


def runtime_versions() -> dict[str, str]:
    """Python's and each recorded package's version in this process."""
    versions = {"python": platform.python_version()}
    for package in _PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not-installed"
    return versions


def _bytes(intent: dict[str, Any]) -> bytes:
    return canonical_bytes(intent) + b"\n"


def write_intent(out: Path, intent: dict[str, Any], *, resume: bool, extend: bool = False) -> str:
    """Write ``out/intent.json`` (a fresh run) or check it is ``intent`` (a resume:
    ``resume-mismatch`` otherwise); return its digest.

    ``extend`` (a finished tree given more seeds, checked by ``check_resume``): the
    new intent is written with the recorded one appended to its ``previous`` list, so
    the replicates run under an earlier intent stay accounted for (their attempts
    carry its digest) and an extension is itself on record."""
    path = out / INTENT_FILE
    data = _bytes(intent)
    if resume:
        try:
            recorded = path.read_bytes()
        except FileNotFoundError:
            raise ConfigError(
                "resume-mismatch", f"{path}: missing; the tree records no intent to resume"
            ) from None
        try:
            earlier = json.loads(recorded).get("previous")
        except (ValueError, AttributeError):
            earlier = None
        if earlier is not None:
            data = _bytes({**intent, "previous": earlier})
        if extend and recorded != data:
            before = json.loads(recorded)
            # Whole, as recorded: its digest is the one its replicates' attempts carry.
            chain = [*(earlier or []), before]
            data = _bytes({**intent, "previous": chain})
            atomic_write(path, data)
        if recorded != data and not extend:
            try:
                before = {k: v for k, v in json.loads(recorded).items() if k != "previous"}
                changed = f" ({config_changes(before, intent)})"
            except (ValueError, AttributeError):
                changed = ""
            raise ConfigError(
                "resume-mismatch", f"{path}: the tree was started with another intent{changed}"
            )
    else:
        atomic_write(path, data)
    return sha256_digest(data)


def read_intent(out: Path) -> tuple[dict[str, Any], str]:
    """The intent recorded under ``out`` and its digest; ``intent-missing`` or
    ``bad-intent`` (one line naming the file) when there is none to read."""
    path = out / INTENT_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("intent-missing", f"{path}: the run records no intent") from None
    except OSError as error:
        raise ConfigError("bad-intent", f"{path}: unreadable ({error.strerror})") from None
    try:
        intent = json.loads(data)
    except ValueError:
        raise ConfigError("bad-intent", f"{path}: not JSON") from None
    if not isinstance(intent, dict) or intent.get("schema") != INTENT_SCHEMA:
        raise ConfigError("bad-intent", f"{path}: not a {INTENT_SCHEMA} record")
    if _bytes(intent) != data:
        raise ConfigError("bad-intent", f"{path}: not canonical")
    return intent, sha256_digest(data)


def previous_intents(intent: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The intents a tree extended with seeds was run under before, by digest (the
    digest its attempts carry): empty for a tree never extended."""
    earlier = intent.get("previous")
    if not isinstance(earlier, list):
        return {}
    return {sha256_digest(_bytes(item)): item for item in earlier if isinstance(item, dict)}


def config_changes(before: Any, now: Any, *, limit: int = 3) -> str:
    """The keys (dotted paths) whose values differ between two plain configs, each as
    ``key: old -> new`` (values clipped), at most ``limit`` of them and a count of the
    rest: what a refused resume names so the user knows what to put back."""
    found: list[str] = []

    def walk(path: str, old: Any, new: Any) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in sorted(set(old) | set(new), key=str):
                walk(
                    f"{path}.{key}" if path else str(key),
                    old.get(key, _ABSENT),
                    new.get(key, _ABSENT),
                )
        elif old != new:
            found.append(f"{path or '<root>'}: {_shown(old)} -> {_shown(new)}")

    walk("", before, now)
    if not found:
        return "the same keys, values of another type"
    more = f", and {len(found) - limit} more" if len(found) > limit else ""
    return ", ".join(found[:limit]) + more


_ABSENT = object()


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else f"{text[:37]}..."
