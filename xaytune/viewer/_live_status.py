"""What a live viewer says about a tree that may be being written: a read-only scan.

:class:`TreeScan` polls a run tree without ever writing to it or taking its lock:

- every regular file's size and modification time (one ``scandir`` per directory; the
  tree's lock file excluded, its mtime is the writer's business). Its digest changes
  when anything in the tree changes: the live viewer rebuilds its site then;
- each attempt file's state, read from its last line only: ``complete`` or ``partial``
  (the last line is a whole seal, ``{"attempt":...}`` ending in a newline), otherwise
  ``open`` (still being appended to, or cut short by a crash). A half-written last line
  is an open attempt, never an error. A file is read again only when its size or
  mtime changed;
- the comparisons that have *landed*: a manifest marked complete that records the
  digest of a ``report.json`` whose bytes have that digest. A report written but not
  yet recorded (the run is writing its final manifest) is not shown yet.

These counts are what the files say, not a verification: the viewer's pages verify
each attempt as they are written (:mod:`xaytune.viewer._attempts`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xaytune.comparison.compare import ComparisonReport
from xaytune.core.canonical import sha256_digest
from xaytune.harness.evidence.attempt_file import ATTEMPT_SUFFIX, SEAL_PREFIX

__all__ = ["LandedComparison", "ReplicateCount", "TreeScan", "attempt_state"]

LOCK_FILE = ".xaytune.lock"  # xaytune.experiment.tree.layout.LOCK_FILE (never read or written here)
MANIFEST = "manifest.json"
# <model prefix>candidates/<name>/seed-<s>/evidence/tasks/<position>/<NNN>.jsonl
_ATTEMPT = re.compile(
    r"(?:models/(?P<model>[^/]+)/)?candidates/(?P<candidate>[^/]+)/seed-(?P<seed>-?\d+)"
    r"/evidence/tasks/\d+/\d+" + re.escape(ATTEMPT_SUFFIX)
)
# comparison/report.json (one challenger) or comparison/<label>/report.json (several).
_REPORT = re.compile(r"comparison(?:/[^/]+)?/report\.json")
_TAIL = 64 * 1024


def attempt_state(path: str | os.PathLike[str]) -> str:
    """``complete``, ``partial`` (its last line is a whole seal) or ``open``."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return "open"
            tail, end = b"", size
            while True:  # read back until the line before the last one ends
                start = max(0, end - _TAIL)
                handle.seek(start)
                tail = handle.read(end - start) + tail
                end = start
                if not tail.endswith(b"\n"):
                    return "open"  # an append in progress (or a crash mid-line)
                cut = tail.rfind(b"\n", 0, len(tail) - 1)
                if cut >= 0 or start == 0:
                    break
    except OSError:
        return "open"  # vanished or unreadable mid-scan: nothing sealed is claimed
    line = tail[cut + 1 :]
    if not line.startswith(SEAL_PREFIX):
        return "open"
    try:
        seal = json.loads(line)
    except ValueError:
        return "open"
    status = seal.get("status") if isinstance(seal, dict) else None
    return status if status in ("complete", "partial") else "open"


@dataclass(frozen=True, slots=True)
class ReplicateCount:
    """The attempt files of one candidate under one seed (and model, in a models
    run), by state."""

    model: str | None
    candidate: str
    seed: int
    complete: int
    partial: int
    open: int

    @property
    def sealed(self) -> int:
        return self.complete + self.partial


@dataclass(frozen=True, slots=True)
class LandedComparison:
    """A comparison whose report the tree's complete manifest records: where, its
    sides, its relation and each objective's verdict."""

    where: str
    a: str
    b: str
    relation: str
    verdicts: tuple[tuple[str, str], ...]


@dataclass
class TreeScan:
    """Polls ``root``; :meth:`poll` returns True when anything in it changed."""

    root: Path
    digest: str = ""
    counts: tuple[ReplicateCount, ...] = ()
    comparisons: tuple[LandedComparison, ...] = ()
    _files: dict[str, tuple[int, int]] = field(default_factory=dict)
    _states: dict[str, str] = field(default_factory=dict)

    def poll(self) -> bool:
        files = _listing(self.root)
        digest = hashlib.sha256(
            json.dumps(sorted(files.items()), separators=(",", ":")).encode()
        ).hexdigest()
        if digest == self.digest:
            return False
        states = {}
        for relative, stat in files.items():
            if _ATTEMPT.fullmatch(relative) is None:
                continue
            known = self._states.get(relative)
            unchanged = known is not None and self._files.get(relative) == stat
            states[relative] = known if unchanged else attempt_state(self.root / relative)
        self._files, self._states, self.digest = files, states, digest
        self.counts = _counts(states)
        self.comparisons = _landed(self.root)
        return True

    def status(self) -> dict[str, Any]:
        """The counts and landed comparisons as JSON-ready data."""
        return {
            "replicates": [
                {
                    "model": c.model,
                    "candidate": c.candidate,
                    "seed": c.seed,
                    "sealed": c.sealed,
                    "complete": c.complete,
                    "partial": c.partial,
                    "open": c.open,
                }
                for c in self.counts
            ],
            "sealed": sum(c.sealed for c in self.counts),
            "partial": sum(c.partial for c in self.counts),
            "open": sum(c.open for c in self.counts),
            "comparisons": [
                {
                    "where": c.where,
                    "a": c.a,
                    "b": c.b,
                    "relation": c.relation,
                    "verdicts": [{"metric": m, "verdict": v} for m, v in c.verdicts],
                }
                for c in self.comparisons
            ],
        }


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every regular file under ``root`` (relative, POSIX) -> (size, mtime in ns); a
    link is never followed, a directory that vanishes mid-walk is skipped."""
    found: dict[str, tuple[int, int]] = {}
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(root / relative if relative else root) as entries:
                for entry in entries:
                    name = f"{relative}/{entry.name}" if relative else entry.name
                    try:
                        if entry.is_symlink():
                            continue
                        if entry.is_dir():
                            pending.append(name)
                        elif entry.is_file() and name != LOCK_FILE:
                            stat = entry.stat()
                            found[name] = (stat.st_size, stat.st_mtime_ns)
                    except OSError:
                        continue
        except OSError:
            continue
    return found


def _counts(states: dict[str, str]) -> tuple[ReplicateCount, ...]:
    tally: dict[tuple[str | None, str, int], dict[str, int]] = {}
    for relative, state in states.items():
        match = _ATTEMPT.fullmatch(relative)
        assert match is not None
        key = (match["model"], match["candidate"], int(match["seed"]))
        slot = tally.setdefault(key, {"complete": 0, "partial": 0, "open": 0})
        slot[state] += 1
    return tuple(
        ReplicateCount(model, candidate, seed, **slot)
        for (model, candidate, seed), slot in sorted(
            tally.items(), key=lambda item: (item[0][0] or "", item[0][2], item[0][1])
        )
    )


def _manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None  # absent, or replaced as we read (an atomic write): the next poll
    return data if isinstance(data, dict) else None


def _landed(root: Path) -> tuple[LandedComparison, ...]:
    """The comparisons recorded by a complete manifest whose report.json has the
    recorded digest (the root's, and each model's in a models run)."""
    manifests = [("", root / MANIFEST)]
    top = _manifest(root / MANIFEST)
    models = top.get("models") if top else None
    if isinstance(models, dict):
        manifests += [(f"models/{m}/", root / "models" / m / MANIFEST) for m in sorted(models)]
    landed = []
    for prefix, path in manifests:
        manifest = top if not prefix else _manifest(path)
        if manifest is None or manifest.get("complete") is not True:
            continue
        reports = manifest.get("reports")
        for relative, digest in sorted(reports.items() if isinstance(reports, dict) else ()):
            if _REPORT.fullmatch(relative) is None:
                continue
            try:
                data = (path.parent / relative).read_bytes()
            except OSError:
                continue
            if sha256_digest(data) != digest:
                continue  # not the report the manifest recorded: never shown as landed
            try:
                report = ComparisonReport.model_validate_json(data)
            except ValueError:
                continue
            verdicts = tuple(
                (name, metric.verdict)
                for name, metric in sorted(report.metrics.items())
                if metric.objective is not None
            )
            where = prefix + relative.removesuffix("/report.json")
            landed.append(
                LandedComparison(where, report.a.name, report.b.name, report.relation, verdicts)
            )
    return tuple(landed)
