"""Seeded samples and task assignments: which tasks a seed selects, in order.

Task ids are ranked by sha256(seed, suite digest, id), so the selection is the same on
every machine and every library version (no library RNG stream); the
``TaskAssignment`` records suite, sampling, seed, the ordered ids and its own digest.
The specification imports these from :mod:`xaytune.core.domain.benchmark`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from xaytune.core.canonical import MAX_SAFE_INTEGER, fingerprint
from xaytune.core.domain.tasks import BenchmarkSuite
from xaytune.core.errors import SuiteError

__all__ = ["ASSIGNMENT_ALGORITHM", "SeededSample", "TaskAssignment", "record_assignment"]

# Ranks task ids by sha256(seed, suite digest, id): no library RNG stream, so the
# selection is the same on every machine and every library version.
ASSIGNMENT_ALGORITHM = "sha256-rank/v1"

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class SeededSample(BaseModel):
    """Which tasks a seed selects: ``count`` tasks, or every task when None."""

    model_config = _FROZEN

    count: int | None = None

    @model_validator(mode="after")
    def _positive(self) -> SeededSample:
        if self.count is not None and self.count < 1:
            raise ValueError("SeededSample.count must be at least 1 (or None for every task)")
        return self


class TaskAssignment(BaseModel):
    """The tasks a (suite, sampling, seed) selects, in order, and its own digest."""

    model_config = _FROZEN

    suite_name: str
    suite_digest: str
    sampling: SeededSample
    algorithm: str
    seed: int
    task_ids: tuple[str, ...]
    digest: str
    _positions: dict[str, int] = PrivateAttr(default_factory=dict)

    def model_post_init(self, __context: Any) -> None:
        expected = fingerprint(self.model_dump(mode="json", exclude={"digest"}))
        if self.digest != expected:
            raise SuiteError(
                "digest-mismatch", f"assignment for seed {self.seed}: digest is not its contents'"
            )
        self._positions = {task_id: i for i, task_id in enumerate(self.task_ids)}

    def position(self, task_id: str) -> int | None:
        """Position 0..n-1 of ``task_id``, or None when it is not assigned."""
        return self._positions.get(task_id)


def _rank_key(seed: int, digest: str, task_id: str) -> bytes:
    return hashlib.sha256(f"{seed}\x1f{digest}\x1f{task_id}".encode()).digest()


def record_assignment(
    suite: BenchmarkSuite, sampling: SeededSample, *, seed: int
) -> TaskAssignment:
    """Select tasks by ranking ids on sha256(seed, suite digest, id); record the result."""
    if isinstance(seed, bool) or not isinstance(seed, int) or abs(seed) > MAX_SAFE_INTEGER:
        raise SuiteError("bad-seed", f"seed {seed!r} is not an integer within 2^53")
    count = len(suite.tasks) if sampling.count is None else sampling.count
    if count > len(suite.tasks):
        raise SuiteError(
            "sample-too-large",
            f"sampling asks for {count} tasks; suite {suite.name} has {len(suite.tasks)}",
        )
    # _rank_key of each id (ids are unique in a suite), spelled in one comprehension:
    # verification recomputes the assignment of every run it checks.
    prefix, ids, sha256 = f"{seed}\x1f{suite.digest}\x1f", suite.task_ids, hashlib.sha256
    rank = {task_id: sha256((prefix + task_id).encode()).digest() for task_id in ids}
    ranked = sorted(ids, key=rank.__getitem__)
    facts = {
        "suite_name": suite.name,
        "suite_digest": suite.digest,
        "sampling": sampling.model_dump(mode="json"),
        "algorithm": ASSIGNMENT_ALGORITHM,
        "seed": seed,
        "task_ids": ranked[:count],
    }
    return TaskAssignment(**facts, digest=fingerprint(facts))
