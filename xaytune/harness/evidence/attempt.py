"""One attempt on disk while it runs: claim, spec and record, events, seal.

See :mod:`xaytune.harness.evidence.attempt_file` for the file an attempt writes, and
:mod:`xaytune.harness.evidence.attempt_record` for its spec and record lines (their
names are re-exported here).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence._io import durable_dir, write_file
from xaytune.harness.evidence._seal import seal_line, seal_line_of
from xaytune.harness.evidence._spell import exact_outcome_bytes, spend_bytes
from xaytune.harness.evidence.attempt_file import attempt_name, split_attempt
from xaytune.harness.evidence.attempt_record import (
    RecordTemplate,
    attribution_facts,
    attribution_of,
    record_bytes,
    record_line,
    spec_bytes,
)
from xaytune.harness.evidence.journal import SealJournal
from xaytune.harness.evidence.store import (
    Outcome,
    Spend,
    SpendRecord,
    StoredAttempt,
    claim_attempt,
)
from xaytune.harness.evidence.trajectory import (
    TrajectoryWriter,
    end_event_line,
    verify_chain,
)
from xaytune.harness.spec import AgentExecutionSpec

__all__ = [
    "AttemptSession",
    "PendingSeal",
    "RecordTemplate",
    "attribution_facts",
    "attribution_of",
    "record_bytes",
    "recover_open_attempt",
    "spec_bytes",
]


def _check_same_spec(directory: str, number: int, spec_line: bytes) -> None:
    """Refuse a new attempt of a task whose earlier attempt ran another spec."""
    for earlier in range(number - 1, 0, -1):
        path = os.path.join(directory, attempt_name(earlier))
        try:
            with open(path, "rb") as handle:
                first = handle.readline()
        except FileNotFoundError:
            continue
        if first.endswith(b"\n") and first != spec_line:
            raise EvidenceError(
                "resume-mismatch",
                f"{path}: the task was run under another spec; use a fresh output directory",
            )
        return


@dataclass(frozen=True, slots=True)
class PendingSeal:
    """A seal line not yet appended: the attempt is still open.

    Committing it lists it in the store's seal journal first, then appends it (see
    :mod:`xaytune.harness.evidence.journal`); a group commit does the two steps
    for a whole batch.
    """

    path: str
    line: bytes
    digest: str
    position: int
    number: int
    journal: SealJournal | None

    @property
    def entry(self) -> tuple[int, int, str]:
        """What the journal lists for this seal."""
        return (self.position, self.number, self.digest)

    def commit(self, *, durable: bool) -> None:
        """Journal the seal, then append it (each durable when ``durable``)."""
        if self.journal is not None:
            self.journal.append((self.entry,), durable=durable)
        self.append(durable=durable)

    def append(self, *, durable: bool) -> None:
        """Append the seal line (and make it durable when ``durable``)."""
        write_file(self.path, self.line, durable=durable, append=True)


class AttemptSession:
    """The live attempt of a task-bound spec (or an in-memory one for unbound specs)."""

    def __init__(
        self,
        spec: AgentExecutionSpec,
        *,
        durable: bool,
        journal: SealJournal | None = None,
        intent: str | None = None,
    ) -> None:
        self.spec = spec
        self.durable = durable
        self.journal = journal
        self.intent = intent
        self.number = 0
        self.path: str | None = None
        self._fd = -1
        self._writer: TrajectoryWriter | None = None
        self._record_digest = ""
        self.events = 0

    def open(self, model: dict[str, Any], model_bytes: bytes | None = None) -> None:
        """Claim the next attempt and write its spec and record lines; ``model`` is the
        serving identity (``model_bytes`` its canonical bytes, when the caller has them)."""
        output = self.spec.output_uri
        if self.spec.task_id is None or output is None:  # task_id: no binding is built
            return  # a plain (unbound) spec or one with no output: nothing is written
        spec_line = spec_bytes(self.spec)
        number, path, fd = claim_attempt(output)
        try:
            if number > 1:
                _check_same_spec(os.path.dirname(path), number, spec_line)
            if model_bytes is None:
                model_bytes = canonical_bytes(model)
            raw = record_line(self.spec, number, model_bytes, self.intent)
        except BaseException:
            os.close(fd)
            os.remove(path)  # nothing was recorded under this claim
            raise
        self.number, self.path, self._fd = number, path, fd
        self._record_digest = sha256_digest(raw)
        # The spec and record go out with the first event (the attempt's start, with
        # no await in between): one write. Until then the file is an empty claim, as
        # it is between the claim and any write; close() writes them if no event did.
        self._writer = TrajectoryWriter(fd, genesis=self._record_digest, unwritten=spec_line + raw)

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
        """Append the end event and build the seal line; :meth:`PendingSeal.commit` seals.

        When durable, every byte the seal refers to (and the file's name in its task
        directory) is flushed to disk here, before the seal line can be appended: a
        crash leaves an open attempt, never a torn sealed one. A group commit (see
        ``GroupCommit``) skips these fsyncs and makes a whole batch durable with one
        sync before its seal lines are appended and one after.

        The outcome and spend are spelled once, for the end event and the seal
        (``_spelled``); a value that spelling does not cover goes through the
        encoders as before, to the same bytes.
        """
        status = "complete" if outcome is not None else "partial"
        writer = self._writer
        if writer is None or self.path is None:
            self.events += 1  # an unwritten attempt still counts its end event
            return None
        spelled = _spelled(outcome, spend)
        if spelled is not None:
            outcome_json, spend_json = spelled
            writer.append_line(
                end_event_line(
                    writer.head,
                    writer.count,
                    status=_STATUS_JSON[status],
                    outcome=outcome_json,
                    spend=spend_json,
                )
            )
            self.events += 1
        else:
            self.event("end", _end_payload(status, outcome, spend))
        if self.durable:
            os.fsync(self._fd)
            durable_dir(os.path.dirname(self.path), durable=True)
        self.close()
        raw = None
        if spelled is not None:
            raw = seal_line_of(
                number=self.number,
                status=status,
                outcome=spelled[0],
                spend=spelled[1],
                events=writer.count,
                bytes=writer.bytes,
                head=writer.head,
                record_digest=self._record_digest,
            )
        if raw is None:
            payload = _end_payload(status, outcome, spend)
            raw = seal_line(
                number=self.number,
                status=status,
                outcome=payload["outcome"],
                spend=payload["spend"],
                events=writer.count,
                bytes=writer.bytes,
                head=writer.head,
                record_digest=self._record_digest,
                recovered=False,
            )
        binding = self.spec.binding
        assert binding is not None
        journal = self.journal
        if journal is None:
            journal = SealJournal.of_task(os.path.dirname(self.path))
        return PendingSeal(
            path=self.path,
            line=raw,
            digest=sha256_digest(raw),
            position=binding.position,
            number=self.number,
            journal=journal,
        )

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                if self._writer is not None:
                    self._writer.flush()
            finally:
                os.close(fd)


_STATUS_JSON = {"complete": b'"complete"', "partial": b'"partial"'}
_SPEND_FIELDS = frozenset(Spend.__dataclass_fields__)
# spend_bytes reads a Spend by the record's field names.
assert frozenset(SpendRecord.model_fields) == _SPEND_FIELDS
_COUNT_TYPES = frozenset({int, type(None)})


def _end_payload(status: str, outcome: Outcome | None, spend: Spend) -> dict[str, Any]:
    """The end event's payload (the general path's, encoded by the trajectory's encoder)."""
    return {
        "status": status,
        "outcome": None if outcome is None else outcome.model_dump(mode="json"),
        "spend": spend.as_dict(),
    }


def _spelled(outcome: Outcome | None, spend: Spend) -> tuple[bytes, bytes] | None:
    """The outcome's and spend's canonical bytes, spelled without an encoder, or None
    where the spelling does not cover them (a subclass, a count of another type or
    beyond 2^53, text with no canonical JSON). For these values (text, ``null``,
    integers; keys in ASCII) canonical JSON and the trajectory's sorted compact JSON
    are the same bytes, so both the end event and the seal take them."""
    if type(spend) is not Spend or not _COUNT_TYPES.issuperset(map(type, spend.as_dict().values())):
        return None
    outcome_json = exact_outcome_bytes(outcome)
    spend_json = spend_bytes(spend)  # type: ignore[arg-type]  # same fields as a record
    if outcome_json is None or spend_json is None:
        return None
    return outcome_json, spend_json


def recover_open_attempt(
    attempt: StoredAttempt,
    *,
    durable: bool = True,
    data: bytes | None = None,
    journal: SealJournal | None = None,
) -> bytes:
    """Seal an open attempt left by a crash; return the file's bytes once sealed
    (``data``: its bytes, when the caller has read them).

    An attempt whose seal the store's journal lists was committed before the crash
    cut its append short: its end event gives back that very seal, which is appended
    (its outcome stands). Otherwise it is sealed ``partial`` and ``recovered``,
    journaled first like any seal. Nothing is deleted or rewritten: the spend is what
    its whole events record (or what its end event says, when it ended but was never
    committed: its outcome is then not attested), an unterminated last fragment is
    kept, terminated, outside the sealed bytes.
    """
    where = str(attempt.path)
    if data is None:
        data = attempt.read()
    layout = split_attempt(data, where)
    if layout.sealed:
        raise EvidenceError("not-open", f"{where}: attempt {attempt.name} is sealed")
    if journal is None:
        journal = SealJournal.of_task(attempt.path.parent)
    genesis = sha256_digest(data[layout.spec_end : layout.record_end])
    facts = verify_chain(
        data,
        genesis=genesis,
        where=where,
        start=layout.record_end,
        end=layout.events_end,
        allow_torn_tail=True,
    )
    last = facts.last_event
    if last is not None and last.get("type") == "end":
        # It ended but the crash came before its commit: its outcome was never
        # attested, so it is sealed partial like any other crash.
        spend = Spend(**last["v"]["spend"])
    else:
        spend = _spend_from_events(data[layout.record_end : layout.record_end + facts.bytes])
    recovered = seal_line(
        number=attempt.number,
        status="partial",
        outcome=None,
        spend=spend.as_dict(),
        events=facts.count,
        bytes=facts.bytes,
        head=facts.head,
        record_digest=genesis,
        recovered=True,
    )
    committed = journal.committed.get((attempt.position, attempt.number))
    if committed is None:
        journal.append(
            ((attempt.position, attempt.number, sha256_digest(recovered)),), durable=durable
        )
    if committed is None or committed == sha256_digest(recovered):
        # (the second: a recovery killed between its commit and its append)
        sealing = (b"\n" if layout.torn else b"") + recovered
    else:
        sealing = _committed_seal(attempt, data, layout, facts, genesis, committed)
    write_file(attempt.path, sealing, durable=durable, append=True)
    return data + sealing


def _committed_seal(attempt, data, layout, facts, genesis, committed) -> bytes:
    """The bytes that complete the seal the journal lists for an open attempt, as its
    end event gives it; ``seal-missing`` when it does not."""
    last = facts.last_event
    where = f"{attempt.path}: task position {attempt.position} attempt {attempt.number:03d}"
    if last is None or last.get("type") != "end":
        raise EvidenceError(
            "seal-missing",
            f"{where}: its seal {committed} was committed but is missing, and its end "
            "event is gone",
        )
    end = last["v"]
    seal = seal_line(
        number=attempt.number,
        status=end["status"],
        outcome=end["outcome"],
        spend=end["spend"],
        events=facts.count,
        bytes=facts.bytes,
        head=facts.head,
        record_digest=genesis,
        recovered=False,
    )
    fragment = data[layout.record_end + facts.bytes :]
    if sha256_digest(seal) != committed or not seal.startswith(fragment):
        raise EvidenceError(
            "seal-missing",
            f"{where}: its seal {committed} was committed but is missing from the file",
        )
    return seal[len(fragment) :]


def _spend_from_events(data: bytes) -> Spend:
    """The spend that whole events record (a crashed attempt's lower bound; its wall
    time is the time its recorded calls took, which the host ran one at a time)."""
    spend = Spend()
    for line in data.splitlines():
        event = json.loads(line)
        payload = event["v"]
        if event["type"] == "model_reply":
            usage = payload["usage"]
            spend.turns += 1
            spend.model_calls += 1
            spend.retries += payload["retries"]
            spend.input_tokens += usage["input"]
            spend.output_tokens += usage["output"]
            spend.add_details(usage["cached"], usage["reasoning"])
            spend.peak_context_tokens = max(
                spend.peak_context_tokens, usage["input"] + usage["output"]
            )
            spend.model_time_us += payload["time_us"]
        elif event["type"] == "model_error":
            spend.model_errors += 1
            spend.retries += payload["retries"]
            spend.model_time_us += payload["time_us"]
        elif event["type"] == "tool_result":
            spend.tool_calls += 1
            spend.tool_errors += 0 if payload["ok"] else 1
            spend.tool_time_us += payload["time_us"]
    spend.wall_time_us = spend.model_time_us + spend.tool_time_us
    return spend
