"""The records of a run's evidence: attempts, entries, the run evidence itself.

Re-exported by :mod:`xaytune.harness.evidence.verify` (the public import path).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from xaytune.core.canonical import MAX_SAFE_INTEGER, canonical_bytes, canonical_object_chunks
from xaytune.core.domain.benchmark import SeededSample
from xaytune.core.errors import FingerprintError
from xaytune.core.frozen import FrozenRecord
from xaytune.harness.evidence._spell import exact_outcome_bytes, exact_spend_bytes
from xaytune.harness.evidence._template import LineTemplate, json_string, placeholder
from xaytune.harness.evidence.store import Outcome, SpendRecord
from xaytune.models.protocol import ModelIdentity

__all__ = ["EVIDENCE_SCHEMA", "AttemptEvidence", "EvidenceEntry", "HarnessRunEvidence"]

EVIDENCE_SCHEMA = "xaytune.harness-run-evidence/v2"
_FROZEN = ConfigDict(frozen=True, extra="forbid")
_BATCH = 1024  # entries dumped and serialised at a time


class AttemptEvidence(FrozenRecord):
    """One attempt instance as the evidence records it."""

    model_config = _FROZEN

    attempt: int
    status: Literal["complete", "partial"]
    outcome: Outcome | None
    spend: SpendRecord
    record_digest: str
    seal_digest: str
    trajectory_head: str
    trajectory_events: int
    recovered: bool


class EvidenceEntry(FrozenRecord):
    """One assigned task: every attempt of it, and whether one is attested."""

    model_config = _FROZEN

    task_id: str
    position: int
    spec_fingerprint: str
    status: Literal["attested", "no-attested-result"]
    attempts: tuple[AttemptEvidence, ...]

    @property
    def attested(self) -> AttemptEvidence | None:
        """The complete attempt of an attested entry, else None."""
        for attempt in self.attempts:
            if attempt.status == "complete":
                return attempt
        return None


class HarnessRunEvidence(BaseModel):
    """The verified evidence of one replicate (one harness, one seed)."""

    model_config = _FROZEN

    schema_: Literal["xaytune.harness-run-evidence/v2"] = Field(
        default=EVIDENCE_SCHEMA, alias="schema"
    )
    suite_name: str
    suite_digest: str
    sampling: SeededSample
    assignment_digest: str
    seed: int
    replicate: int
    harness_fingerprint: str
    model: ModelIdentity
    # The digest of the run's intent record, which every attempt record carries
    # (None for a run outside an experiment).
    intent: str | None
    entries: tuple[EvidenceEntry, ...]
    digest: str = ""

    def content_digest(self) -> str:
        """The digest of everything but ``digest`` itself (remembered: see ``_memo``)."""
        values = self._content_values()
        memo = _CONTENT_MEMO.get(id(self))
        if (
            memo is not None
            and all(a is b for a, b in zip(memo[0][:-1], values[:-1], strict=True))
            and memo[0][-1] == values[-1]
        ):
            return memo[1]
        hasher = hashlib.sha256()
        for chunk in self.canonical_chunks(digest=False):
            hasher.update(chunk)
        digest = "sha256:" + hasher.hexdigest()
        self._memo(values, digest)
        return digest

    def canonical_chunks(self, *, digest: bool = True, remember: bool = False) -> Iterator[bytes]:
        """The canonical bytes of this evidence (without ``digest`` unless ``digest``),
        in pieces: ``b"".join(...)`` is ``canonical_bytes(self.model_dump(mode="json",
        by_alias=True, ...))``, but the entries are spelled a batch at a time from their
        values (:func:`_entries_chunks`), not dumped and encoded.

        With ``remember``, the pieces but the digest member's (the content's canonical
        bytes) are hashed as they are made, and once the last is taken the content
        digest is remembered: one serialisation gives the record and its content
        digest (loading a published record compares the one and checks the other).
        """
        values = self._content_values() if remember else ()
        head = self.model_dump(mode="json", by_alias=True, exclude={"entries", "digest"})
        members: dict[str, Iterable[bytes]] = {
            key: (canonical_bytes(value),) for key, value in head.items()
        }
        members["entries"] = _entries_chunks(self.entries)
        content = canonical_object_chunks(members)
        hasher = hashlib.sha256() if remember else None
        if hasher is not None:
            content = _hashed(content, hasher)
        if digest:
            # The digest member comes second, after "assignment_digest" (_KEYS).
            yield from itertools.islice(content, 3)  # "{", the first key, its value
            yield b',"digest":' + canonical_bytes(self.digest)
        yield from content
        if hasher is not None:
            self._memo(values, "sha256:" + hasher.hexdigest())

    def sealed(self) -> HarnessRunEvidence:
        """A copy whose ``digest`` is its contents'."""
        sealed = self.model_copy(update={"digest": self.content_digest()})
        sealed._memo(sealed._content_values(), sealed.digest)
        return sealed

    def _content_values(self) -> tuple[Any, ...]:
        # The model's parameters are the one mutable dict inside: held as a copy.
        values = tuple(value for name, value in self.__dict__.items() if name != "digest")
        return (*values, copy.deepcopy(self.model.parameters))

    def _memo(self, values: tuple[Any, ...], digest: str) -> None:
        """Remember this object's content digest with the very field values it covers.

        Kept outside the model (pydantic compares private attributes in ``==``),
        keyed by id and dropped when the object is collected; the values are held,
        so their ids cannot be reused while the memo lives. A copy with any field
        replaced (``model_copy(update=...)``) is another object: it is recomputed.
        Every value is frozen all the way down but the model's parameters, which
        are compared by value.
        """
        key = id(self)
        if key not in _CONTENT_MEMO:
            weakref.finalize(self, _CONTENT_MEMO.pop, key, None)
        _CONTENT_MEMO[key] = (values, digest)


# id(evidence) -> (its field values but digest, their content digest); see _memo.
_CONTENT_MEMO: dict[int, tuple[tuple[Any, ...], str]] = {}
# The record's keys in canonical order: "digest" is inserted second by canonical_chunks.
_KEYS = sorted(field.alias or name for name, field in HarnessRunEvidence.model_fields.items())
assert _KEYS[:2] == ["assignment_digest", "digest"], _KEYS


def _hashed(chunks: Iterator[bytes], hasher: Any) -> Iterator[bytes]:
    for chunk in chunks:
        hasher.update(chunk)
        yield chunk


_ENTRY_LIST = TypeAdapter(list[EvidenceEntry])


def _entries_chunks(entries: tuple[EvidenceEntry, ...]) -> Iterator[bytes]:
    """The canonical bytes of the entries array, a batch at a time. Each batch is
    spelled from its records' values (:func:`_entry_bytes`); a batch holding anything
    that spelling does not write exactly is dumped and canonicalised as before."""
    yield b"["
    for start in range(0, len(entries), _BATCH):
        batch = entries[start : start + _BATCH]
        try:
            inner = b",".join(map(_entry_bytes, batch))
        except (_Unspelled, FingerprintError, KeyError):
            dumped = _ENTRY_LIST.dump_python(list(batch), mode="json", by_alias=True)
            inner = canonical_bytes(dumped)[1:-1]  # "[a,b]" -> "a,b"
        yield b"," + inner if start else inner
    yield b"]"


class _Unspelled(Exception):
    """A record :func:`_entry_bytes` does not spell exactly: the general path does."""


def _format(fields: tuple[str, ...]) -> bytes:
    """The canonical bytes of a record with these fields as a ``%s`` format of them,
    in ``fields``' order (which must be the canonical key order)."""
    line = canonical_bytes({name: placeholder(name) for name in fields})
    marks = {name: canonical_bytes(placeholder(name)) for name in fields}
    return LineTemplate(line, marks).format(fields)


# Each record's fields in canonical key order (checked against the models below).
_ENTRY_FIELDS = ("attempts", "position", "spec_fingerprint", "status", "task_id")
_ATTEMPT_FIELDS = (
    "attempt",
    "outcome",
    "record_digest",
    "recovered",
    "seal_digest",
    "spend",
    "status",
    "trajectory_events",
    "trajectory_head",
)
assert set(_ENTRY_FIELDS) == set(EvidenceEntry.model_fields)
assert set(_ATTEMPT_FIELDS) == set(AttemptEvidence.model_fields)
_ENTRY = _format(_ENTRY_FIELDS)
_ATTEMPT = _format(_ATTEMPT_FIELDS)
_BOOLEANS = {True: b"true", False: b"false"}


def _integer(value: object) -> bytes:
    if type(value) is not int or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise _Unspelled
    return b"%d" % value


def _text(value: object) -> bytes:
    if type(value) is not str:
        raise _Unspelled
    return json_string(value)


def _entry_bytes(entry: EvidenceEntry) -> bytes:
    """``canonical_bytes(entry.model_dump(mode="json"))`` spelled from the entry's
    values, which must be exactly of the types validation gives (an ``int`` is not a
    ``bool``, a ``str`` no subclass, no extra value): raises :class:`_Unspelled`
    (or ``KeyError``, ``FingerprintError``) for any other record."""
    if type(entry) is not EvidenceEntry or entry.__pydantic_extra__:
        raise _Unspelled
    facts = entry.__dict__
    attempts = facts["attempts"]
    if len(facts) != len(_ENTRY_FIELDS) or type(attempts) is not tuple:
        raise _Unspelled
    return _ENTRY % (
        b"[" + b",".join(map(_attempt_bytes, attempts)) + b"]",
        _integer(facts["position"]),
        _text(facts["spec_fingerprint"]),
        _text(facts["status"]),
        _text(facts["task_id"]),
    )


def _attempt_bytes(attempt: AttemptEvidence) -> bytes:
    if type(attempt) is not AttemptEvidence or attempt.__pydantic_extra__:
        raise _Unspelled
    facts = attempt.__dict__
    outcome = exact_outcome_bytes(facts["outcome"])
    spend = exact_spend_bytes(facts["spend"])
    recovered = facts["recovered"]
    if (
        len(facts) != len(_ATTEMPT_FIELDS)
        or outcome is None
        or spend is None
        or type(recovered) is not bool
    ):
        raise _Unspelled
    return _ATTEMPT % (
        _integer(facts["attempt"]),
        outcome,
        _text(facts["record_digest"]),
        _BOOLEANS[recovered],
        _text(facts["seal_digest"]),
        spend,
        _text(facts["status"]),
        _integer(facts["trajectory_events"]),
        _text(facts["trajectory_head"]),
    )
