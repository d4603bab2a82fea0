"""What the viewer counts as an error or a budget stop, attempt by attempt, and the
cause it groups an error under."""

from __future__ import annotations

import pytest

from xaytune.viewer._attempts import AttemptView, error_cause


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


def _event(kind: str, **payload) -> dict:
    return {"type": kind, "seq": 0, "v": payload}


@pytest.mark.parametrize(
    ("status", "terminal", "recovered", "events", "cause", "detail"),
    [
        ("complete", "answer", False, [], None, None),
        ("complete", "budget-stop", False, [], None, None),
        (
            "complete",
            "model-error",
            False,
            [
                _event("model_error", reason="model-http-500", message="first"),
                _event("model_error", reason="model-refused", message="HTTP 400: bad"),
            ],
            "model error: model-refused",
            "HTTP 400: bad",
        ),
        ("complete", "context-overflow", False, [], "context-overflow", None),
        (
            "partial",
            None,
            False,
            [_event("crashed", error="ZeroDivisionError: division by zero")],
            "crash: ZeroDivisionError",
            "ZeroDivisionError: division by zero",
        ),
        (
            "partial",
            None,
            False,
            [_event("crashed", error="KeyError: 'x'", part="tool")],
            "crash: tool KeyError",
            "KeyError: 'x'",
        ),
        (
            "partial",
            None,
            False,
            [_event("crashed", error="ModelUnavailable: model-unavailable: task t: down")],
            "model unavailable: model-unavailable",
            "ModelUnavailable: model-unavailable: task t: down",
        ),
        (
            "partial",
            None,
            False,
            [_event("timed-out", reason="attempt-timeout", deadline_s=0.2)],
            "timeout: attempt-timeout",
            "deadline 0.2 s",
        ),
        (
            "partial",
            None,
            False,
            [_event("interrupted", by="KeyboardInterrupt")],
            "interrupted",
            "by KeyboardInterrupt",
        ),
        ("partial", None, True, [], "recovered after a process crash", None),
    ],
)
def test_the_error_cause_of_an_attempt_is_read_from_its_events(
    status, terminal, recovered, events, cause, detail
):
    # The events the runner records (xaytune/harness/runner.py, _loop_context.py).
    assert error_cause(status, terminal, recovered, events) == (cause, detail)
