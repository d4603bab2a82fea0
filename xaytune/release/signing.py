"""Signing an output tree, offline: a DSSE envelope over an in-toto Statement of every file.

``python -m xaytune.sign <tree> --key <ed25519 private key PEM>`` writes
``<tree>/signature.dsse.json``, a DSSE envelope (github.com/secure-systems-lab/dsse)::

    {"payloadType": "application/vnd.in-toto+json",
     "payload": base64(statement),
     "signatures": [{"keyid": "sha256:<hex of the public key's DER>", "sig": base64(ed25519)}]}

The signature is ed25519 over PAE(payloadType, payload) = ``"DSSEv1" SP len(type) SP type
SP len(payload) SP payload`` (lengths in ASCII decimal). The payload is an in-toto
Statement v1 (canonical JSON) whose subjects are *every* regular file of the tree — the
final manifest, the published statements, every attempt file, the reports, ``.hydra/``,
logs — but the envelope itself and the write locks (``.xaytune.lock``: a pid, rewritten
by any later writer that takes the lock, even one refused right after), each named by
its path relative to the tree (POSIX separators) with its sha256, sorted by name; its
predicate (``PREDICATE_TYPE``) records the number of files. The statement is a function
of the files alone (:func:`write_statement` writes it for another signer, e.g.
Sigstore): made again on a received tree, it is byte for byte the signed one exactly
when the tree is the signed tree.

:func:`check_signature` trusts nothing in the tree before the envelope verifies with the
caller's public key, then requires the tree's files to be exactly the signed subjects,
byte for byte. Its problems, one line each:

- ``unsigned``: no envelope in the tree;
- ``bad-signature``: the envelope is not a DSSE envelope of an in-toto statement, no
  signature in it verifies with the trusted key (a wrong key, an edited payload or
  signature), or the signed payload is not a tree statement;
- ``signature-mismatch: <file>``: a file changed since signing, a signed file missing, a
  file added (not signed), or a link or special file (never signed).

Signing refuses (one line each): a tree without a finished manifest (``not-a-run``,
``bad-manifest``, ``incomplete-run``), a tree holding a symbolic link or special file
(``symlink``, ``not-a-file``), a tree being written (``tree-locked``: a run, resume or
compare holds its lock), an envelope or statement that cannot be written
(``unwritable``, ``statement-inside-tree``), and a key that is not an unencrypted
ed25519 PEM (``bad-key``). Signing again replaces the envelope. Sigstore can sign the
same statement instead (README, "Signing"); the ed25519 path needs no network and no
account.
"""

from __future__ import annotations

import base64
import binascii
import errno
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

# cryptography (~20 ms to import) is imported by the functions that use a key: the audit
# of an unsigned tree, without --trust, never does (tests/app/test_app_lazy_imports.py).
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import ConfigError, EvidenceError, FingerprintError
from xaytune.experiment.tree.layout import LOCK_FILE
from xaytune.experiment.tree.manifest_view import inside, read_manifest

__all__ = [
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "SIGNATURE_FILE",
    "check_signature",
    "generate_key",
    "keyid",
    "load_private_key",
    "load_public_key",
    "pae",
    "sign_tree",
    "tree_statement",
    "write_statement",
]

SIGNATURE_FILE = "signature.dsse.json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://xaytune.dev/attestations/output-tree/v1"
PREDICATE_SCHEMA = "xaytune.tree-signature/v1"
_HEX = frozenset("0123456789abcdef")
# xaytune.experiment.tree.manifest.MANIFEST, named here so that signing does not import the run's
# whole machinery (scipy, hydra) to hash files.
MANIFEST = "manifest.json"


# ---------------------------------------------------------------- keys


def generate_key(path: Path) -> tuple[Path, Path]:
    """A new ed25519 key pair: the private key (PKCS#8 PEM, mode 0600) at ``path``, the
    public key (SubjectPublicKeyInfo PEM) at ``path.pub``; refused (``exists``) when
    either file is there already. A missing directory is created (mode 0700)."""
    public_path = path.with_name(path.name + ".pub")
    for target in (path, public_path):
        if os.path.lexists(target):
            raise ConfigError("exists", f"{target}: already exists; a key is never overwritten")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    if not path.parent.is_dir():  # `--generate-key keys/xaytune` in a fresh folder
        try:
            path.parent.mkdir(mode=0o700, parents=True)  # holds a private key: owner only
        except OSError as error:
            raise ConfigError(
                "bad-key", f"{path.parent}: cannot create ({error.strerror})"
            ) from None
    _write_new(path, private_pem, 0o600)
    _write_new(public_path, public_pem, 0o644)
    return path, public_path


def _write_new(path: Path, data: bytes, mode: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except OSError as error:
        raise ConfigError("bad-key", f"{path}: cannot write ({error.strerror})") from None
    try:
        os.fchmod(fd, mode)  # whatever the umask: the private key is 0600, exactly
        os.write(fd, data)
    finally:
        os.close(fd)


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The ed25519 private key in the PEM at ``path`` (``bad-key`` otherwise)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(_read_key(path), password=None)
    except (ValueError, TypeError) as error:
        raise ConfigError(
            "bad-key", f"{path}: not an unencrypted PEM private key ({_first_line(error)})"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError("bad-key", f"{path}: not an ed25519 key")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """The ed25519 public key in the PEM at ``path`` (``bad-key`` otherwise)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(_read_key(path))
    except (ValueError, TypeError) as error:
        raise ConfigError(
            "bad-key", f"{path}: not a PEM public key ({_first_line(error)})"
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError("bad-key", f"{path}: not an ed25519 public key")
    return key


def _read_key(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ConfigError("bad-key", f"{path}: cannot read ({error.strerror})") from None


def _first_line(error: Exception) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0]


def keyid(public_key: Ed25519PublicKey) -> str:
    """``sha256:<hex>`` of the public key's DER SubjectPublicKeyInfo."""
    from cryptography.hazmat.primitives import serialization

    der = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(der).hexdigest()


# ---------------------------------------------------------------- the statement


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what is signed."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _tree_files(tree: Path) -> tuple[dict[str, Path], list[Path]]:
    """Every regular file under ``tree`` but the envelope and the write locks, by its
    POSIX path relative to the tree; and every entry that is not a regular file or a
    directory (a link, a fifo, ...), which is never signed."""
    files: dict[str, Path] = {}
    others: list[Path] = []
    pending = [tree]
    while pending:
        directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                path = Path(entry.path)
                if entry.is_symlink():
                    others.append(path)
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(path)
                elif entry.is_file(follow_symlinks=False):
                    name = path.relative_to(tree).as_posix()
                    if name != SIGNATURE_FILE and entry.name != LOCK_FILE:
                        files[name] = path
                else:
                    others.append(path)
    return dict(sorted(files.items())), sorted(others)


def _sha256_file(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def tree_statement(tree: Path) -> dict[str, Any]:
    """The in-toto Statement v1 of every file of ``tree`` (refused: a link or special
    file, ``symlink`` / ``not-a-file``)."""
    files, others = _tree_files(tree)
    for path in others:
        if path.is_symlink():
            raise EvidenceError("symlink", f"{path}: an output tree holds no links; not signed")
        raise EvidenceError("not-a-file", f"{path}: not a regular file; not signed")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": name, "digest": {"sha256": _sha256_file(path)}} for name, path in files.items()
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": {"schema": PREDICATE_SCHEMA, "files": len(files)},
    }


@contextmanager
def _no_writer(tree: Path) -> Iterator[None]:
    """Hold a shared lock on the tree's write lock, if it has one, while it is hashed: a
    run, resume or compare writing it now is refused here (``tree-locked``), and one
    starting now is refused there. The lock file is neither created nor written."""
    try:
        fd = os.open(tree / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield
        return
    except OSError as error:
        word = errno.errorcode.get(error.errno or 0, "oserror")
        raise EvidenceError(
            "tree-locked", f"{tree / LOCK_FILE}: {word}: {error.strerror}"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EvidenceError(
                "tree-locked", f"{tree} is being written; sign it once the writer has finished"
            ) from None
        yield
    finally:
        os.close(fd)


def _payload(tree: Path) -> bytes:
    """The tree's statement, canonical JSON: only a finished run is signed."""
    if not tree.is_dir():
        raise EvidenceError("not-a-run", f"{tree}: not a directory")
    if not (tree / MANIFEST).is_file():
        raise EvidenceError("not-a-run", f"{tree}: no {MANIFEST}; not an xaytune output tree")
    with _no_writer(tree):
        read_manifest(tree / MANIFEST)  # incomplete-run, bad-manifest
        try:
            return canonical_bytes(tree_statement(tree))
        except FingerprintError:
            raise EvidenceError(
                "bad-name", f"{tree}: a file name that is not valid UTF-8 cannot be signed"
            ) from None


def sign_tree(tree: Path, private_key: Ed25519PrivateKey) -> Path:
    """Sign every file of the output tree ``tree``; return the envelope's path."""
    payload = _payload(tree)
    signature = private_key.sign(pae(PAYLOAD_TYPE, payload))
    envelope = {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [
            {"keyid": keyid(private_key.public_key()), "sig": base64.b64encode(signature).decode()}
        ],
    }
    path = tree / SIGNATURE_FILE
    _replace(path, canonical_bytes(envelope) + b"\n")
    return path


def write_statement(tree: Path, path: Path) -> None:
    """Write the tree's statement to ``path``, outside the tree, for another signer."""
    if tree.resolve() in path.resolve().parents:
        raise EvidenceError(
            "statement-inside-tree", f"{path}: inside {tree}; it would be a file of the tree"
        )
    _replace(path, _payload(tree))


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a temp file beside it, fsync, rename)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise EvidenceError("unwritable", f"{path}: cannot write ({error.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise EvidenceError("unwritable", f"{path}: cannot write ({error.strerror})") from None
        raise


# ---------------------------------------------------------------- checking


def check_signature(tree: Path, public_key: Ed25519PublicKey) -> list[str]:
    """Problems (one line each): the envelope does not verify with ``public_key``, or the
    tree's files are not exactly the signed ones with their digests."""
    path = tree / SIGNATURE_FILE
    if not os.path.lexists(path):
        return [f"unsigned: {path}: no signature; sign with python -m xaytune.sign"]
    try:
        signed = _verified_subjects(path, public_key)
    except _BadSignature as error:
        return [f"bad-signature: {path}: {error}"]
    files, others = _tree_files(tree)
    problems = [
        f"signature-mismatch: {other}: a link or special file, never signed" for other in others
    ]
    for name in sorted(set(signed) | set(files)):
        where = tree.joinpath(*name.split("/"))
        if name not in files:
            problems.append(f"signature-mismatch: {where}: signed, but missing")
        elif name not in signed:
            problems.append(f"signature-mismatch: {where}: not signed (added after signing)")
        elif _sha256_file(files[name]) != signed[name]:
            problems.append(f"signature-mismatch: {where}: changed since it was signed")
    return problems


class _BadSignature(Exception):
    """The envelope does not verify, or its payload is not a tree statement."""


def _verified_subjects(path: Path, public_key: Ed25519PublicKey) -> dict[str, str]:
    """The signed subjects (name -> sha256 hex), once a signature verifies."""
    if path.is_symlink() or not path.is_file():
        raise _BadSignature("not a regular file")
    try:
        envelope = json.loads(path.read_bytes())
        payload_type = envelope["payloadType"]
        payload = base64.b64decode(envelope["payload"], validate=True)
        signatures = [base64.b64decode(s["sig"], validate=True) for s in envelope["signatures"]]
    except (OSError, ValueError, RecursionError, KeyError, TypeError, binascii.Error):
        raise _BadSignature("not a DSSE envelope") from None
    if payload_type != PAYLOAD_TYPE or not signatures:
        raise _BadSignature(f"not a DSSE envelope of an in-toto statement ({PAYLOAD_TYPE})")
    message = pae(payload_type, payload)
    if not any(_verifies(public_key, signature, message) for signature in signatures):
        raise _BadSignature(
            f"no signature in it verifies with the trusted key {keyid(public_key)} "
            "(another key, or the envelope was edited)"
        )
    return _subjects(payload)


def _verifies(public_key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        public_key.verify(signature, message)
    except InvalidSignature:
        return False
    return True


def _subjects(payload: bytes) -> dict[str, str]:
    """The subjects of a signed tree statement (a signer's bug otherwise)."""
    try:
        statement = json.loads(payload)
        ok = statement["_type"] == STATEMENT_TYPE and statement["predicateType"] == PREDICATE_TYPE
        pairs = [(s["name"], s["digest"]["sha256"]) for s in statement["subject"]]
    except (ValueError, RecursionError, KeyError, TypeError):
        ok, pairs = False, []
    subjects: dict[str, str] = {}
    for name, digest in pairs:
        if (
            not isinstance(name, str)
            or not isinstance(digest, str)
            or inside(Path("."), name) is None
            or name == SIGNATURE_FILE
            or len(digest) != 64
            or not set(digest) <= _HEX
            or name in subjects
        ):
            ok = False
            break
        subjects[name] = digest
    if not ok:
        raise _BadSignature("the signed payload is not a statement of an output tree's files")
    return subjects
