"""What the viewer counts as an error or a budget stop, attempt by attempt."""

from __future__ import annotations

import pytest

from xaytune.report.viewer._attempts import AttemptView


@pytest.mark.parametrize(
    ("status", "terminal", "error", "budget_stop"),
    [
        ("complete", "answer", False, False),
        ("complete", "budget-stop", False, True),
        ("complete", "model-error", True, False),
        ("complete", "context-overflow", True, False),
        ("complete", "cancelled", True, False),
        ("partial", None, True, False),
    ],
)
def test_errors_and_budget_stops_of_a_verified_attempt(status, terminal, error, budget_stop):
    attempt = AttemptView(1, "f", True, None, status=status, terminal=terminal)
    assert attempt.error is error and attempt.budget_stop is budget_stop


def test_an_attempt_that_does_not_verify_is_neither():
    # Nothing read from an attempt that does not verify counts for a filter but its own.
    attempt = AttemptView(1, "f", False, "chain-broken: ...", status="partial", terminal=None)
    assert not attempt.error and not attempt.budget_stop
