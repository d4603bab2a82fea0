"""A user's parts, written only against the public concept modules.

``xaytune.tool``, ``xaytune.loop``, ``xaytune.scorer``, ``xaytune.model`` and
``xaytune.environment`` are all a part's author imports here, as in a project of their
own. ``tests/test_concepts.py`` registers, resolves and runs these parts end to end on
the simulator; ``tests/test_typing.py`` checks this file with ``mypy --strict`` (so a
decorator or a type of the public surface that loses its types fails there).

The model adapter relays to the simulator under another tool name: the simulator uses
a tool only when it is called ``calculator``, and the user's tool is ``concept_calc``
(a built-in name cannot be taken), so the adapter translates the name both ways, as a
client for a service that names its tools differently would.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping

from xaytune.environment import Environment, environment
from xaytune.loop import LoopContext, tool_loop
from xaytune.loop import loop as register_loop
from xaytune.model import (
    Message,
    Model,
    ModelIdentity,
    ModelReply,
    ModelRequest,
    SimulatedModel,
    ToolCall,
    ToolSchema,
    model_adapter,
)
from xaytune.scorer import Score, Scorer, ScorerObject, scorer
from xaytune.tool import CalculatorTool, FunctionTool, Tool, ToolError, tool

__all__ = [
    "CALLS",
    "TOOL_NAME",
    "ConceptCounter",
    "ConceptRelay",
    "ExactText",
    "concept_calc",
    "concept_loop",
    "last_number",
]

TOOL_NAME = "concept_calc"
SIMULATOR_TOOL = "calculator"
# How many times the user's tool ran (the test reads it against the trajectory).
CALLS: list[str] = []
_LAST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_CALCULATOR = CalculatorTool()


@tool(name=TOOL_NAME, version="1")
def concept_calc(expression: str) -> str:
    """Evaluate an arithmetic expression exactly (e.g. `17 * 25 - 38`)."""
    CALLS.append(expression)
    if not expression.strip():
        raise ToolError("the expression is empty")
    return _CALCULATOR.invoke({"expression": expression})


@register_loop(name="concept-loop", version="1")
async def concept_loop(ctx: LoopContext, *, label: str = "concept") -> str | None:
    """The built-in tool loop, then a note of the spend it took."""
    text = await tool_loop(ctx)
    ctx.note(label, turns=ctx.spend.turns, tool_calls=ctx.spend.tool_calls)
    return text


@scorer(name="concept-last-number", version="1")
def last_number(answer: str, reference: str, *, tolerance: float = 0.0) -> Score:
    """The answer's last number is within ``tolerance`` of the reference."""
    found = _LAST_NUMBER.findall(answer)
    if not found:
        return Score(success=False, reason="no-number")
    gap = abs(float(found[-1]) - float(reference))
    return Score(success=gap <= tolerance, reason=f"gap={gap:g}")


@scorer(name="concept-exact-text", version="1")
class ExactText:
    """A class scorer: equal after stripping (and case-folding unless told not to)."""

    def __init__(self, *, case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive

    def score(self, answer: str, reference: str, /) -> bool:
        if self.case_sensitive:
            return answer.strip() == reference.strip()
        return answer.strip().casefold() == reference.strip().casefold()


def _renamed_call(call: ToolCall, old: str, new: str) -> ToolCall:
    return dataclasses.replace(call, name=new) if call.name == old else call


def _renamed_message(message: Message, old: str, new: str) -> Message:
    calls = tuple(_renamed_call(call, old, new) for call in message.tool_calls)
    return dataclasses.replace(message, tool_calls=calls)


def _renamed_schema(schema: ToolSchema, old: str, new: str) -> ToolSchema:
    return dataclasses.replace(schema, name=new) if schema.name == old else schema


@model_adapter(name="concept-relay", version="1")
class ConceptRelay:
    """The simulator behind a service that calls the calculator ``concept_calc``."""

    def __init__(self, *, seed: int) -> None:
        self._simulator = SimulatedModel(seed=seed)
        self.requests = 0

    @property
    def identity(self) -> ModelIdentity:
        inner = self._simulator.identity
        return ModelIdentity(
            provider="concept-relay",
            model=inner.model,
            revision=inner.revision,
            parameters=dict(inner.parameters),
        )

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests += 1
        relayed = dataclasses.replace(
            request,
            messages=tuple(
                _renamed_message(m, TOOL_NAME, SIMULATOR_TOOL) for m in request.messages
            ),
            tools=tuple(_renamed_schema(t, TOOL_NAME, SIMULATOR_TOOL) for t in request.tools),
        )
        reply = await self._simulator.complete(relayed)
        calls = tuple(_renamed_call(c, SIMULATOR_TOOL, TOOL_NAME) for c in reply.tool_calls)
        return dataclasses.replace(reply, tool_calls=calls)


@environment(name="concept-counter", version="1")
class ConceptCounter:
    """A counter the task's ``add`` tool moves; its state is the value."""

    def __init__(self, *, start: int = 0) -> None:
        self.value = start

    def tools(self) -> Mapping[str, Callable[..., str]]:
        return {"add": self.add}

    def state(self) -> dict[str, int]:
        return {"value": self.value}

    def add(self, amount: int) -> str:
        self.value += amount
        return str(self.value)


# Each part meets its concept's protocol, as the type checker sees it (and at run time).
_TOOL: Tool = FunctionTool(concept_calc)
_SCORER: Scorer = last_number
_SCORER_OBJECT: ScorerObject = ExactText()
_MODEL: Model = ConceptRelay(seed=0)
_ENVIRONMENT: Environment = ConceptCounter()
