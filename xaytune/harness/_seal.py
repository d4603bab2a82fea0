"""The seal line, as an attempt (and a recovery) writes it: one builder, so the
writers cannot spell a seal two ways."""

from __future__ import annotations

from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.harness.store import SEAL_SCHEMA
from xaytune.harness.trajectory import WRITER

__all__ = ["seal_line"]


def seal_line(
    *,
    number: int,
    status: str,
    outcome: dict[str, Any] | None,
    spend: dict[str, int],
    events: int,
    bytes: int,
    head: str,
    record_digest: str,
    recovered: bool,
) -> bytes:
    """A seal (status, outcome, spend, the chain's facts, the record's digest) as
    its canonical line, newline-terminated. Validated on the way out of the store
    (:class:`~xaytune.harness.store.AttemptSeal`), not in."""
    seal = {
        "schema": SEAL_SCHEMA,
        "attempt": number,
        "status": status,
        "outcome": outcome,
        "spend": spend,
        "trajectory": {"writer": WRITER, "events": events, "bytes": bytes, "head": head},
        "attempt_record": record_digest,
        "recovered": recovered,
    }
    return canonical_bytes(seal) + b"\n"
