"""Assembling a replicate's evidence from the store, and what assembly refuses."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from _fixtures_run import refused

import xaytune.harness.evidence.verify as evidence_module
from xaytune.harness import HarnessRunner, Toolbox
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.models.simulated import SimulatedModel

TOOLS = frozenset({"calculator"})


def test_every_assigned_task_is_attested_in_assignment_order(verified_run):
    evidence = verified_run.assemble()
    assignment = verified_run.assignment
    assert len(evidence.entries) == 20
    assert [e.task_id for e in evidence.entries] == list(assignment.task_ids)
    assert [e.position for e in evidence.entries] == list(range(20))
    assert evidence.assignment_digest == assignment.digest
    assert evidence.suite_digest == verified_run.suite.digest
    assert evidence.harness_fingerprint == verified_run.harness.fingerprint
    assert (evidence.seed, evidence.replicate) == (101, 0)
    for entry in evidence.entries:
        assert entry.status == "attested"
        assert [a.attempt for a in entry.attempts] == [1]
        attested = entry.attested
        assert attested is not None and attested.status == "complete"
        assert attested.outcome is not None and attested.outcome.terminal == "answer"
        assert not attested.recovered
    assert evidence.digest == evidence.content_digest()
    # Assembly is a function of the store: the same store gives the same evidence.
    assert evidence == verified_run.evidence


def test_assemble_calls_the_one_verification(verified_run, monkeypatch):
    # Both public doors go through the one verification (``_verify``); assembly tells
    # it, by argument (no hidden state), that it has just rebuilt these very objects.
    calls = []
    original = evidence_module._verify

    def spy(evidence, suite, source, store, *, just_rebuilt):
        calls.append((evidence, suite, source, store, just_rebuilt))
        return original(evidence, suite, source, store, just_rebuilt=just_rebuilt)

    monkeypatch.setattr(evidence_module, "_verify", spy)
    evidence = verified_run.assemble()
    assert len(calls) == 1
    verified, suite, source, store, just_rebuilt = calls[0]
    assert verified is evidence and just_rebuilt is True
    assert suite == verified_run.suite and source is verified_run.source
    assert store is verified_run.store
    # A verification of its own rebuilds everything, even of the object just assembled.
    evidence_module.verify_run_evidence(evidence, suite, source, store)
    assert [call[4] for call in calls] == [True, False]


def test_assemble_refuses_what_verification_refuses(verified_run):
    path = verified_run.attempt_file(4)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    assert parts.seal is not None and parts.events
    path.write_bytes(replace(parts, events=parts.events[:-1]).join())
    refused(verified_run.assemble, "chain-head-mismatch")


def test_task_whose_only_attempt_is_partial_has_no_attested_result(partial_run, partial_position):
    evidence = partial_run.assemble()
    entry = evidence.entries[partial_position]
    assert entry.status == "no-attested-result"
    assert entry.attested is None
    (attempt,) = entry.attempts
    assert attempt.status == "partial" and attempt.outcome is None
    # The spend so far is kept, not zeroed: one model call and its tool call ran.
    assert attempt.spend.model_calls == 1 and attempt.spend.tool_calls == 1
    assert attempt.spend.total_tokens > 0
    path = partial_run.attempt_file(partial_position)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    assert parts.seal is not None and not parts.tail
    seal = json.loads(parts.seal)
    assert seal["status"] == "partial" and seal["spend"] == attempt.spend.model_dump()
    kinds = [json.loads(line)["type"] for line in parts.events]
    assert kinds[-2:] == ["crashed", "end"]
    others = [e for i, e in enumerate(evidence.entries) if i != partial_position]
    assert all(e.status == "attested" for e in others)


def test_two_complete_attempts_for_one_task_are_refused(verified_run):
    spec = verified_run.specs()[7]
    result = HarnessRunner().run(
        spec, model=SimulatedModel(seed=101), toolbox=Toolbox.default(), authorized_tools=TOOLS
    )
    assert (result.attempt, result.status) == (2, "complete")
    error = refused(verified_run.assemble, "multiple-complete")
    assert spec.task_id in str(error)


def test_specs_missing_a_task_are_refused(verified_run):
    specs = verified_run.specs()
    dropped = specs.pop(11)
    error = refused(lambda: verified_run.assemble(specs), "task-omitted")
    assert dropped.task_id in str(error)


def test_a_task_run_twice_in_the_specs_is_refused(verified_run):
    specs = verified_run.specs()
    refused(lambda: verified_run.assemble([*specs, specs[3]]), "task-added")


@pytest.mark.parametrize("where", ["outside", "other-task", "none"])
def test_spec_output_outside_the_store_is_refused(verified_run, tmp_path, where):
    specs = verified_run.specs()
    uri = {
        "outside": str(tmp_path / "elsewhere" / "tasks" / "000003"),
        "other-task": specs[4].output_uri,
        "none": None,
    }[where]
    specs[3] = specs[3].model_copy(update={"output_uri": uri})
    error = refused(lambda: verified_run.assemble(specs), "output-mismatch")
    assert specs[3].task_id in str(error)


def test_specs_of_another_assignment_are_refused(verified_run, foreign_runs):
    other = foreign_runs["other-seed"]
    refused(lambda: verified_run.assemble(other.specs(verified_run.store)), "assignment-mismatch")


def test_specs_of_another_harness_are_an_attribution_mismatch(verified_run, foreign_runs):
    other = foreign_runs["other-harness"]
    error = refused(
        lambda: verified_run.assemble(other.specs(verified_run.store)), "attribution-mismatch"
    )
    assert "harness_fingerprint" in str(error)
