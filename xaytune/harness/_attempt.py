"""One attempt on disk while it runs: claim, record, trajectory, seal."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.spec import AgentExecutionSpec
from xaytune.harness.store import (
    ATTEMPT_FILE,
    SEAL_FILE,
    Outcome,
    Spend,
    StoredAttempt,
    atomic_write,
    claim_attempt,
    durable_dir,
    fsync_file,
    seal_bytes,
    write_file,
)
from xaytune.harness.trajectory import TRAJECTORY_FILE, WRITER, TrajectoryWriter, verify_chain

__all__ = [
    "SPEC_FILE",
    "AttemptSession",
    "PendingSeal",
    "record_bytes",
    "recover_open_attempt",
    "spec_bytes",
    "write_spec",
]

SPEC_FILE = "spec.json"


def spec_bytes(spec: AgentExecutionSpec) -> bytes:
    """A spec as stored beside its task's attempts: the bytes its fingerprint covers."""
    return spec.canonical + b"\n"


def write_spec(task_dir: Path | str, spec: AgentExecutionSpec) -> None:
    """Store the spec a task runs under, once; a different spec there is refused."""
    path = os.path.join(task_dir, SPEC_FILE)
    raw = spec_bytes(spec)
    try:
        with open(path, "rb") as handle:
            stored = handle.read()
    except FileNotFoundError:
        stored = None
    if stored is not None:
        if stored != raw:
            raise EvidenceError(
                "resume-mismatch",
                f"{path}: the task was run under another spec; use a fresh output directory",
            )
        return
    try:
        atomic_write(path, raw, durable=False)
    except FileNotFoundError:  # the task directory is not there yet
        os.makedirs(task_dir, exist_ok=True)
        atomic_write(path, raw, durable=False)


def record_bytes(number: int, attribution: dict[str, Any], model: bytes) -> bytes:
    """``attempt.json``: the canonical record, newline-terminated.

    ``model`` is the canonical bytes of the serving identity (computed once per
    model by the runner). The record's keys are written in their canonical (sorted)
    order around canonical values, so the bytes are ``canonical_bytes(record)``.
    """
    return b"".join(
        (
            b'{"attempt":%d,"attribution":' % number,
            canonical_bytes(attribution),
            b',"model":',
            model,
            b',"schema":"xaytune.attempt/v1","writer":',
            _WRITER_JSON,
            b"}\n",
        )
    )


_WRITER_JSON = canonical_bytes(WRITER)


@dataclass(frozen=True, slots=True)
class PendingSeal:
    """A seal written aside, not yet in place: the attempt is still open."""

    staged: str
    final: str
    digest: str

    def commit(self, *, durable: bool) -> None:
        """Rename the seal into place (and make the rename durable when ``durable``)."""
        os.replace(self.staged, self.final)
        durable_dir(os.path.dirname(self.final), durable=durable)


class AttemptSession:
    """The live attempt of a task-bound spec (or an in-memory one for unbound specs)."""

    def __init__(self, spec: AgentExecutionSpec, *, durable: bool) -> None:
        self.spec = spec
        self.durable = durable
        self.number = 0
        self.path: Path | None = None
        self._dir = ""
        self._writer: TrajectoryWriter | None = None
        self._record_digest = ""
        self.events = 0
        self.head = ""

    def open(self, model: dict[str, Any], model_bytes: bytes | None = None) -> None:
        """Claim the next attempt and write its record; ``model`` is the serving identity
        (``model_bytes`` its canonical bytes, when the caller has them)."""
        binding = self.spec.binding
        output = self.spec.output_uri
        if binding is None or output is None:
            return  # a plain (unbound) spec or one with no output: nothing is written
        write_spec(output, self.spec)
        number, path = claim_attempt(output)
        attribution = {
            "suite_digest": binding.suite_digest,
            "assignment_digest": binding.assignment_digest,
            "task_id": binding.task_id,
            "position": binding.position,
            "seed": binding.seed,
            "replicate": self.spec.replicate,
            "spec_fingerprint": self.spec.fingerprint,
        }
        if model_bytes is None:
            model_bytes = canonical_bytes(model)
        raw = record_bytes(number, attribution, model_bytes)
        directory = os.fspath(path)
        atomic_write(os.path.join(directory, ATTEMPT_FILE), raw, durable=False)
        self.number, self.path, self._dir = number, path, directory
        self._record_digest = sha256_digest(raw)
        self._writer = TrajectoryWriter(
            os.path.join(directory, TRAJECTORY_FILE), genesis=self._record_digest
        )

    def event(self, kind: str, payload: dict[str, Any]) -> None:
        if self._writer is not None:
            self._writer.append(kind, payload)
        self.events += 1

    def seal(self, *, outcome: Outcome | None, spend: Spend) -> str | None:
        """Append the end event and seal at once; returns the seal digest (None if unwritten)."""
        pending = self.prepare_seal(outcome=outcome, spend=spend)
        if pending is None:
            return None
        pending.commit(durable=self.durable)
        return pending.digest

    def prepare_seal(self, *, outcome: Outcome | None, spend: Spend) -> PendingSeal | None:
        """Append the end event and write the seal aside; :meth:`PendingSeal.commit` seals.

        When durable, every file the seal refers to is flushed to disk here, and the
        seal file itself before it is renamed into place: a crash leaves an open
        attempt, never a torn sealed one. A group commit (see ``GroupCommit``) writes
        these without fsync and makes a whole batch durable with two syncs.
        """
        status = "complete" if outcome is not None else "partial"
        outcome_dict = None if outcome is None else outcome.model_dump(mode="json")
        spend_dict = spend.as_dict()
        self.event("end", {"status": status, "outcome": outcome_dict, "spend": spend_dict})
        writer = self._writer
        if writer is None or self.path is None:
            return None
        directory = self._dir
        writer.flush(durable=self.durable)
        writer.close()
        if self.durable:
            fsync_file(os.path.join(directory, ATTEMPT_FILE))
            fsync_file(os.path.join(os.path.dirname(os.path.dirname(directory)), SPEC_FILE))
        seal = {
            "schema": "xaytune.attempt-seal/v1",
            "attempt": self.number,
            "status": status,
            "outcome": outcome_dict,
            "spend": dict(spend_dict),
            "trajectory": {
                "writer": WRITER,
                "events": writer.count,
                "bytes": writer.bytes,
                "head": writer.head,
            },
            "attempt_record": self._record_digest,
            "recovered": False,
        }
        raw = seal_bytes(seal)
        final = os.path.join(directory, SEAL_FILE)
        staged = os.path.join(directory, f".{SEAL_FILE}.staged")
        write_file(staged, raw, durable=self.durable)
        return PendingSeal(staged=staged, final=final, digest=sha256_digest(raw))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def recover_open_attempt(attempt: StoredAttempt, *, durable: bool = True) -> None:
    """Seal an open attempt left by a crash as ``partial`` and ``recovered``.

    Nothing is deleted or rewritten: the spend is what its whole events record (or
    what its end event says, when it ended but was never sealed: its outcome is then
    not attested), an unterminated last fragment is left in place and outside the
    sealed bytes, and the seal says ``recovered: true``.
    """
    record_raw = (attempt.path / ATTEMPT_FILE).read_bytes()
    genesis = sha256_digest(record_raw)
    data = (
        (attempt.path / TRAJECTORY_FILE).read_bytes()
        if (attempt.path / TRAJECTORY_FILE).exists()
        else b""
    )
    facts = verify_chain(data, genesis=genesis, where=str(attempt.path), allow_torn_tail=True)
    last = facts.last_event
    if last is not None and last.get("type") == "end":
        # It ended but the crash came before its seal: its outcome was never attested,
        # so it is sealed partial like any other crash, with the spend it recorded.
        spend = Spend(**last["v"]["spend"])
    else:
        spend = _spend_from_events(data[: facts.bytes])
    seal = {
        "schema": "xaytune.attempt-seal/v1",
        "attempt": attempt.number,
        "status": "partial",
        "outcome": None,
        "spend": spend.as_dict(),
        "trajectory": {
            "writer": WRITER,
            "events": facts.count,
            "bytes": facts.bytes,
            "head": facts.head,
        },
        "attempt_record": genesis,
        "recovered": True,
    }
    atomic_write(attempt.path / SEAL_FILE, seal_bytes(seal), durable=durable)


def _spend_from_events(data: bytes) -> Spend:
    """The spend that whole events record (a crashed attempt's lower bound)."""
    spend = Spend()
    for line in data.splitlines():
        event = json.loads(line)
        payload = event["v"]
        if event["type"] == "model_reply":
            spend.turns += 1
            spend.model_calls += 1
            spend.retries += payload["retries"]
            spend.input_tokens += payload["usage"]["input"]
            spend.output_tokens += payload["usage"]["output"]
            spend.peak_context_tokens = max(
                spend.peak_context_tokens, payload["usage"]["input"] + payload["usage"]["output"]
            )
            spend.model_time_us += payload["time_us"]
        elif event["type"] == "model_error":
            spend.retries += payload["retries"]
            spend.model_time_us += payload["time_us"]
        elif event["type"] == "tool_result":
            spend.tool_calls += 1
            spend.tool_errors += 0 if payload["ok"] else 1
            spend.tool_time_us += payload["time_us"]
    return spend
