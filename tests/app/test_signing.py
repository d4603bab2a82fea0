"""``python -m xaytune.sign`` and ``python -m xaytune.verify --trust``: a signed tree
verifies; one byte changed in any file, a file added or removed, another key or an edited
envelope is refused with its word."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import io
import json
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from xaytune.release.signing import (
    SIGNATURE_FILE,
    check_signature,
    generate_key,
    load_private_key,
    load_public_key,
    sign_tree,
)
from xaytune.sign import main as sign_main
from xaytune.verify import main as verify_main

pytestmark = pytest.mark.slow


def _run(main, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(arg) for arg in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> tuple[Path, Path]:
    """A key pair made by the command a user runs."""
    directory = tmp_path_factory.mktemp("keys")
    code, _, err = _run(sign_main, "--generate-key", directory / "signer")
    assert code == 0, err
    return directory / "signer", directory / "signer.pub"


@pytest.fixture
def signed(quickstart_copy: Path, keys) -> Path:
    code, _, err = _run(sign_main, quickstart_copy, "--key", keys[0])
    assert code == 0, err
    assert (quickstart_copy / SIGNATURE_FILE).is_file()
    return quickstart_copy


def _files(tree: Path) -> dict[str, Path]:
    """Every regular file of ``tree`` but the envelope and the write lock, found with
    os.walk (not the module's own walk)."""
    found = {}
    for directory, _, names in os.walk(tree):
        for name in names:
            path = Path(directory, name)
            relative = path.relative_to(tree).as_posix()
            if relative != SIGNATURE_FILE and name != ".xaytune.lock":
                found[relative] = path
    return found


def _problems(tree: Path, public: Path) -> tuple[int, list[str]]:
    code, out, err = _run(verify_main, tree, "--trust", public)
    assert "Traceback" not in err
    return code, out.strip().splitlines()


# -- what is signed --------------------------------------------------------------------


def test_the_envelope_is_dsse_over_a_statement_of_every_file(signed: Path, keys) -> None:
    envelope = json.loads((signed / SIGNATURE_FILE).read_bytes())
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    payload = base64.b64decode(envelope["payload"])
    (signature,) = envelope["signatures"]
    # PAE written out by hand from the DSSE spec: "DSSEv1" SP LEN(type) SP type SP
    # LEN(body) SP body; application/vnd.in-toto+json is 28 characters.
    pae = b"DSSEv1 28 application/vnd.in-toto+json %d " % len(payload) + payload
    public = load_public_key(keys[1])
    public.verify(base64.b64decode(signature["sig"]), pae)  # raises if it does not verify
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert signature["keyid"] == "sha256:" + hashlib.sha256(der).hexdigest()
    statement = json.loads(payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    expected = {
        name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in _files(signed).items()
    }
    assert subjects == expected
    # Every kind of file is in it: the final manifest, .hydra/, a published statement,
    # every attempt file.
    assert "manifest.json" in subjects and ".hydra/config.yaml" in subjects
    assert any(name.endswith(".intoto.json") for name in subjects)
    assert sum(name.endswith(".jsonl") and "/tasks/" in name for name in subjects) == 120


def test_a_signed_tree_verifies_with_trust(signed: Path, keys) -> None:
    code, out, err = _run(verify_main, signed, "--trust", keys[1])
    assert code == 0, out + err
    assert "signature: every file is as signed by the trusted key" in out


def test_without_trust_a_signed_tree_verifies_as_before(signed: Path) -> None:
    code, out, err = _run(verify_main, signed)
    assert code == 0, out + err
    assert out.startswith("ok: 6 evidence stores")
    assert "signed, not checked" in out


def test_the_statement_for_another_signer_is_the_signed_payload(signed: Path, tmp_path) -> None:
    code, _, err = _run(sign_main, signed, "--statement", tmp_path / "statement.json")
    assert code == 0, err
    envelope = json.loads((signed / SIGNATURE_FILE).read_bytes())
    assert (tmp_path / "statement.json").read_bytes() == base64.b64decode(envelope["payload"])
    code, _, err = _run(sign_main, signed, "--statement", signed / "statement.json")
    assert code == 2 and "statement-inside-tree" in err
    assert not (signed / "statement.json").exists()


# -- tampering ---------------------------------------------------------------------------


def test_one_byte_changed_in_any_file_is_refused(signed: Path, keys) -> None:
    """Every file, through the signature check itself (the full audit would take half a
    second per file); a few of them through ``verify --trust`` end to end."""
    public = load_public_key(keys[1])
    files = _files(signed)
    assert len(files) > 150  # the whole tree, not a sample
    end_to_end = {name for i, name in enumerate(sorted(files)) if i % 40 == 0}
    for name, path in sorted(files.items()):
        original = path.read_bytes()
        if original:
            changed = bytearray(original)
            changed[len(changed) // 2] ^= 0x01
        else:  # an empty file (main.log): one byte more is its one-byte change
            changed = bytearray(b"x")
        path.write_bytes(bytes(changed))
        try:
            lines = check_signature(signed.absolute(), public)
            if name in end_to_end:
                code, verified = _problems(signed, keys[1])
                assert code == 1 and set(lines) <= set(verified), (name, verified)
        finally:
            path.write_bytes(original)
        assert lines == [f"signature-mismatch: {path}: changed since it was signed"], (name, lines)
    assert _problems(signed, keys[1])[0] == 0


def test_a_writer_taking_the_lock_again_is_not_a_change(signed: Path, keys) -> None:
    """A resume refused right after taking the tree's lock writes its pid there: the
    lock is not evidence and is not signed."""
    (signed / ".xaytune.lock").write_text("4242\n")
    assert _problems(signed, keys[1])[0] == 0


def test_a_file_added_or_removed_is_refused(signed: Path, keys) -> None:
    added = signed / "comparison" / "notes.txt"
    added.write_text("an afterthought\n")
    code, lines = _problems(signed, keys[1])
    assert code == 1
    assert f"signature-mismatch: {added}: not signed (added after signing)" in lines
    added.unlink()
    removed = signed / ".hydra" / "overrides.yaml"
    removed.unlink()
    code, lines = _problems(signed, keys[1])
    assert code == 1
    assert f"signature-mismatch: {removed}: signed, but missing" in lines


def test_another_key_is_a_bad_signature(signed: Path, tmp_path) -> None:
    _, other = generate_key(tmp_path / "other")
    code, lines = _problems(signed, other)
    assert code == 1
    assert any(line.startswith("bad-signature:") for line in lines), lines


def _rewrite_envelope(tree: Path, edit) -> None:
    path = tree / SIGNATURE_FILE
    envelope = json.loads(path.read_bytes())
    edit(envelope)
    path.write_text(json.dumps(envelope))


def test_an_edited_envelope_is_a_bad_signature(signed: Path, keys) -> None:
    """A consistent rewrite: the attacker edits a report and puts its new digest into the
    signed statement, keeping the signature; then forges the signature bytes."""
    report = signed / "comparison" / "report.md"
    report.write_text(report.read_text().replace("trade-off", "favors-a"))

    def new_digest(envelope):
        statement = json.loads(base64.b64decode(envelope["payload"]))
        for subject in statement["subject"]:
            if subject["name"] == "comparison/report.md":
                subject["digest"]["sha256"] = hashlib.sha256(report.read_bytes()).hexdigest()
        envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()

    _rewrite_envelope(signed, new_digest)
    code, lines = _problems(signed, keys[1])
    assert code == 1
    assert any(line.startswith("bad-signature:") and "verifies" in line for line in lines)

    def forged_signature(envelope):
        sig = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
        sig[0] ^= 0x01
        envelope["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()

    _rewrite_envelope(signed, forged_signature)
    assert any(line.startswith("bad-signature:") for line in _problems(signed, keys[1])[1])
    (signed / SIGNATURE_FILE).write_text("not json")
    code, lines = _problems(signed, keys[1])
    assert code == 1 and any("bad-signature:" in line and "DSSE" in line for line in lines)


def test_a_tree_without_envelope_is_unsigned(quickstart_copy: Path, keys) -> None:
    code, lines = _problems(quickstart_copy, keys[1])
    assert code == 1
    assert any(line.startswith("unsigned:") for line in lines), lines


def test_a_resigned_tampered_tree_is_refused_by_the_trusted_key(signed: Path, tmp_path, keys):
    """Whoever rewrites the tree must sign it again, and cannot with the trusted key."""
    report = signed / "comparison" / "report.md"
    report.write_text(report.read_text() + "\n")
    private, _ = generate_key(tmp_path / "attacker")
    sign_tree(signed, load_private_key(private))
    code, lines = _problems(signed, keys[1])
    assert code == 1 and any(line.startswith("bad-signature:") for line in lines)


# -- keys and refusals -----------------------------------------------------------------


def test_generated_keys_are_ed25519_and_the_private_one_is_0600(keys) -> None:
    private, public = keys
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert isinstance(load_public_key(public), Ed25519PublicKey)
    load_private_key(private)
    code, _, err = _run(sign_main, "--generate-key", private)
    assert code == 2 and "error: exists:" in err
    code, _, err = _run(verify_main, "--trust", private, private.parent)  # a private key
    assert code == 2 and "bad-key" in err


def test_a_key_in_a_missing_directory_is_made_there_owner_only(tmp_path) -> None:
    """`sign --generate-key keys/xaytune` pasted into a fresh folder: the directory is
    made (0700: it holds a private key) and the pair written; a file in the way is
    refused as bad-key in one line."""
    code, _, err = _run(sign_main, "--generate-key", tmp_path / "keys" / "xaytune")
    assert code == 0, err
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    assert (tmp_path / "keys" / "xaytune.pub").is_file()
    (tmp_path / "file").write_text("mine")
    code, _, err = _run(sign_main, "--generate-key", tmp_path / "file" / "k")
    assert code == 2 and err.startswith("error: bad-key:"), err
    assert err.count("\n") == 1


def test_signing_refuses_a_link_a_writer_and_an_unfinished_run(quickstart_copy, keys) -> None:
    link = quickstart_copy / "link"
    link.symlink_to(quickstart_copy / "manifest.json")
    code, _, err = _run(sign_main, quickstart_copy, "--key", keys[0])
    assert code == 2 and "error: symlink:" in err
    link.unlink()
    # A run, resume or compare holds the tree's lock while it writes.
    lock = os.open(quickstart_copy / ".xaytune.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, _, err = _run(sign_main, quickstart_copy, "--key", keys[0])
        assert code == 2 and "error: tree-locked:" in err
    finally:
        os.close(lock)
    manifest = quickstart_copy / "manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b'"complete":true', b'"complete":false'))
    code, _, err = _run(sign_main, quickstart_copy, "--key", keys[0])
    assert code == 2 and "error: incomplete-run:" in err
    assert not (quickstart_copy / SIGNATURE_FILE).exists()


def test_check_signature_lists_every_mismatch(signed: Path, keys) -> None:
    public = load_public_key(keys[1])
    assert check_signature(signed, public) == []
    for name in ("manifest.json", ".hydra/hydra.yaml"):
        (signed / name).write_bytes((signed / name).read_bytes() + b" ")
    problems = check_signature(signed, public)
    assert problems == [
        f"signature-mismatch: {signed / '.hydra/hydra.yaml'}: changed since it was signed",
        f"signature-mismatch: {signed / 'manifest.json'}: changed since it was signed",
    ]
