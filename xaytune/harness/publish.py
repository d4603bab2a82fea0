"""Publishing evidence as a content-addressed in-toto Statement v1.

The statement names the evidence (its digest) and every attempt's record and seal
(the sha256 of those lines of its attempt file, ``<file>#record`` and
``<file>#seal``) as subjects; the predicate is the evidence itself. Standard
supply-chain tooling can read it and later sign it (DSSE). The file is named by the
evidence digest, so publishing the same evidence twice yields the same subject,
and a published record edited on disk is refused when loaded.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from xaytune.core.canonical import canonical_array_chunks, canonical_bytes, canonical_object_chunks
from xaytune.core.errors import EvidenceError
from xaytune.harness.attempt_file import attempt_name
from xaytune.harness.evidence import EvidenceEntry, HarnessRunEvidence
from xaytune.harness.store import HarnessEvidenceStore, atomic_write_chunks

__all__ = [
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "PublishedSubject",
    "load_published",
    "publish_evidence",
    "statement_chunks",
    "statement_for",
]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://xaytune.dev/attestations/agent-run-evidence/v1"
SUBJECT_KIND = "agent_run_evidence"


class PublishedSubject(BaseModel):
    """A published evidence record: what an evaluator loads and re-verifies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["agent_run_evidence"] = SUBJECT_KIND
    digest: str
    path: str
    store_root: str


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def _subjects(evidence: HarnessRunEvidence) -> Iterator[dict[str, object]]:
    yield {"name": SUBJECT_KIND, "digest": {"sha256": _hex(evidence.digest)}}
    for entry in evidence.entries:
        for attempt in entry.attempts:
            base = f"tasks/{entry.position:06d}/{attempt_name(attempt.attempt)}"
            yield {
                "name": f"{base}#record",
                "digest": {"sha256": _hex(attempt.record_digest)},
            }
            yield {"name": f"{base}#seal", "digest": {"sha256": _hex(attempt.seal_digest)}}


def statement_for(evidence: HarnessRunEvidence) -> dict[str, object]:
    """The in-toto Statement v1 for ``evidence`` (plain data, canonicalisable)."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": list(_subjects(evidence)),
        "predicateType": PREDICATE_TYPE,
        "predicate": evidence.model_dump(mode="json", by_alias=True),
    }


def statement_chunks(evidence: HarnessRunEvidence) -> Iterator[bytes]:
    """The published file: ``canonical_bytes(statement_for(evidence)) + b"\\n"``, in
    pieces (the statement of a large run is never held whole as data)."""
    subjects = _subjects(evidence)
    batches = iter(lambda: list(itertools.islice(subjects, 2048)), [])
    members: dict[str, Iterable[bytes]] = {
        "_type": (canonical_bytes(STATEMENT_TYPE),),
        "subject": canonical_array_chunks(batches),
        "predicateType": (canonical_bytes(PREDICATE_TYPE),),
        "predicate": evidence.canonical_chunks(),
    }
    yield from canonical_object_chunks(members)
    yield b"\n"


def _same_bytes(chunks: Iterable[bytes], raw: bytes) -> bool:
    """True when the pieces, joined, are exactly ``raw`` (compared piece by piece)."""
    view = memoryview(raw)
    at = 0
    for chunk in chunks:
        end = at + len(chunk)
        if end > len(view) or view[at:end] != chunk:
            return False
        at = end
    return at == len(view)


def publish_evidence(evidence: HarnessRunEvidence, store: HarnessEvidenceStore) -> PublishedSubject:
    """Write ``evidence`` as a statement under ``store``; return its subject.

    Refuses evidence whose digest is not its contents' (``digest-mismatch``) and a
    different record already published under the same digest (``subject-tampered``).
    """
    if evidence.digest != evidence.content_digest():
        raise EvidenceError("digest-mismatch", "the evidence digest is not its contents'")
    directory = store.published_dir
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{_hex(evidence.digest)}.intoto.json"
    if path.exists():
        with open(path, "rb") as handle:
            same = _same_file(statement_chunks(evidence), handle)
        if not same:
            raise EvidenceError(
                "subject-tampered", f"{path}: a different record is published under this digest"
            )
    else:
        atomic_write_chunks(path, statement_chunks(evidence), durable=store.durable)
    return PublishedSubject(digest=evidence.digest, path=str(path), store_root=str(store.root))


def load_published(subject: PublishedSubject) -> HarnessRunEvidence:
    """Load a published subject; refuse it (``subject-tampered``) if edited on disk."""
    path = Path(subject.path)
    try:
        with open(path, "rb") as handle:
            evidence = _predicate(handle)
            if evidence is not None:
                same = _same_file(statement_chunks(evidence), handle)
    except OSError as error:
        raise EvidenceError("subject-missing", f"{path}: cannot read ({error.strerror})") from None
    if evidence is None:  # not the layout publish_evidence writes: parse it whole
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise EvidenceError(
                "subject-missing", f"{path}: cannot read ({error.strerror})"
            ) from None
        try:
            evidence = HarnessRunEvidence.model_validate(_statement(raw, path)["predicate"])
        except (ValidationError, KeyError, TypeError):
            raise EvidenceError(
                "subject-tampered", f"{path}: not a valid evidence statement"
            ) from None
        same = _same_bytes(statement_chunks(evidence), raw)
    if (
        evidence.digest != subject.digest
        or evidence.content_digest() != evidence.digest
        or not same
        or path.name != f"{_hex(subject.digest)}.intoto.json"
    ):
        raise EvidenceError(
            "subject-tampered", f"{path}: the published record is not the subject it claims"
        )
    return evidence


# A statement as publish_evidence writes it: canonical JSON, keys in this order.
_HEAD = b'{"_type":' + canonical_bytes(STATEMENT_TYPE) + b',"predicate":'
_TAIL = b',"predicateType":' + canonical_bytes(PREDICATE_TYPE) + b',"subject":['
_BLOCK = 1 << 20


def _predicate(handle: BinaryIO) -> HarnessRunEvidence | None:
    """The evidence of a statement in the layout publish_evidence writes, parsed
    from the predicate's bytes alone; None when the layout or evidence is not that.

    The predicate ends at the last ``,"predicateType":...,"subject":[``: nothing in
    the subject list (names and digests) can spell it, so it is searched for from
    the end. Whether the whole file is the statement of the evidence parsed is
    checked after, byte for byte (:func:`_same_file`).
    """
    fd = handle.fileno()
    size = os.fstat(fd).st_size
    if _pread(fd, len(_HEAD), 0) != _HEAD:
        return None
    tail, offset = b"", size
    while True:  # read back from the end until the tail marker is in view
        step = min(_BLOCK, offset)
        offset -= step
        tail = _pread(fd, step, offset) + tail
        found = tail.rfind(_TAIL)
        if found >= 0 or offset == 0:
            break
    end = offset + found
    if found < 0 or end < len(_HEAD):
        return None
    del tail
    try:
        return _evidence_of(_pread(fd, end - len(_HEAD), len(_HEAD)))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _evidence_of(predicate: bytes) -> HarnessRunEvidence:
    """The evidence in ``predicate``'s JSON, its entries validated a batch at a time
    and each batch's plain data dropped as it goes (parsing a 100,000-entry record
    straight from JSON costs pydantic about twice the memory)."""
    plain = json.loads(predicate)
    del predicate
    entries = plain.pop("entries")
    validated: list[EvidenceEntry] = []
    for start in range(0, len(entries), _ENTRY_BATCH):
        stop = start + _ENTRY_BATCH
        validated.extend(_ENTRIES.validate_python(entries[start:stop]))
        entries[start:stop] = [None] * len(entries[start:stop])
    plain["entries"] = tuple(validated)
    return HarnessRunEvidence.model_validate(plain)


_ENTRIES = TypeAdapter(list[EvidenceEntry])
_ENTRY_BATCH = 1024


def _pread(fd: int, size: int, offset: int) -> bytes:
    parts = []
    while size > 0:
        part = os.pread(fd, size, offset)
        if not part:
            break
        parts.append(part)
        size -= len(part)
        offset += len(part)
    return b"".join(parts)


def _same_file(chunks: Iterable[bytes], handle: BinaryIO) -> bool:
    """True when the pieces, joined, are exactly the file's bytes (read in blocks)."""
    fd, at = handle.fileno(), 0
    for chunk in chunks:
        if _pread(fd, len(chunk), at) != chunk:
            return False
        at += len(chunk)
    return not os.pread(fd, 1, at)


def _statement(raw: bytes, path: Path) -> dict[str, object]:
    try:
        statement = json.loads(raw)
    except ValueError:
        raise EvidenceError("subject-tampered", f"{path}: not JSON") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise EvidenceError("subject-tampered", f"{path}: not an in-toto Statement v1")
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise EvidenceError("subject-tampered", f"{path}: predicate is not agent-run evidence")
    return statement
