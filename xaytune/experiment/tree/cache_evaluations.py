"""Evaluations cached beside the evidence they measured: a reused replicate costs a
verification, not a second measurement.

A DETERMINISTIC evaluation (``harness-outcome``) is a function of the evidence (its
digest), the bound evaluation (its canonical config, disclosure included, and its
fingerprint, which pins the scorer's code), the suite (its digest: the references),
the seed, and xaytune's own code (the sha256 of every module of the installed
package, so any change to the code that measures is a miss). Those make the key; the
reports an evaluation wrote are kept under it in the evidence cache's entry::

    v2/<replicate key hex>/evaluations/<evaluation key hex>/
        restricted  released  record.json (each report's path in the tree and sha256)

A hit links both files into the replicate's ``evaluation/<label>/`` (restricted
first, as ``write_reports`` writes them) and rebuilds the evaluation from them, after
checking each file's sha256 against the record and each report's header against
what this run would measure (evaluator, fingerprint, config, disclosure, subject,
suite, seed). Anything else (no record, an edited file, a header of another
evaluation, a report already in the tree) is a miss: the evaluation runs as before.
A STOCHASTIC evaluation (the judge) is never cached: measuring it again is a new
measurement, and a judge's failures would be replayed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.measurement import EvaluationResult
from xaytune.evaluation.harness import (
    HarnessEvaluation,
    HarnessEvaluationReport,
    RestrictedEvaluationReport,
)
from xaytune.experiment.tree.cache import lookup, share_file

__all__ = [
    "EVALUATION_CACHE_SCHEMA",
    "code_digest",
    "entry_for",
    "evaluation_key",
    "load",
    "store",
]

EVALUATION_CACHE_SCHEMA = "xaytune.evaluation-cache/v1"
_DIR = "evaluations"
_RECORD = "record.json"
_log = logging.getLogger("xaytune.cache")


@functools.cache
def code_digest() -> str:
    """sha256 over every module of the xaytune package on disk (path and content)."""
    package = Path(__file__).resolve().parents[2]  # xaytune/experiment/tree/ -> xaytune/
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).digest())
    return "sha256:" + digest.hexdigest()


def keyed(bound, evaluator, subject, source, seed: int) -> tuple[str, dict[str, Any]]:
    """The cache key of a DETERMINISTIC bound evaluation of ``subject`` (a published
    subject) under ``seed``, and the report header fields it fixes (checked on a hit).
    The evaluator's execution check runs here, as it does before any measurement."""
    header = {
        "evaluator": bound.evaluator,
        "evaluator_fingerprint": bound.fingerprint,
        "determinism": bound.determinism,
        "disclosure": bound.disclosure,
        "config": evaluator.check_execution(bound).model_dump(mode="json"),
        "subject_digest": subject.digest,
        "suite_digest": source.digest,  # the subject's digest covers its assignment
        "seed": seed,
    }
    return evaluation_key(header=header, fingerprint=bound.fingerprint, kind=bound.kind), header


def evaluation_key(
    *, header: dict[str, Any], fingerprint: str, kind: str, code: str | None = None
) -> str:
    """The cache key of a DETERMINISTIC evaluation whose report header would be
    ``header`` (evaluator, determinism, disclosure, config, subject, suite, seed)."""
    return sha256_digest(
        canonical_bytes(
            {
                "schema": EVALUATION_CACHE_SCHEMA,
                "header": header,
                "fingerprint": fingerprint,
                "kind": kind,
                "code": code or code_digest(),
            }
        )
    )


def entry_for(root: Path, key: str, evidence_digest: str) -> Path | None:
    """The evidence cache's entry under ``key`` when it holds the evidence of
    ``evidence_digest`` (the one this replicate was verified with), else None."""
    entry = lookup(root, key)
    if entry is None:
        return None
    try:
        stored = json.loads((entry / "entry.json").read_bytes())["evidence_digest"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return entry if stored == evidence_digest else None


def _where(entry: Path, key: str) -> Path:
    return entry / _DIR / key.removeprefix("sha256:")


def store(entry: Path, key: str, evaluation: HarnessEvaluation) -> None:
    """Keep ``evaluation``'s report files under ``key`` in the cache ``entry`` (linked,
    read-only; whole or not at all; a failure is a warning)."""
    final = _where(entry, key)
    if final.exists():
        return
    building = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        record: dict[str, Any] = {"key": key}
        base = evaluation.report_path.parent  # the released report's directory
        for role, path in (
            ("restricted", evaluation.restricted_path),
            ("released", evaluation.report_path),
        ):
            target = building / role  # named by role: never a name written in place
            share_file(os.fspath(path), os.fspath(target))
            os.chmod(target, 0o444)  # the tree's report is this inode too
            relative = path.relative_to(base).as_posix()
            record[role] = {"path": relative, "sha256": _file_sha256(target)}
        fd = os.open(building / _RECORD, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            os.write(fd, canonical_bytes(record) + b"\n")
        finally:
            os.close(fd)
        try:
            os.rename(building, final)
        except OSError:
            if not final.exists():
                raise
            shutil.rmtree(building, ignore_errors=True)  # stored by another run first
    except OSError as error:
        shutil.rmtree(building, ignore_errors=True)
        _log.warning("evaluation cache: could not store %s (%s)", key, error.strerror or error)


def load(
    entry: Path, key: str, directory: Path, header: dict[str, Any]
) -> HarnessEvaluation | None:
    """The evaluation stored under ``key``, linked into ``directory`` and rebuilt, or
    None (a miss: see the module docstring)."""
    where = _where(entry, key)
    try:
        record = json.loads((where / _RECORD).read_bytes())
        files = {role: record[role] for role in ("restricted", "released")}
        paths = [files[role]["path"] for role in ("restricted", "released")]
        if any(p in ("", ".", "..") for path in paths for p in path.split("/")):
            raise ValueError(f"{where}: report paths {paths}")
        raw = {role: (where / role).read_bytes() for role in files}
        for role, data in raw.items():
            if "sha256:" + hashlib.sha256(data).hexdigest() != files[role]["sha256"]:
                raise ValueError(f"{where / role}: not the stored report")
        restricted = RestrictedEvaluationReport.model_validate_json(raw["restricted"])
        released = HarnessEvaluationReport.model_validate_json(raw["released"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        _log.warning("evaluation cache: entry %s refused (%s); evaluating", key, error)
        return None
    seen = restricted.evaluation.model_dump(mode="json")
    if released.evaluation != restricted.evaluation or any(
        seen.get(field) != value for field, value in header.items()
    ):
        _log.warning("evaluation cache: entry %s is another evaluation's; evaluating", key)
        return None
    targets = [directory / path for path in paths]
    if any(os.path.lexists(target) for target in targets):
        return None  # a report is there already: the evaluation checks it against its own
    try:
        for role, target in zip(("restricted", "released"), targets, strict=True):
            target.parent.mkdir(parents=True, exist_ok=True)  # restricted first
            share_file(os.fspath(where / role), os.fspath(target))
    except OSError:
        return None  # evicted meanwhile: evaluated, and what was linked is its bytes
    head = restricted.evaluation
    result = None
    if head.attested_tasks:
        result = EvaluationResult(
            evaluator=head.evaluator,
            evaluator_fingerprint=head.evaluator_fingerprint,
            determinism=head.determinism,
            catalog=head.catalog,
            subject_digest=head.subject_digest,
            suite_digest=head.suite_digest,
            assignment_digest=head.assignment_digest,
            seed=head.seed,
            metrics=restricted.metrics,
        )
    return HarnessEvaluation(result, released, restricted, targets[1], targets[0])


def _file_sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
