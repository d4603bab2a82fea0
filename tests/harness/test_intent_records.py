"""Every attempt record carries the run's intent digest; verification requires it."""

from __future__ import annotations

import asyncio
import json

from _fixtures_run import refused

from xaytune.harness import HarnessRunner, Toolbox
from xaytune.harness.evidence import assemble_evidence, verify_run_evidence
from xaytune.models.simulated import SimulatedModel

INTENT = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


def test_attempt_records_carry_the_intent_and_verification_requires_it(tmp_path, verified_run):
    run = verified_run.copy_to(tmp_path / "with-intent")
    for path in run.store.root.rglob("*"):
        if path.is_file():
            path.unlink()  # an empty store: this test runs its own attempts
    asyncio.run(
        HarnessRunner(intent=INTENT).run_many(
            run.specs(), model=SimulatedModel(seed=101), toolbox=Toolbox.default(),
            authorized_tools=frozenset({"calculator"}),
        )
    )  # fmt: skip
    record = json.loads(run.attempt_file(0).read_bytes().splitlines()[1])
    assert record["attribution"]["intent"] == INTENT
    assert record["schema"] == "xaytune.attempt/v3"

    def assemble(intent):
        return assemble_evidence(
            run.specs(), run.suite, run.sampling, run.assignment, run.source, run.store,
            intent=intent,
        )  # fmt: skip

    evidence = assemble(INTENT)
    assert evidence.intent == INTENT
    verify_run_evidence(evidence, run.suite, run.source, run.store)
    for wrong in (OTHER, None):
        # the evidence claims another intent than its attempts carry
        claimed = evidence.model_copy(update={"intent": wrong}).sealed()
        error = refused(
            lambda c=claimed: verify_run_evidence(c, run.suite, run.source, run.store),
            "attribution-mismatch",
        )
        assert "intent" in str(error)
        refused(lambda w=wrong: assemble(w), "attribution-mismatch")
