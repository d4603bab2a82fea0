"""The evidence room: the store, attempt files, seals, group commit, rebuild,
verification and publication of a run's evidence.

``xaytune.harness.evidence`` is the specification's import path for the store and
the assembled evidence; the modules below it hold one idea each.
"""

from xaytune.harness.evidence.verify import (
    EVIDENCE_SCHEMA,
    AttemptEvidence,
    EvidenceEntry,
    HarnessEvidenceStore,
    HarnessRunEvidence,
    assemble_evidence,
    verify_run_evidence,
)

__all__ = [
    "EVIDENCE_SCHEMA",
    "AttemptEvidence",
    "EvidenceEntry",
    "HarnessEvidenceStore",
    "HarnessRunEvidence",
    "assemble_evidence",
    "verify_run_evidence",
]
