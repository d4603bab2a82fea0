"""One attempt on disk while it runs: claim, record, trajectory, seal."""

from __future__ import annotations

import json
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
)
from xaytune.harness.trajectory import TRAJECTORY_FILE, WRITER, TrajectoryWriter, verify_chain

__all__ = ["SPEC_FILE", "AttemptSession", "recover_open_attempt", "spec_bytes", "write_spec"]

SPEC_FILE = "spec.json"


def spec_bytes(spec: AgentExecutionSpec) -> bytes:
    """Canonical bytes of a spec as stored beside its task's attempts (no output_uri)."""
    return canonical_bytes(spec.model_dump(mode="json", by_alias=True, exclude={"output_uri"})) + (
        b"\n"
    )


def write_spec(task_dir: Path, spec: AgentExecutionSpec) -> None:
    """Store the spec a task runs under, once; a different spec there is refused."""
    path = task_dir / SPEC_FILE
    raw = spec_bytes(spec)
    if path.exists():
        if path.read_bytes() != raw:
            raise EvidenceError(
                "resume-mismatch",
                f"{path}: the task was run under another spec; use a fresh output directory",
            )
        return
    task_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(path, raw, durable=False)


class AttemptSession:
    """The live attempt of a task-bound spec (or an in-memory one for unbound specs)."""

    def __init__(self, spec: AgentExecutionSpec, *, durable: bool) -> None:
        self.spec = spec
        self.durable = durable
        self.number = 0
        self.path: Path | None = None
        self._writer: TrajectoryWriter | None = None
        self.events = 0
        self.head = ""

    def open(self, model: dict[str, Any]) -> None:
        """Claim the next attempt and write its record; ``model`` is the serving identity."""
        binding = self.spec.binding
        if binding is None or self.spec.output_uri is None:
            return  # a plain (unbound) spec or one with no output: nothing is written
        task_dir = Path(self.spec.output_uri)
        write_spec(task_dir, self.spec)
        number, path = claim_attempt(task_dir)
        record = {
            "schema": "xaytune.attempt/v1",
            "attempt": number,
            "attribution": {
                **binding.model_dump(mode="json"),
                "replicate": self.spec.replicate,
                "spec_fingerprint": self.spec.fingerprint,
            },
            "model": model,
            "writer": WRITER,
        }
        raw = canonical_bytes(record) + b"\n"
        atomic_write(path / ATTEMPT_FILE, raw, durable=False)
        self.number, self.path = number, path
        self._record_digest = sha256_digest(raw)
        self._writer = TrajectoryWriter(path / TRAJECTORY_FILE, genesis=self._record_digest)

    def event(self, kind: str, payload: dict[str, Any]) -> None:
        if self._writer is not None:
            self._writer.append(kind, payload)
        self.events += 1

    def seal(self, *, outcome: Outcome | None, spend: Spend) -> str | None:
        """Append the end event and seal; returns the seal digest (None when unwritten)."""
        status = "complete" if outcome is not None else "partial"
        outcome_dict = None if outcome is None else outcome.model_dump(mode="json")
        self.event("end", {"status": status, "outcome": outcome_dict, "spend": spend.as_dict()})
        writer = self._writer
        if writer is None or self.path is None:
            return None
        writer.flush(durable=self.durable)
        writer.close()
        if self.durable:
            fsync_file(self.path / ATTEMPT_FILE)
            fsync_file(self.path.parent.parent / SPEC_FILE)
        seal = {
            "schema": "xaytune.attempt-seal/v1",
            "attempt": self.number,
            "status": status,
            "outcome": outcome_dict,
            "spend": spend.as_dict(),
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
        atomic_write(self.path / SEAL_FILE, raw, durable=self.durable)
        durable_dir(self.path, durable=self.durable)
        return sha256_digest(raw)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def recover_open_attempt(attempt: StoredAttempt, *, durable: bool = True) -> None:
    """Seal an open attempt left by a crash as ``partial`` and ``recovered``.

    Nothing is deleted or rewritten: the spend is what its whole events record, an
    unterminated last fragment is left in place and outside the sealed bytes, and
    the seal says ``recovered: true``.
    """
    record_raw = (attempt.path / ATTEMPT_FILE).read_bytes()
    genesis = sha256_digest(record_raw)
    data = (
        (attempt.path / TRAJECTORY_FILE).read_bytes()
        if (attempt.path / TRAJECTORY_FILE).exists()
        else b""
    )
    facts = verify_chain(data, genesis=genesis, where=str(attempt.path), allow_torn_tail=True)
    if facts.last_event is not None and facts.last_event.get("type") == "end":
        raise EvidenceError(
            "open-attempt", f"attempt {attempt.name} ended but was never sealed; inspect it"
        )
    spend = Spend()
    for line in data[: facts.bytes].splitlines():
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
