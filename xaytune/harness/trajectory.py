"""The spec's import path for the v1 hash-chained trajectory writer (DESIGN.md, "Names
the specification leaves open"): ``from xaytune.harness.trajectory import WRITER``.

The writer lives in the evidence room, :mod:`xaytune.harness.evidence.trajectory`.
"""

from xaytune.harness.evidence.trajectory import WRITER, ChainFacts, TrajectoryWriter, verify_chain

__all__ = ["WRITER", "ChainFacts", "TrajectoryWriter", "verify_chain"]
