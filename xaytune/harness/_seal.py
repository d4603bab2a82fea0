"""The seal, as an attempt (and a recovery) writes it and as verification expects it:
one builder, so the seal cannot be spelled two ways."""

from __future__ import annotations

from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.harness.store import SEAL_SCHEMA
from xaytune.harness.trajectory import WRITER

__all__ = ["seal_facts", "seal_line"]


def seal_facts(
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
) -> dict[str, Any]:
    """A seal as a JSON object: status, outcome, spend, the chain's facts, the record's
    digest. Validated on the way out of the store
    (:class:`~xaytune.harness.store.AttemptSeal`), not in."""
    return {
        "schema": SEAL_SCHEMA,
        "attempt": number,
        "status": status,
        "outcome": outcome,
        "spend": spend,
        "trajectory": {"writer": WRITER, "events": events, "bytes": bytes, "head": head},
        "attempt_record": record_digest,
        "recovered": recovered,
    }


def seal_line(**facts: Any) -> bytes:
    """The seal of :func:`seal_facts` as its line: canonical, newline-terminated."""
    return canonical_bytes(seal_facts(**facts)) + b"\n"
