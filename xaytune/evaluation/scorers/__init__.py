"""Scorers: the rule by which ``harness-outcome`` decides task_success.

Contract
--------
A scorer sees the extracted answer and the task's reference, nothing else (no
trajectory, no task input, no store: a scorer cannot make evidence lie). It is one of

* a function ``fn(answer: str, reference: str, *, <params>) -> bool | Score``;
* a class whose constructor takes the params, ``cls(*, <params>)``, and whose
  instances have ``score(answer: str, reference: str) -> bool | Score``.

Its parameters are declared by the signature, each with a type hint (and a default
when optional); config gives them as ``spec.scorer.params`` and they are checked
against the signature when the evaluation is bound (``bad-part-params``: an unknown
or missing parameter, a wrong JSON type, a value outside an ``Annotated`` constraint).
A scorer declaring a parameter named ``match`` receives the config's ``spec.match``
(a :class:`~xaytune.evaluation.config.MatchRule`), which params may not set; the
other scorers ignore ``spec.match``. ``True`` / ``Score(success=True)`` is task_success
1, ``False`` / ``Score(success=False)`` is 0; ``Score.reason`` says why, briefly.

The scorer is resolved once at bind time (unknown names, import errors, bad
signatures and parameters are refused there, before any measurement) and again, and
instantiated once, per measurement; it is called once per attested task that has an
extracted answer (the tasks without one score 0 or are absent without a call).

A scorer may declare which tasks it handles: ``__xaytune_accepts__(task)`` (an
attribute of the function or class) returns None for a task it handles, else why not in
one line; binding the evaluation over a suite with any other task is refused
(``scorer-unsuited``), before any model call (the BFCL scorers do: ``bfcl-ast`` checks
only the AST categories).

A scorer must be deterministic: the same answer and reference, the same verdict and
reason (no randomness, no clock, no state kept between calls). ``python -m
xaytune.verify`` recomputes every outcome evaluation from the evidence and names, in
one line each, the tasks whose verdict differs from the recorded one
(``evaluation-mismatch``); ``execution`` runs the answers again in its sandbox there.

A scorer that raises, or returns anything other than a ``bool`` or a :class:`Score`,
makes the evaluation refuse: ``EvaluationError("scorer-failed")`` naming the task and
the scorer, never a silent 0. Built-ins raise for a reference they cannot read.

Identity (C3): a scorer is identified by its code (dotted path, declared version,
sha256 of its module's source; see ``xaytune.plugins.code_identity``). Binding pins
that identity into the config's ``spec.scorer.code``, so the evaluator fingerprint
changes when the scorer's code does; measuring re-checks it (``scorer-mismatch``).
User scorers register with ``@scorer`` (``xaytune.scorer``, by name) or are named by
dotted path; the built-ins below register with the same decorator. :class:`Scorer` is
the call the evaluation makes (``(answer, reference) -> bool | Score``),
:class:`ScorerObject` a class scorer's instance.

Built-ins (by config name)
--------------------------
* ``exact``: equality after ``spec.match``'s normalisation (the v1 rule, unchanged;
  see :func:`normalise`).
* ``numeric`` (``abs_tol: float = 0``, ``rel_tol: float = 0``): both read as decimal
  numbers (thousands commas dropped); success when ``|a - r| <= max(abs_tol, rel_tol *
  |r|)``; an answer that is not a number fails ``not-a-number``.
* ``normalized-text``: equality after SQuAD normalisation (lower case, punctuation,
  articles a/an/the removed, whitespace collapsed).
* ``includes`` (``case_sensitive: bool = False``): the reference occurs in the answer.
* ``regex`` (``mode: "fullmatch" | "search" = "fullmatch"``, ``ignore_case: bool =
  False``): the reference is a pattern the answer matches; an invalid pattern is
  ``scorer-failed``.
* ``choice`` (``letters: str = "ABCDEFGHIJ"``): the answer's option letter (``B``,
  ``(B)``, ``B.``, ``B)``, ``Answer: B``, ...) equals the reference letter, any case;
  none found fails ``no-choice``.
* ``f1`` (``threshold: float = 0.5``): SQuAD token F1 >= threshold; the reason is
  ``f1=<value>``.
* ``json``: both parsed as JSON and equal in RFC 8785 canonical form; an answer that is
  not JSON fails ``not-json``; a reference that is not JSON is ``scorer-failed``.
* ``execution`` (``wall_s``, ``cpu_s``, ``memory_mb``, ``output_kb``, ``tests_field``,
  ``entry_point_field``, ``prepend_field``): the answer is code, run against the
  reference's tests in a sandboxed child process (``xaytune.evaluation.scorers.execution``;
  limits and threat model in ``_sandbox``); the reason is how the run ended (``passed``,
  ``failed: ...``, ``timeout: ...``, ``forbidden: ...``, ...).

Each built-in's module docstring states its edge cases exactly.
"""

from xaytune.evaluation.scorers._choice import choice
from xaytune.evaluation.scorers._exact import exact, normalise
from xaytune.evaluation.scorers._includes import includes
from xaytune.evaluation.scorers._json import json
from xaytune.evaluation.scorers._numeric import numeric
from xaytune.evaluation.scorers._regex import regex
from xaytune.evaluation.scorers._resolve import ResolvedScorer, resolve_scorer
from xaytune.evaluation.scorers._sandbox import (
    SandboxLimits,
    SandboxResult,
    network_isolation,
    run_in_sandbox,
)
from xaytune.evaluation.scorers._score import Score, Scorer, ScorerObject
from xaytune.evaluation.scorers._text import f1, normalized_text

__all__ = [
    "ResolvedScorer",
    "SandboxLimits",
    "SandboxResult",
    "Score",
    "Scorer",
    "ScorerObject",
    "choice",
    "exact",
    "f1",
    "includes",
    "json",
    "network_isolation",
    "normalise",
    "normalized_text",
    "numeric",
    "regex",
    "resolve_scorer",
    "run_in_sandbox",
]
