"""One attempt file's facts, rebuilt from the file alone (what verification compares).

An attempt file (:mod:`xaytune.harness.evidence.attempt_file`) is read once and each byte is
hashed once. The spec line is hashed for its fingerprint. The record line is compared
byte for byte with the record the expected facts give. Each event is hashed into the
chain. The seal is parsed and checked against the record, the chain and the end
event. :class:`RebuiltAttempt` is what is left: the seal, still untyped, and the
digests.
"""

from __future__ import annotations

from typing import Any, NoReturn

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.benchmark import BenchmarkSuite, TaskAssignment
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence._io import read_file
from xaytune.harness.evidence._records import AttemptEvidence
from xaytune.harness.evidence._seal import seal_facts, seal_problem
from xaytune.harness.evidence.attempt import RecordTemplate, attribution_facts
from xaytune.harness.evidence.attempt_file import (
    SEAL_PREFIX,
    AttemptLayout,
    parse_line,
    split_attempt,
)
from xaytune.harness.evidence.store import AttemptRecord, AttemptSeal
from xaytune.harness.evidence.trajectory import verify_chain
from xaytune.models.protocol import ModelIdentity

__all__ = ["Expected", "RebuiltAttempt", "rebuild_attempt", "refuse"]


def refuse(reason: str, message: str) -> EvidenceError:
    return EvidenceError(reason, message)


class Expected:
    """What every attempt of one replicate must be attributed to (and, once the first
    record is read, the model it ran on and the template of its records)."""

    __slots__ = (
        "assignment",
        "harness_fingerprint",
        "intent",
        "learned",
        "model",
        "records",
        "replicate",
        "suite",
    )

    def __init__(
        self,
        suite: BenchmarkSuite,
        assignment: TaskAssignment,
        harness_fingerprint: str,
        replicate: int,
        *,
        intent: str | None = None,
    ) -> None:
        self.intent = intent
        self.suite = suite
        self.assignment = assignment
        self.harness_fingerprint = harness_fingerprint
        self.replicate = replicate
        self.model: ModelIdentity | None = None
        self.records: RecordTemplate | None = None
        self.learned = False  # the model, from the first record

    def attribution(self, *, task_id: str, position: int, spec_fingerprint: str) -> dict[str, Any]:
        return attribution_facts(
            suite_digest=self.suite.digest,
            assignment_digest=self.assignment.digest,
            task_id=task_id,
            position=position,
            seed=self.assignment.seed,
            replicate=self.replicate,
            harness_fingerprint=self.harness_fingerprint,
            spec_fingerprint=spec_fingerprint,
            intent=self.intent,
        )

    def learn_model(self, model: ModelIdentity | None) -> None:
        """The replicate's model, from its first record: every later record is compared
        as bytes with the record these facts give."""
        self.model = model
        self.learned = True
        try:
            self.records = RecordTemplate(
                suite_digest=self.suite.digest,
                assignment_digest=self.assignment.digest,
                seed=self.assignment.seed,
                replicate=self.replicate,
                harness_fingerprint=self.harness_fingerprint,
                intent=self.intent,
                model=canonical_bytes(None if model is None else model.model_dump(mode="json")),
            )
        except ValueError:
            # The model's parameters hold a template placeholder: every record is then
            # parsed and compared field by field instead (slower, just as strict).
            self.records = None


class RebuiltAttempt:
    """Facts of one stored attempt, rebuilt from its file alone.

    ``seal`` is the seal line parsed, checked against the file (record digest,
    chain, end event) but not typed: assembly types it (:meth:`fields`), and
    verification compares it with the typed attempt the evidence claims
    (:meth:`matches`), which then stands for its types.
    """

    __slots__ = (
        "chain_bytes",
        "model",
        "number",
        "record_digest",
        "seal",
        "seal_digest",
        "spec_fingerprint",
        "spec_line",
        "where",
    )

    def __init__(
        self,
        seal: dict[str, Any],
        *,
        number: int,
        seal_digest: str,
        record_digest: str,
        chain_bytes: int,
        model: ModelIdentity | None,
        spec_line: bytes,
        spec_fingerprint: str,
        where: str,
    ) -> None:
        self.seal = seal
        self.number = number
        self.seal_digest = seal_digest
        self.record_digest = record_digest
        self.chain_bytes = chain_bytes
        self.model = model
        self.spec_line = spec_line
        self.spec_fingerprint = spec_fingerprint
        self.where = where

    @property
    def complete(self) -> bool:
        return self.seal["status"] == "complete"

    def fields(self) -> dict[str, Any]:
        """This attempt as the evidence records it: the fields of its
        :class:`AttemptEvidence`, by name."""
        # The seal's form was checked (seal_problem): validation types it, and a
        # failure here would be a seal_problem that lets through what the record
        # refuses.
        seal = AttemptSeal.model_validate(self.seal)
        return {
            "attempt": seal.attempt,
            "status": seal.status,
            "outcome": seal.outcome,
            "spend": seal.spend,
            "record_digest": self.record_digest,
            "seal_digest": self.seal_digest,
            "trajectory_head": seal.trajectory.head,
            "trajectory_events": seal.trajectory.events,
            "recovered": seal.recovered,
        }

    def matches(self, claim: AttemptEvidence) -> bool:
        """Whether ``claim`` is this attempt as :meth:`fields` gives it: its seal is the
        seal ``claim`` implies, value for value.

        ``claim`` must hold exactly what validation gives (the caller checks it with
        :func:`~xaytune.core.exact.exactly_typed`): then the fields of its outcome
        and spend are plain JSON values, so their ``__dict__`` is their JSON form.
        """
        outcome = claim.outcome
        return (
            type(claim) is AttemptEvidence
            and claim.record_digest == self.record_digest
            and claim.seal_digest == self.seal_digest
            and self.seal
            == seal_facts(
                number=claim.attempt,
                status=claim.status,
                outcome=None if outcome is None else outcome.__dict__,
                spend=claim.spend.__dict__,
                events=claim.trajectory_events,
                bytes=self.chain_bytes,
                head=claim.trajectory_head,
                record_digest=self.record_digest,
                recovered=claim.recovered,
            )
        )


def _check_record(
    record_raw: bytes,
    where: str,
    *,
    number: int,
    task_id: str,
    position: int,
    spec_fingerprint: str,
    expected: Expected,
) -> ModelIdentity | None:
    """The record is the one these facts give; returns the model it names.

    Once the replicate's model is known a record is compared as bytes with the
    canonical record of the expected facts (what the writer wrote); a record that
    differs is parsed to name what differs.
    """
    records = expected.records
    if records is not None and record_raw == records.line(
        number, task_id=task_id, position=position, spec_fingerprint=spec_fingerprint
    ):
        return expected.model
    try:
        record = AttemptRecord.model_validate_json(record_raw)
    except ValueError as error:
        first = str(error).splitlines()[0]
        raise refuse("bad-record", f"{where}: record unreadable ({first})") from None
    actual = record.attribution
    attribution = expected.attribution(
        task_id=task_id, position=position, spec_fingerprint=spec_fingerprint
    )
    for field, value in attribution.items():
        if getattr(actual, field) != value:
            raise refuse(
                "attribution-mismatch",
                f"{where}: record {field} is {getattr(actual, field)!r}, expected {value!r}",
            )
    if record.attempt != number:
        raise refuse("attribution-mismatch", f"{where}: record says attempt {record.attempt}")
    if not expected.learned:
        expected.learn_model(record.model)
    return record.model


def _refuse_unsealed(data: bytes, layout: AttemptLayout, where: str) -> NoReturn:
    """Name what a file without a final seal line is: an open attempt (what a crash
    leaves: whole events, perhaps a torn last one) or an edited one (bytes after its
    seal; a last line no writer could have left)."""
    size = len(data)
    if layout.torn:
        fragment = data.rfind(b"\n") + 1
        last = data.rfind(b"\n", 0, fragment - 1) + 1
        if last >= layout.record_end and data.startswith(SEAL_PREFIX, last):
            raise refuse("trajectory-torn", f"{where}: {size - fragment} bytes after its seal")
    else:
        last = data.rfind(b"\n", 0, size - 1) + 1
        if last >= layout.record_end:
            try:
                parse_line(data[last:])
            except ValueError:
                raise refuse("chain-broken", f"{where}: its last line is not JSON") from None
    raise refuse("open-attempt", f"{where}: open (no seal)")


def rebuild_attempt(
    position: int,
    number: int,
    path: str,
    *,
    task_id: str,
    expected: Expected,
    first_spec: bytes | None,
) -> RebuiltAttempt:
    where = f"task {task_id} attempt {number:03d} ({path})"
    try:
        data = read_file(path)
    except OSError as error:
        raise refuse("bad-record", f"{where}: unreadable ({error.strerror})") from None
    layout = split_attempt(data, where)
    if not layout.sealed:
        _refuse_unsealed(data, layout, where)
    spec_line = data[: layout.spec_end - 1]
    if first_spec is not None and spec_line != first_spec:
        raise refuse("attribution-mismatch", f"{where}: ran another spec than the first attempt")
    spec_fingerprint = sha256_digest(spec_line)
    record_raw = data[layout.spec_end : layout.record_end]
    model = _check_record(
        record_raw,
        where,
        number=number,
        task_id=task_id,
        position=position,
        spec_fingerprint=spec_fingerprint,
        expected=expected,
    )
    seal_raw = data[layout.events_end :]
    try:
        seal = parse_line(seal_raw)
    except ValueError as error:
        raise refuse("bad-seal", f"{where}: unreadable seal ({error})") from None
    problem = seal_problem(seal)
    if problem is not None:
        raise refuse("bad-seal", f"{where}: {problem}")
    attempt, record, chain = seal["attempt"], seal["attempt_record"], seal["trajectory"]
    head, events, chain_bytes = chain["head"], chain["events"], chain["bytes"]
    recovered = seal["recovered"]
    record_digest = sha256_digest(record_raw)
    if record != record_digest or attempt != number:
        raise refuse("digest-mismatch", f"{where}: the seal is not this attempt's record's")
    events_end = layout.events_end
    if recovered:
        # A recovered attempt may keep one terminated fragment after its chain.
        chain_end = layout.record_end + chain_bytes
        rest = data[chain_end:events_end] if chain_end <= events_end else b"?"
        if rest and rest.find(b"\n") != len(rest) - 1:
            raise refuse(
                "chain-head-mismatch",
                f"{where}: {events_end - layout.record_end} event bytes, seal says {chain_bytes}",
            )
        events_end = chain_end
    facts = verify_chain(
        data, genesis=record_digest, where=where, start=layout.record_end, end=events_end
    )
    if facts.head != head or facts.count != events or facts.bytes != chain_bytes:
        raise refuse(
            "chain-head-mismatch",
            f"{where}: trajectory has {facts.count} events, head {facts.head[:19]}...; "
            f"seal says {events}, {str(head)[:19]}...",
        )
    _check_seal_claim(seal, facts.last_event, where)
    return RebuiltAttempt(
        seal,
        number=number,
        seal_digest=sha256_digest(seal_raw),
        record_digest=record_digest,
        chain_bytes=chain_bytes,
        model=model,
        spec_line=spec_line,
        spec_fingerprint=spec_fingerprint,
        where=where,
    )


def _check_seal_claim(seal: dict[str, Any], last: dict[str, Any] | None, where: str) -> None:
    """A seal's status and outcome must be what its trajectory's end event says."""
    status, outcome = seal["status"], seal["outcome"]
    if seal["recovered"]:
        # A recovered attempt was sealed after a crash: never complete, whatever its
        # trajectory says (an end event that was never sealed attests nothing).
        if status != "partial" or outcome is not None:
            raise refuse("false-complete", f"{where}: a recovered attempt can only be partial")
        return
    end = last.get("v") if last is not None and last.get("type") == "end" else None
    if end is None:
        raise refuse("false-complete", f"{where}: trajectory has no end event for its seal")
    if status == "complete" and outcome is None:
        raise refuse("false-complete", f"{where}: sealed complete without an outcome")
    if status == "partial" and outcome is not None:
        raise refuse("false-complete", f"{where}: sealed partial with an outcome")
    spend = seal["spend"]
    # An outcome's values are text or null, equal only to text or null; a spend's are
    # integers, equal to floats and booleans too.
    if end != {"status": status, "outcome": outcome, "spend": spend} or not _same_types(
        end["spend"], spend
    ):
        raise refuse("false-complete", f"{where}: seal does not match the trajectory's end")


def _same_types(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Whether the values of two equal flat objects have the same JSON types too (in
    Python ``1 == 1.0 == True``): ``theirs`` is a checked seal's."""
    return all(type(value) is type(theirs[key]) for key, value in mine.items())
