"""``execution``: the answer is code, run against the task's tests in the sandbox.

The reference is either the tests' Python source (text), or a JSON object holding
them (``tests_field``, default ``test``: text, or a list of texts joined one per line,
e.g. MBPP's ``test_list``), optionally an entry point (``entry_point_field``, default
``entry_point``) and a field to prepend to the answer (``prepend_field``, e.g.
HumanEval's ``prompt`` when the model completes a function body; prepended as is).

One run (:mod:`._sandbox`, whose docstring states the limits and the threat model):
the program (prepended text + answer) runs as ``solution.py``, then the tests as
``tests.py`` in the same namespace, then, when the reference names an entry point and
the tests define ``check``, ``check(<entry point>)`` (HumanEval's convention). Success
only when the runner's pass marker, written after all of that, arrives with this
run's token. The reason is the sandbox's outcome: ``passed``, ``failed: AssertionError
at tests.py line 4``, ``timeout: over the time limit (CPU 5 s, wall 10 s)``, ``memory: ...``,
``syntax-error: ...``, ``forbidden: network use``, ``exited: ...``, ...

Determinism (the scorer contract): the same answer and reference give the same
outcome, except an answer whose running time is near ``cpu_s`` / ``wall_s``. Keep the
limits well above what a correct solution needs; ``python -m xaytune.verify`` runs
the answers again in this sandbox and names a task whose outcome differs.

A reference that is not tests (an object without ``tests_field``, tests that do not
compile, an entry point that is not text) makes the scorer raise (``scorer-failed``):
the suite and the scorer do not belong together.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from xaytune.evaluation.scorers._sandbox import SandboxLimits, pass_token, run_in_sandbox
from xaytune.evaluation.scorers._score import Score
from xaytune.plugins import scorer

__all__ = ["execution"]


def _fields(reference: str) -> dict[str, Any] | None:
    if not reference.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(reference)
    except ValueError:
        return None  # Python source that starts with a brace (a dict display)
    return value if isinstance(value, dict) else None


def _program(
    reference: str, tests_field: str, entry_point_field: str, prepend_field: str | None
) -> tuple[str, str, str | None]:
    """(prepended text, tests, entry point) read from ``reference``."""
    fields = _fields(reference)
    if fields is None:
        if prepend_field is not None:
            raise ValueError(f"prepend_field {prepend_field!r}: the reference is not an object")
        return "", reference, None
    if tests_field not in fields:
        raise ValueError(f"the reference has no {tests_field!r} field (tests_field)")
    tests = fields[tests_field]
    if isinstance(tests, list) and all(isinstance(line, str) for line in tests):
        tests = "\n".join(tests) + "\n"
    if not isinstance(tests, str):
        raise ValueError(f"the reference's {tests_field!r} is not text or a list of texts")
    entry_point = fields.get(entry_point_field)
    if entry_point is not None and not isinstance(entry_point, str):
        raise ValueError(f"the reference's {entry_point_field!r} is not text")
    prefix = ""
    if prepend_field is not None:
        prefix = fields.get(prepend_field)
        if not isinstance(prefix, str):
            raise ValueError(f"the reference's {prepend_field!r} is not text (prepend_field)")
    return prefix, tests, entry_point


@scorer(name="execution")
def execution(
    answer: str,
    reference: str,
    *,
    wall_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] = 10.0,
    cpu_s: Annotated[int, Field(ge=1, le=3600)] = 5,
    memory_mb: Annotated[int, Field(ge=64, le=1 << 20)] = 512,
    output_kb: Annotated[int, Field(ge=1, le=1 << 20)] = 64,
    tests_field: str = "test",
    entry_point_field: str = "entry_point",
    prepend_field: str | None = None,
) -> Score:
    """Success when the answer passes the reference's tests in the sandbox (module
    docstring); the reason is the sandbox's outcome."""
    prefix, tests, entry_point = _program(reference, tests_field, entry_point_field, prepend_field)
    limits = SandboxLimits(wall_s=wall_s, cpu_s=cpu_s, memory_mb=memory_mb, output_kb=output_kb)
    result = run_in_sandbox(
        prefix + answer,
        tests,
        entry_point=entry_point,
        token=pass_token(answer, reference),
        limits=limits,
    )
    return Score(success=result.outcome == "passed", reason=result.reason)


# Its rule is the sandbox's: the parent's and the runner's code are part of its identity.
execution.__xaytune_sources__ = (  # type: ignore[attr-defined]
    "xaytune.evaluation.scorers._sandbox",
    "xaytune.evaluation.scorers._sandbox_runner",
)
execution.__xaytune_version__ = "1"  # type: ignore[attr-defined]
