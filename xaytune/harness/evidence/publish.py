"""Publishing evidence as a content-addressed in-toto Statement v1.

The statement names the evidence (its digest) and every attempt's record and seal
(the sha256 of those lines of its attempt file, ``<file>#record`` and
``<file>#seal``) as subjects; the predicate is the evidence itself. Standard
supply-chain tooling can read it and later sign it (DSSE). The file is named by the
evidence digest, so publishing the same evidence twice yields the same subject,
and a published record edited on disk is refused when loaded.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from xaytune.core.canonical import canonical_bytes, canonical_object_chunks
from xaytune.core.errors import EvidenceError, FingerprintError
from xaytune.harness.evidence._template import LineTemplate, json_string, placeholder
from xaytune.harness.evidence.attempt_file import attempt_name
from xaytune.harness.evidence.store import HarnessEvidenceStore, atomic_write_chunks
from xaytune.harness.evidence.verify import EvidenceEntry, HarnessRunEvidence, check_evidence_object

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


def statement_chunks(evidence: HarnessRunEvidence, *, remember: bool = False) -> Iterator[bytes]:
    """The published file: ``canonical_bytes(statement_for(evidence)) + b"\\n"``, in
    pieces (the statement of a large run is never held whole as data). With
    ``remember``, the evidence's content digest is computed on the way and remembered
    (:meth:`HarnessRunEvidence.canonical_chunks`)."""
    members: dict[str, Iterable[bytes]] = {
        "_type": (canonical_bytes(STATEMENT_TYPE),),
        "subject": _subject_chunks(evidence),
        "predicateType": (canonical_bytes(PREDICATE_TYPE),),
        "predicate": evidence.canonical_chunks(remember=remember),
    }
    yield from canonical_object_chunks(members)
    yield b"\n"


def _subject_chunks(evidence: HarnessRunEvidence) -> Iterator[bytes]:
    """``canonical_bytes`` of the list :func:`_subjects` gives, in pieces, each subject
    spelled by one ``%`` into its canonical layout (no dict made, no encoder run)."""
    yield b"[" + _SUBJECT % (_string(_hex(evidence.digest)), _string(SUBJECT_KIND))
    entries = evidence.entries
    for start in range(0, len(entries), _SUBJECT_BATCH):
        parts = [b""]  # a leading comma
        for entry in entries[start : start + _SUBJECT_BATCH]:
            for attempt in entry.attempts:
                base = f"tasks/{entry.position:06d}/{attempt_name(attempt.attempt)}"
                parts.append(
                    _SUBJECT % (_string(_hex(attempt.record_digest)), _string(f"{base}#record"))
                )
                parts.append(
                    _SUBJECT % (_string(_hex(attempt.seal_digest)), _string(f"{base}#seal"))
                )
        yield b",".join(parts)
    yield b"]"


_SUBJECT_BATCH = 1024  # entries
_SUBJECT = LineTemplate(
    canonical_bytes({"digest": {"sha256": placeholder("digest")}, "name": placeholder("name")}),
    {name: canonical_bytes(placeholder(name)) for name in ("digest", "name")},
).format(("digest", "name"))


def _string(value: object) -> bytes:
    """``canonical_bytes(value)``, quickly for a ``str`` (what a subject holds)."""
    return json_string(value) if type(value) is str else canonical_bytes(value)


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

    Refuses an evidence object validation would not give, or whose digest is not
    its contents' (``digest-mismatch``); a different record already published under
    the same digest (``subject-tampered``); and a statement that cannot be written
    as a regular file inside the store (``publish-failed``: ``published/`` or the
    target a symlink, a directory, another file, or an OS error), leaving no
    partial file.
    """
    check_evidence_object(evidence)
    path = _publish_target(store, evidence.digest)
    try:
        if _is_file(path):
            with open(path, "rb") as handle:
                same = _same_file(statement_chunks(evidence), handle)
            if not same:
                raise EvidenceError(
                    "subject-tampered", f"{path}: a different record is published under this digest"
                )
        else:
            atomic_write_chunks(path, statement_chunks(evidence), durable=store.durable)
    except OSError as error:
        raise _publish_failed(path, error) from None
    return PublishedSubject(digest=evidence.digest, path=str(path), store_root=str(store.root))


def _publish_target(store: HarnessEvidenceStore, digest: str) -> Path:
    """The statement file of ``digest`` under ``store``, its directory made; refused
    when ``published/`` is not a real directory (a symlink could lead outside)."""
    directory = store.published_dir
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _publish_failed(directory, error) from None
    if directory.is_symlink():
        raise EvidenceError(
            "publish-failed", f"{directory}: a symlink; publishing writes only inside the store"
        )
    return directory / f"{_hex(digest)}.intoto.json"


def _is_file(path: Path) -> bool:
    """True when ``path`` is a regular file, False when nothing is there; refused
    (``publish-failed``) when it is anything else (a symlink is never followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(mode):
        raise EvidenceError(
            "publish-failed",
            f"{path}: not a regular file (a symlink, directory or other); "
            "publishing writes only regular files inside the store",
        )
    return True


def _publish_failed(path: Path, error: OSError) -> EvidenceError:
    return EvidenceError("publish-failed", f"{path}: cannot publish ({error.strerror or error})")


def load_published(subject: PublishedSubject) -> HarnessRunEvidence:
    """Load a published subject; refuse it (``subject-tampered``) if edited on disk,
    if it is not in its store's ``published/``, or if it is not a statement
    publish_evidence writes; ``subject-missing`` if it cannot be read."""
    path = Path(subject.path)
    _check_in_store(subject, path)
    try:
        evidence, same = _load_statement(path)
        intact = (
            same
            and evidence.digest == subject.digest
            and evidence.content_digest() == evidence.digest
        )
    except OSError as error:
        raise EvidenceError("subject-missing", f"{path}: cannot read ({error.strerror})") from None
    except (FingerprintError, ValueError, RecursionError):
        # A value with no canonical JSON (a lone surrogate, an integer beyond 2^53):
        # no statement publish_evidence writes holds one.
        raise EvidenceError(
            "subject-tampered", f"{path}: the published record holds a value with no canonical JSON"
        ) from None
    if not intact or path.name != f"{_hex(subject.digest)}.intoto.json":
        raise EvidenceError(
            "subject-tampered", f"{path}: the published record is not the subject it claims"
        )
    return evidence


def _check_in_store(subject: PublishedSubject, path: Path) -> None:
    """Refuse (``subject-tampered``) a statement that is not in ``published/`` of the
    store the subject names (compared resolved: a symlink or ``..`` leads elsewhere)."""
    try:
        inside = path.resolve().parent == (Path(subject.store_root) / "published").resolve()
    except (OSError, RuntimeError):  # a symlink loop
        inside = False
    if not inside:
        raise EvidenceError(
            "subject-tampered",
            f"{path}: not a published record of the store {subject.store_root}",
        )


def _load_statement(path: Path) -> tuple[HarnessRunEvidence, bool]:
    """The evidence of the statement at ``path``, and whether the file is exactly the
    statement of that evidence."""
    with open(path, "rb") as handle:
        evidence = _predicate(handle)
        if evidence is not None:
            # The content digest, checked next, comes from the same serialisation.
            return evidence, _same_file(statement_chunks(evidence, remember=True), handle)
    # Not the layout publish_evidence writes: parse it whole.
    raw = path.read_bytes()
    try:
        evidence = HarnessRunEvidence.model_validate(_statement(raw, path)["predicate"])
    except (ValidationError, KeyError, TypeError):
        raise EvidenceError("subject-tampered", f"{path}: not a valid evidence statement") from None
    return evidence, _same_bytes(statement_chunks(evidence), raw)


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
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def _evidence_of(predicate: bytes) -> HarnessRunEvidence:
    """The evidence in ``predicate``'s JSON, its entries validated a batch at a time
    and each batch's plain data dropped as it goes (parsing a 100,000-entry record
    straight from JSON costs pydantic about twice the memory).

    Only a candidate: the caller accepts it only if the file is, byte for byte, its
    statement. So the entries are first validated straight from their bytes, cut at
    the boundaries the canonical layout has (:func:`_evidence_cut`); a predicate
    that does not cut so is parsed whole."""
    try:
        return _evidence_cut(predicate)
    except (ValueError, TypeError, KeyError):  # (pydantic's ValidationError included)
        pass
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
# In the canonical layout the entries come third, after two strings, and are followed
# by "harness_fingerprint"; each entry opens with its "attempts". None of these can
# be spelled inside a string (a string holds no bare quote).
_ENTRIES_KEY = b',"entries":['
_AFTER_ENTRIES = b'],"harness_fingerprint":'
_ENTRY_OPENING = b'{"attempts":['
_BETWEEN_ENTRIES = b"}," + _ENTRY_OPENING


def _evidence_cut(predicate: bytes) -> HarnessRunEvidence:
    """The evidence of a predicate in the canonical layout: its entries array cut
    into entries where one ends and the next opens, each batch of them validated
    from its JSON bytes, and the rest parsed on its own. Raises ``ValueError`` (or
    ``TypeError``, ``KeyError``) where the cut does not give valid JSON and records."""
    start = predicate.index(_ENTRIES_KEY) + len(_ENTRIES_KEY)
    end = predicate.index(_AFTER_ENTRIES, start)
    plain = json.loads(predicate[:start] + predicate[end:])  # the entries as []
    if plain["entries"] != [] or not predicate.startswith(_ENTRY_OPENING, start):
        raise ValueError("not the canonical layout")
    parts = predicate[start:end].split(_BETWEEN_ENTRIES)
    count = len(parts)
    validated: list[EvidenceEntry] = []
    for first in range(0, count, _ENTRY_BATCH):
        last = min(first + _ENTRY_BATCH, count)
        batch = b"".join(
            (
                b"[",
                _ENTRY_OPENING if first else b"",
                _BETWEEN_ENTRIES.join(parts[first:last]),
                b"}" if last < count else b"",
                b"]",
            )
        )
        validated.extend(_ENTRIES.validate_json(batch))
    del parts
    plain["entries"] = tuple(validated)
    return HarnessRunEvidence.model_validate(plain)


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
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to parse
        raise EvidenceError("subject-tampered", f"{path}: not JSON") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise EvidenceError("subject-tampered", f"{path}: not an in-toto Statement v1")
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise EvidenceError("subject-tampered", f"{path}: predicate is not agent-run evidence")
    return statement
