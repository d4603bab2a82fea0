"""The order candidates run in within each seed: a seeded permutation, recorded.

Time metrics (end_to_end_time, model_time, tool_time) drift within a run: caches warm,
the machine settles, a server's queue drains. Running the candidates in one fixed order
on every seed gives that drift to the same side every time (issue 30: real identical
harnesses favoured the second candidate in 9 of 9 seeds). Each seed instead runs its
candidates in an order that is a permutation drawn from sha256 of the seed and the
candidates' harness fingerprints (by label, as the intent records them): deterministic,
the same for a resumed or extended tree (the fingerprints do not change when seeds are
added, unlike the intent's digest), and different from seed to seed. The manifest
records it (``candidate_order``) and ``python -m xaytune.verify`` recomputes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes

__all__ = ["ORDER_METHOD", "candidate_order", "order_problem", "order_record"]

ORDER_METHOD = "sha256-permutation/v1"


def _rank(seed: int, fingerprints: Mapping[str, str], label: str) -> bytes:
    return hashlib.sha256(
        canonical_bytes(
            {
                "method": ORDER_METHOD,
                "seed": seed,
                "candidates": dict(fingerprints),
                "label": label,
            }
        )
    ).digest()


def candidate_order(seed: int, fingerprints: Mapping[str, str]) -> tuple[str, ...]:
    """The labels of ``fingerprints`` (label -> harness fingerprint) in the order they
    run on ``seed``: sorted by ``sha256(canonical {method, seed, candidates, label})``,
    a uniformly random permutation for every seed that no one chose."""
    return tuple(sorted(fingerprints, key=lambda label: _rank(seed, fingerprints, label)))


def order_record(seeds: Iterable[int], fingerprints: Mapping[str, str]) -> dict[str, Any]:
    """What the manifest records: the method and each seed's order."""
    return {
        "method": ORDER_METHOD,
        "by_seed": {str(seed): list(candidate_order(seed, fingerprints)) for seed in seeds},
    }


def order_problem(manifest: Path, seeds: Iterable[int]) -> str | None:
    """``order-mismatch`` when ``manifest`` records a candidate order that is not the
    one these seeds and the candidates' harness fingerprints it records give (None
    when it is, or when the manifest, written before orders were recorded, has none)."""
    try:
        recorded = json.loads(manifest.read_bytes())
        order = recorded.get("candidate_order")
        fingerprints = {
            label: candidate["harness_fingerprint"]
            for label, candidate in recorded["candidates"].items()
        }
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None  # an unreadable manifest is named by the manifest's own check
    if order is None or order == order_record(seeds, fingerprints):
        return None
    return "order-mismatch: candidate_order is not the seeded order of its seeds and candidates"
