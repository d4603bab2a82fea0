"""The garbage collector while a command starts (xaytune.core.collector): off while it
imports, its imports frozen once it resumes, everything as it was when it ends."""

from __future__ import annotations

import gc

import pytest

from xaytune.core.collector import command_collector, resume_collector


@pytest.fixture(autouse=True)
def collector_as_found():
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_off_while_importing_then_frozen_and_back_on():
    gc.enable()
    assert gc.get_freeze_count() == 0
    with command_collector():
        assert not gc.isenabled()
        kept = [object() for _ in range(10)], {"a": [1, 2]}  # what imports leave behind
        resume_collector()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # moved to the permanent generation
        resume_collector()  # once only: nothing more happens
        assert gc.isenabled()
        assert kept
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # collectable again for the caller


def test_a_command_that_never_resumes_is_resumed_at_its_end():
    gc.enable()
    with pytest.raises(SystemExit), command_collector():
        assert not gc.isenabled()
        raise SystemExit(2)  # a refused command
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_collector_turned_off_by_the_caller_stays_off():
    gc.disable()
    with command_collector():
        resume_collector()
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_garbage_cycle_made_after_resuming_is_collected():
    gc.enable()
    with command_collector():
        resume_collector()

        class Node:
            pass

        node = Node()
        node.self = node  # a cycle only the collector frees
        del node
        assert gc.collect() >= 1
