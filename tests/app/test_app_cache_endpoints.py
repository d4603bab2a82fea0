"""The evidence cache never stores a replicate touched by a model error (issue 29)."""

from __future__ import annotations

import pytest

from xaytune.experiment.tree.cache import cacheable
from xaytune.harness.evidence.store import Outcome, Spend
from xaytune.harness.runner import AttemptResult


def _attempt(outcome: Outcome | None, *, model_errors: int = 0) -> AttemptResult:
    return AttemptResult(
        spec_fingerprint="sha256:" + "0" * 64,
        task_id="t",
        attempt=0,
        status="sealed" if outcome is not None else "partial",
        outcome=outcome,
        final_text=None,
        spend=Spend(model_calls=1, model_errors=model_errors),
        path=None,
        seal_digest=None,
    )


def test_complete_error_free_replicate_is_stored():
    attempts = [_attempt(Outcome(terminal="answer")), _attempt(Outcome(terminal="budget-stop"))]
    assert cacheable(attempts)


@pytest.mark.parametrize(
    "bad",
    [
        _attempt(None),  # partial: model-unavailable or a kill
        _attempt(Outcome(terminal="model-error")),
        _attempt(Outcome(terminal="answer"), model_errors=1),  # a call raised, then recovered
    ],
    ids=["partial", "model-error", "recovered-error"],
)
def test_any_model_error_or_partial_attempt_is_never_stored(bad):
    assert not cacheable([_attempt(Outcome(terminal="answer")), bad])
