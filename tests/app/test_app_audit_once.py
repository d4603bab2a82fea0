"""``python -m xaytune.verify`` does each piece of work once: it walks the output tree
once, and verifies each evidence store once (the evaluations recomputed from a store
use the evidence its one verification checked), and parses each published statement
once (the errors record and verification share it)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

import xaytune.audit.verify as audit_module
from xaytune.harness.evidence._rebuild import Rebuild

pytestmark = pytest.mark.slow


def test_each_store_is_verified_once_and_the_tree_walked_once(quickstart, monkeypatch):
    stores = sorted(quickstart.out.absolute().glob("candidates/*/seed-*/evidence"))
    verified: Counter[Path] = Counter()
    walks: list[Path] = []
    globs: list[str] = []
    compare, walk_tree = Rebuild.compare, audit_module.walk_tree

    def counting_compare(self, claimed):
        # Every verification from a store compares its rebuilt entries once.
        verified[Path(self.store.root)] += 1
        return compare(self, claimed)

    def counting_walk(root):
        walks.append(root)
        return walk_tree(root)

    def no_glob(name):
        def refused(self, *args, **kwargs):
            globs.append(f"{name}({self}, {args})")
            return getattr(Path, f"_real_{name}")(self, *args, **kwargs)

        return refused

    monkeypatch.setattr(Rebuild, "compare", counting_compare)
    monkeypatch.setattr(audit_module, "walk_tree", counting_walk)
    for name in ("glob", "rglob"):
        monkeypatch.setattr(Path, f"_real_{name}", getattr(Path, name), raising=False)
        monkeypatch.setattr(Path, name, no_glob(name))
    monkeypatch.setattr(os, "walk", lambda *args, **kwargs: globs.append("os.walk") or iter(()))

    problems, counts, _ = audit_module.audit_tree(quickstart.out)

    assert problems == []
    assert len(stores) == counts["stores"] == 6
    assert verified == dict.fromkeys(stores, 1)
    assert walks == [quickstart.out.absolute()]
    assert globs == []  # nothing else walks the tree (or lists it by pattern)


def test_each_published_statement_is_parsed_once(quickstart, monkeypatch):
    # The errors record (recomputed with the comparison) and verification both read
    # every replicate's published evidence: one parse of each statement serves both.
    import xaytune.harness.evidence.publish as publish

    statements = sorted(quickstart.out.absolute().glob("candidates/*/seed-*/evidence/published/*"))
    parsed: Counter[Path] = Counter()
    load_statement = publish._load_statement

    def counting(path):
        parsed[Path(path)] += 1
        return load_statement(path)

    monkeypatch.setattr(publish, "_load_statement", counting)

    problems, counts, _ = audit_module.audit_tree(quickstart.out)

    assert problems == []
    assert len(statements) == counts["subjects"] == 6
    assert parsed == dict.fromkeys(statements, 1)
