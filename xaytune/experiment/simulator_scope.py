"""What the simulated model can answer, said before a run on tasks it cannot.

The simulator (:class:`xaytune.models.SimulatedModel`) reads only arith-tools
questions; to anything else it replies "I could not work this out.". On a user's own
suite both sides then score 0 and a verdict measures the prompts, not the harnesses:
the run says so in one warning line (``simulator-scope``) instead of staying silent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xaytune.core.domain.benchmark import SuiteSource
    from xaytune.experiment.config import ExperimentConfig

__all__ = ["simulator_scope"]


def simulator_scope(cfg: ExperimentConfig, source: SuiteSource) -> str | None:
    """The warning for a simulated model run on tasks holding no arith-tools question
    (how many, of which suite, and what to use instead); None when every task holds one
    or the model is not the simulator."""
    from xaytune.experiment.config import SimulatedModelConfig
    from xaytune.models import SimulatedModel

    if not isinstance(cfg.model, SimulatedModelConfig):
        return None
    tasks = source.suite.tasks
    blind = sum(
        not any(isinstance(v, str) and SimulatedModel.can_answer(v) for v in task.input.values())
        for task in tasks
    )
    if not blind:
        return None
    return (
        f"simulator-scope: {blind} of {len(tasks)} tasks of suite {source.suite.name} hold no "
        'arith-tools question, the only kind the simulated model answers (it replies "I '
        'could not work this out."); run your suite against a real endpoint '
        "(model=openai_compatible) or the scripted model"
    )
