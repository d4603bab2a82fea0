"""Resuming a task: what its store already holds, recovered before anything runs.

``run_many(resume=True)`` asks :func:`prepare_resume` of each spec first: every
sealed attempt must be one the store's seal journal committed (else the store was
tampered with: ``missing-seal``, ``journal-mismatch``, ...), an open attempt left by a
crash is sealed with its committed seal or, never committed, recovered ``partial``
(spend kept), and an attempt run from another spec is refused (``resume-mismatch``).
A task with a complete attempt of this spec is skipped; new attempts are added beside
the old ones, none replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import EvidenceError, ExecutionError
from xaytune.harness.evidence.attempt import recover_open_attempt
from xaytune.harness.evidence.attempt_file import attempt_name, split_attempt
from xaytune.harness.evidence.journal import SealJournal, check_journaled, missing_seal
from xaytune.harness.evidence.store import (
    AttemptRecord,
    AttemptSeal,
    StoredAttempt,
    attempt_paths,
    remove_empty_claim,
)
from xaytune.harness.spec import AgentExecutionSpec

__all__ = ["prepare_resume"]


def prepare_resume(spec: AgentExecutionSpec, journal: SealJournal | None) -> bool:
    """Recover open attempts; True when a complete attempt of this spec exists.

    Every sealed attempt must be one the store's journal committed; an open one
    is sealed with its committed seal or, never committed, recovered partial.
    """
    if spec.output_uri is None or spec.binding is None or journal is None:
        return False
    position, task = spec.binding.position, spec.binding.task_id
    attested = False
    listing = attempt_paths(spec.output_uri)
    gone = journal.numbers.get(position, set()) - {number for number, _ in listing}
    if gone:  # committed, and its file is gone: never run again in its place
        number = min(gone)
        path = os.path.join(spec.output_uri, attempt_name(number))
        raise missing_seal(path, task, number, journal.committed[(position, number)])
    for number, path in listing:
        attempt = StoredAttempt(position, number, Path(path))
        data = attempt.read()  # once: recovery appends to these very bytes
        listed = journal.committed.get((position, number))
        if listed is None and remove_empty_claim(attempt, data):
            continue  # a claim killed before its record
        try:
            layout = split_attempt(data, path)
        except EvidenceError:  # committed, yet not even its record is there
            raise missing_seal(path, task, number, str(listed)) from None
        if layout.sealed:
            check_journaled(
                journal.committed,
                position=position,
                number=number,
                seal_digest=sha256_digest(data[layout.events_end :]),
                where=path,
                task=task,
            )
        else:
            data = recover_open_attempt(attempt, data=data, journal=journal)
            layout = split_attempt(data, path)
        seal = AttemptSeal.model_validate_json(data[layout.events_end :])
        record = AttemptRecord.model_validate_json(data[layout.spec_end : layout.record_end])
        if record.attribution.spec_fingerprint != spec.fingerprint:
            raise ExecutionError(
                "resume-mismatch",
                f"task {task}: attempt {attempt.path} was run from another spec "
                f"({record.attribution.spec_fingerprint}); resume needs the same config",
            )
        attested = attested or seal.status == "complete"
    return attested
