"""The commands pause the garbage collector while they import and resume it, with their
imports frozen, before their work (xaytune.core.collector); in-process callers get the
collector back as they had it."""

from __future__ import annotations

import gc

import pytest

pytestmark = pytest.mark.slow


def test_a_run_works_with_the_collector_on_and_its_imports_frozen(tmp_path, xaytune, monkeypatch):
    from xaytune.experiment import api

    seen = []
    real = api.execute

    def execute(*args, **options):
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        return real(*args, **options)

    monkeypatch.setattr(api, "execute", execute)
    assert gc.isenabled()
    done = xaytune(
        tmp_path, "+experiment=quickstart", "progress=false", f"hydra.run.dir={tmp_path}/r"
    )
    assert done.returncode == 0, done.describe()
    assert len(seen) == 1
    enabled, frozen = seen[0]
    assert enabled and frozen > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0  # as this process had it


def test_a_refused_run_gives_the_collector_back(tmp_path, xaytune):
    done = xaytune(tmp_path, "+experiment=quickstart", "seeds=[]", f"hydra.run.dir={tmp_path}/r")
    assert done.returncode == 2, done.describe()
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_audit_works_with_the_collector_on(quickstart, monkeypatch):
    from xaytune.audit import verify as audit
    from xaytune.verify import main

    seen = []
    real = audit.audit_tree

    def audit_tree(*args, **options):
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        return real(*args, **options)

    monkeypatch.setattr(audit, "audit_tree", audit_tree)
    assert main([str(quickstart.out)]) == 0
    assert len(seen) == 1
    enabled, frozen = seen[0]
    assert enabled and frozen > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0
