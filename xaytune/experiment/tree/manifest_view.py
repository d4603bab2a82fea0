"""A written manifest as the auditor reads it: its shape checked, its paths kept inside.

``python -m xaytune.verify`` trusts nothing in a tree, the manifest included: a
manifest that is not JSON, not of this schema, incomplete, or names a path outside
its own directory is refused (``bad-manifest``, ``incomplete-run``) in one line
naming the file.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xaytune.core import limits
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError

__all__ = ["ManifestView", "RecomparisonView", "ReplicateView", "inside", "read_manifest"]

_VIEW = ConfigDict(frozen=True, extra="ignore", strict=True)


class SuiteView(BaseModel):
    model_config = _VIEW

    digest: str
    builtin: str | None = None
    path: str | None = None


class CandidateView(BaseModel):
    model_config = _VIEW

    name: str
    harness_fingerprint: str


class ReplicateView(BaseModel):
    model_config = _VIEW

    path: str
    seed: int
    assignment_digest: str
    evidence_digests: tuple[str, ...]


class RecomparisonView(BaseModel):
    """A comparison made again later (``python -m xaytune.compare``): where, and the
    comparison config it was made under."""

    model_config = _VIEW

    path: str
    comparison: dict[str, Any]


class ManifestView(BaseModel):
    """What the auditor reads of a manifest (the rest is for people)."""

    model_config = _VIEW

    schema_: Literal["xaytune.experiment-manifest/v1"] = Field(alias="schema")
    complete: bool
    suite: SuiteView
    candidates: dict[str, CandidateView]
    replicates: tuple[ReplicateView, ...] = ()
    reports: dict[str, str] = {}
    config: dict[str, Any] = {}
    recomparisons: tuple[RecomparisonView, ...] = ()
    parts: dict[str, Any] = {}
    durability: str | None = None
    timing_environment: str | None = None
    versions: dict[str, str] | None = None

    def harness_of(self, name: str) -> str | None:
        """The harness fingerprint of the candidate called ``name``, if any."""
        for candidate in self.candidates.values():
            if candidate.name == name:
                return candidate.harness_fingerprint
        return None


def read_manifest(path: Path) -> ManifestView:
    """The manifest at ``path``: ``bad-manifest`` unless it reads as one, and
    ``incomplete-run`` unless its run finished."""
    try:
        # Bounded before parsing (xaytune.core.limits): size, depth, integer digits.
        size = limits.MAX_JSON_FILE_BYTES
        raw = limits.read_bounded(path, size, size_name="MAX_JSON_FILE_BYTES")
        limits.check_json_text(raw, what=str(path), max_size=size, size_name="MAX_JSON_FILE_BYTES")
        view = ManifestView.model_validate_json(raw)
    except OSError as error:
        raise XaytuneError("bad-manifest", f"{path}: unreadable ({error.strerror})") from None
    except limits.LimitError as breach:
        raise XaytuneError("bad-manifest", breach.message) from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise XaytuneError(
            "bad-manifest", f"{path}: {where or 'the file'}: {first['msg']}"
        ) from None
    except (ValueError, RecursionError):
        raise XaytuneError("bad-manifest", f"{path}: not a JSON manifest") from None
    if not view.complete:
        raise XaytuneError(
            "incomplete-run",
            f"{path}: the run did not finish (complete: false); resume it, then verify",
        )
    return view


def inside(base: Path, name: str) -> Path | None:
    """``base / name`` when ``name`` is a relative path that stays under ``base``
    (no absolute path, no ``..``, no NUL), else None."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts or "\x00" in name:
        return None
    return base.joinpath(*parts)


def recorded_suite(view: ManifestView, path: Path) -> SuiteSource:
    """The suite a manifest (at ``path``) records, opened where it says and pinned by
    its digest: ``bad-manifest``, ``suite-mismatch``; ``OSError`` when unreadable."""
    from xaytune.suites import builtin_suite_path

    suite = view.suite
    if suite.builtin is not None:
        location = builtin_suite_path(suite.builtin)
    elif suite.path is not None:
        location = Path(suite.path)
    else:
        raise XaytuneError("bad-manifest", f"{path}: suite: neither builtin nor path")
    source = SuiteSource(location)
    if source.digest != suite.digest:
        raise XaytuneError(
            "suite-mismatch", f"suite at {location} is not the one {path} records ({suite.digest})"
        )
    return source
