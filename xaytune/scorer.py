"""Scorers: the rule that decides ``task_success`` for the outcome evaluator.

A scorer is a function ``fn(answer: str, reference: str, *, <params>) -> bool | Score``
registered with :func:`scorer`, or a class built with its params whose instances have
``score(answer, reference)`` (a :class:`ScorerObject`). Either way the evaluation makes
one :class:`Scorer` call per attested task with an extracted answer, and the scorer
sees that answer and the task's reference, nothing else::

    from xaytune.scorer import Score, scorer

    @scorer(version="1")
    def close_enough(answer: str, reference: str, *, tolerance: float = 0.5) -> Score:
        try:
            gap = abs(float(answer) - float(reference))
        except ValueError:
            return Score(success=False, reason="not-a-number")
        return Score(success=gap <= tolerance, reason=f"gap={gap:g}")

Its params are checked against the signature when the evaluator is bound
(``bad-part-params``); a scorer that raises or returns anything but a ``bool`` or a
:class:`Score` makes the evaluation refuse (``scorer-failed``), never a silent 0. It
must be deterministic: ``python -m xaytune.verify`` recomputes every verdict. A scorer
taking a ``match`` parameter receives the config's :class:`MatchRule`. Its code
identity is pinned into the evaluator config, so the evaluator fingerprint (C3)
changes with its code. The built-ins (``exact``, ``numeric``, ``normalized-text``,
``includes``, ``regex``, ``choice``, ``f1``, ``json``, ...) are registered the same way;
their rules are in :mod:`xaytune.evaluation.scorers`.
"""

from xaytune.evaluation.config import MatchRule
from xaytune.evaluation.scorers import Score, Scorer, ScorerObject
from xaytune.plugins import scorer

__all__ = ["MatchRule", "Score", "Scorer", "ScorerObject", "scorer"]
