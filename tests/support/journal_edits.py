"""Test helper (tests/support is on pytest's pythonpath): a crash *before* a seal's
commit, mimicked after the fact.

A test that cuts a sealed attempt back to an open one mimics a crash; for the crash to
be one that happened before the seal was committed, the store's seal journal must not
list that seal either. :func:`forget_seal` rewrites the journal without it (re-chained),
as the journal would read had the crash come first.
"""

from __future__ import annotations

import json
from pathlib import Path

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.harness.evidence.journal import _GENESIS, JOURNAL_NAME

__all__ = ["forget_seal", "recommit_seal"]


def forget_seal(attempt_file: Path | str) -> str:
    """Drop the journal entry of ``<store>/tasks/<position>/<NNN>.jsonl``; return its digest."""
    path = Path(attempt_file)
    position, number = int(path.parent.name), int(path.stem)
    journal = path.parents[2] / JOURNAL_NAME
    head, out, dropped = _GENESIS, [], None
    for line in journal.read_bytes().splitlines():
        seals = []
        for entry in json.loads(line)["seals"]:
            if (entry[0], entry[1]) == (position, number):
                dropped = entry[2]
            else:
                seals.append(entry)
        if seals:
            raw = canonical_bytes({"prev": head, "seals": seals}) + b"\n"
            out.append(raw)
            head = sha256_digest(raw)
    assert dropped is not None, f"{path}: not in the journal"
    journal.write_bytes(b"".join(out))
    return dropped


def recommit_seal(attempt_file: Path | str) -> None:
    """Rewrite the journal (re-chained) so it lists the seal the file now holds: what
    an attacker who rewrites a seal must also do."""
    path = Path(attempt_file)
    forget_seal(path)
    seal = path.read_bytes().splitlines(keepends=True)[-1]
    journal = path.parents[2] / JOURNAL_NAME
    data = journal.read_bytes()
    head = sha256_digest(data.splitlines(keepends=True)[-1]) if data else _GENESIS
    entry = [int(path.parent.name), int(path.stem), sha256_digest(seal)]
    journal.write_bytes(data + canonical_bytes({"prev": head, "seals": [entry]}) + b"\n")
