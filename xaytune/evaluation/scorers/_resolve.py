"""A scorer resolved from config: looked up, its code identified, its parameters
checked, and instantiated once (per bind, and per measure).

Refusals: the registry's (:class:`PluginError` ``unknown-part``, ``import-failed``,
``no-source``), ``bad-part`` (neither a function nor a class with ``score``, or a
signature that does not take the answer and the reference), ``bad-part-params``
(parameters the signature does not accept, ``match`` given as a parameter, a class
whose constructor raises); :class:`EvaluationError` ``scorer-mismatch`` (the config
pins other code than the scorer's current code), ``scorer-unsuited`` (a scorer that
declares the tasks it handles, ``__xaytune_accepts__``, given a suite with another
task: see :meth:`ResolvedScorer.check_tasks`) and, per task, ``scorer-failed``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xaytune.core.errors import EvaluationError, PluginError
from xaytune.evaluation.config import MatchRule, ScorerSpec
from xaytune.evaluation.scorers._score import Score, Scorer
from xaytune.plugins import CodeIdentity, check_params, code_identity, lookup, parameters_model

__all__ = ["ResolvedScorer", "resolve_scorer"]

# A scorer declaring this parameter receives the config's spec.match (``exact`` does).
MATCH_PARAMETER = "match"


@dataclass(frozen=True, slots=True)
class ResolvedScorer:
    """A scorer ready to score: its name, code identity, checked parameters, and the
    callable ``(answer, reference) -> bool | Score`` (the instance's ``score`` for a
    class scorer)."""

    name: str
    code: CodeIdentity
    params: dict[str, Any]
    # Typed as what it should be; ``score`` still refuses whatever else it returns.
    call: Scorer
    where: str
    # The scorer's ``__xaytune_accepts__(task) -> None | why not``, if it declares one.
    accepts: Callable[[Any], str | None] | None = None

    def check_tasks(self, tasks: Any) -> None:
        """Refuse (``scorer-unsuited``) when the scorer declares which tasks it handles
        and one of ``tasks`` is not among them: checked when the evaluation is bound,
        before any model call."""
        if self.accepts is None:
            return
        for task in tasks:
            why = self.accepts(task)
            if why is not None:
                raise EvaluationError(
                    "scorer-unsuited",
                    f"{self.where}: scorer {self.name!r} does not handle task {task.id!r}: {why}",
                )

    def score(self, answer: str, reference: str, *, task_id: str) -> Score:
        """The scorer's verdict on one task; refuses (``scorer-failed``) when the
        scorer raises or returns something other than a bool or a :class:`Score`."""
        try:
            verdict = self.call(answer, reference)
        except Exception as error:
            raise EvaluationError(
                "scorer-failed",
                f"{self.where}: scorer {self.name!r} on task {task_id!r} raised "
                f"{type(error).__name__}: {error}",
            ) from error
        if isinstance(verdict, bool):
            return Score(success=verdict)
        if isinstance(verdict, Score):
            return verdict
        raise EvaluationError(
            "scorer-failed",
            f"{self.where}: scorer {self.name!r} on task {task_id!r} returned "
            f"{type(verdict).__name__}, not a bool or a Score",
        )


def resolve_scorer(spec: ScorerSpec, match: MatchRule, *, where: str) -> ResolvedScorer:
    """``spec`` looked up, identified, checked and instantiated.

    When ``spec.code`` is given it must be the scorer's current code identity
    (``scorer-mismatch``, naming both digests).
    """
    name, part = lookup("scorer", spec.name, where=where)
    is_class = inspect.isclass(part)
    if is_class and not callable(getattr(part, "score", None)):
        raise PluginError("bad-part", f"{where}: scorer class {name!r} has no score method")
    if not is_class and not callable(part):
        kind = type(part).__name__
        raise PluginError(
            "bad-part", f"{where}: scorer {name!r} is a {kind}, not a function or class"
        )
    code = code_identity("scorer", name, part, where=where)
    if spec.code is not None and spec.code != code:
        raise EvaluationError(
            "scorer-mismatch",
            f"{where}: scorer {name!r} is not the code the config pins: pinned "
            f"{spec.code.target} {spec.code.version} {spec.code.source_sha256}, current "
            f"{code.target} {code.version} {code.source_sha256}",
        )
    call: Scorer
    if is_class:
        params = _params(part, 0, spec, match, where)
        try:
            instance = part(**params)
        except Exception as error:
            raise PluginError(
                "bad-part-params",
                f"{where}: constructing scorer {name!r} raised {type(error).__name__}: {error}",
            ) from None
        call = instance.score
        _takes_answer_and_reference(call, name, where)
    else:
        params = _params(part, 2, spec, match, where)
        call = functools.partial(part, **params)
    accepts = getattr(part, "__xaytune_accepts__", None)
    return ResolvedScorer(
        name=name,
        code=code,
        params=params,
        call=call,
        where=where,
        accepts=accepts if callable(accepts) else None,
    )


def _params(part: Any, skip: int, spec: ScorerSpec, match: MatchRule, where: str) -> dict[str, Any]:
    model = parameters_model(part, skip=skip, where=f"{where} {spec.name!r}")
    given = dict(spec.params)
    if MATCH_PARAMETER in model.model_fields:
        if MATCH_PARAMETER in given:
            raise PluginError(
                "bad-part-params",
                f"{where} {spec.name!r}: match: given by spec.match, not by params",
            )
        given[MATCH_PARAMETER] = match.model_dump(mode="json")
    return check_params(model, given, where=f"{where} {spec.name!r}")


def _takes_answer_and_reference(call: Callable[..., object], name: str, where: str) -> None:
    try:
        inspect.signature(call).bind("answer", "reference")
    except (TypeError, ValueError):
        raise PluginError(
            "bad-part", f"{where}: scorer {name!r}: score(answer, reference) cannot be called"
        ) from None
