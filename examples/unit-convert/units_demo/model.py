"""A model adapter that plays the unit tasks: deterministic, seeded, not a language model.

It exists so the example produces meaningful numbers offline. It reads the question
with the task grammar (:func:`units_demo.units.parse_question`, never the references)
and plays a model that:

- calls the ``convert`` tool once when it is offered (``{"value", "from_unit",
  "to_unit"}``), and answers from the tool's result;
- slips when it copies that result into its answer with probability ``slip_rate``:
  half of the slips shift the decimal point (x10 or /10, always wrong), the other
  half round to two significant figures too early (within 1% or not, depending on
  the value);
- when a later user message asks it to "check" an answer already given (the
  ``self-check`` loop's prompt), calls the tool again and answers anew, slipping
  with a quarter of the rate;
- when the tool returns an error (an unknown unit), or no tool is offered and a unit
  is not in its own rough table, says it could not work it out (no answer line);
- without the tool, converts with rough factors it "remembers" (1 in = 2.5 cm,
  1 mi = 1.6 km, 1 lb = 450 g, ...), right only within a few percent;
- ends with ``ANSWER: <value> <unit>`` when a system or user message asks for
  ``ANSWER:``, otherwise with a sentence.

Randomness comes only from sha256 over (seed, the request's sampling key, the
messages): the same seed, replicate, task and history give the same reply. Tokens
are estimated as ceil(characters / 4), as the built-in simulator does.
"""

from __future__ import annotations

import hashlib
import json
import math

from units_demo.units import parse_question
from xaytune.model import (
    Message,
    ModelIdentity,
    ModelReply,
    ModelRequest,
    ToolCall,
    Usage,
    model_adapter,
)

__all__ = ["UnitsModel"]

_UNKNOWN = "I could not work this out."
# What the model "remembers" without a tool: round, slightly wrong factors.
_ROUGH: dict[str, float] = {
    "mm": 0.001,
    "cm": 0.01,
    "m": 1.0,
    "km": 1000.0,
    "in": 0.025,
    "ft": 0.3,
    "yd": 0.9,
    "mi": 1600.0,
    "g": 1.0,
    "kg": 1000.0,
    "oz": 28.0,
    "lb": 450.0,
}


def _number(value: float) -> str:
    return f"{value:.6g}"


@model_adapter(name="units-sim", version="1")
class UnitsModel:
    """A seeded player of the unit-convert tasks (see the module docstring)."""

    def __init__(self, *, seed: int, slip_rate: float = 0.4) -> None:
        if not 0.0 <= slip_rate <= 1.0:
            raise ValueError(f"slip_rate {slip_rate!r} is not in 0..1")
        self._seed = seed
        self._slip_rate = slip_rate
        self._identity = ModelIdentity(
            provider="units-demo",
            model="units-sim",
            revision="1",
            parameters={"seed": seed, "slip_rate": slip_rate},
        )

    @property
    def identity(self) -> ModelIdentity:
        """``units-demo / units-sim / 1`` with the seed and the slip rate."""
        return self._identity

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Reply to one request: a tool call, or the final text."""
        text, calls = self._respond(request)
        chars = sum(
            len(m.content or "") + sum(len(c.arguments) for c in m.tool_calls)
            for m in request.messages
        )
        chars += sum(len(json.dumps(t.parameters)) + len(t.description) for t in request.tools)
        spent = len(text or "") + sum(len(call.arguments) for call in calls)
        return ModelReply(
            text=text,
            tool_calls=calls,
            usage=Usage(
                input_tokens=max(1, math.ceil(chars / 4)),
                output_tokens=max(1, math.ceil(spent / 4)),
            ),
            finish_reason="tool_calls" if calls else "stop",
        )

    # ------------------------------------------------------------ internals
    def _draw(self, request: ModelRequest, label: str) -> float:
        """A uniform draw in [0, 1) from sha256(seed, sampling key, messages, label)."""
        hasher = hashlib.sha256(f"units-sim|{self._seed}|{request.sampling_key}|".encode())
        for message in request.messages:
            hasher.update(f"{message.role}:{len(message.content or '')}:".encode())
            hasher.update((message.content or "").encode())
        hasher.update(label.encode())
        return int.from_bytes(hasher.digest()[:8], "big") / 2.0**64

    def _respond(self, request: ModelRequest) -> tuple[str | None, tuple[ToolCall, ...]]:
        messages = request.messages
        found = _find_question(messages)
        if found is None:
            return _UNKNOWN, ()
        at, (value, from_unit, to_unit) = found
        instructions = "\n".join(m.content or "" for m in messages if m.role in ("system", "user"))
        marker = "ANSWER:" in instructions
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        answered = any(m.role == "assistant" and not m.tool_calls for m in messages[at + 1 :])
        checking = answered and "check" in (messages[last_user].content or "").lower()
        results = [m.content or "" for m in messages[last_user + 1 :] if m.role == "tool"]
        if not results and any(t.name == "convert" for t in request.tools):
            turn = 1 + sum(1 for m in messages if m.role == "assistant")
            arguments = json.dumps({"value": value, "from_unit": from_unit, "to_unit": to_unit})
            return None, (ToolCall(id=f"call_{turn}", name="convert", arguments=arguments),)
        if results:
            if results[-1].startswith("error:"):
                return f"The converter refused: {results[-1][7:]} {_UNKNOWN}", ()
            converted = float(results[-1].split()[0])
        elif from_unit in _ROUGH and to_unit in _ROUGH:
            converted = value * _ROUGH[from_unit] / _ROUGH[to_unit]
        else:
            return _UNKNOWN, ()
        rate = self._slip_rate / 4 if checking else self._slip_rate
        if self._draw(request, "slip") < rate:
            converted = self._slip(request, converted)
        quantity = f"{_number(converted)} {to_unit}"
        prose = f"Checked again: {quantity}." if checking else f"That is {quantity}."
        return (f"{prose}\nANSWER: {quantity}" if marker else prose), ()

    def _slip(self, request: ModelRequest, value: float) -> float:
        if value == 0:
            return 1.0
        if self._draw(request, "slip-kind") < 0.5:
            return value * 10 if self._draw(request, "slip-way") < 0.5 else value / 10
        digits = 1 - math.floor(math.log10(abs(value)))
        return round(value, digits)


def _find_question(
    messages: tuple[Message, ...],
) -> tuple[int, tuple[float, str, str]] | None:
    """The first user message that is a question of the task grammar, and its parts."""
    for at, message in enumerate(messages):
        if message.role == "user":
            parsed = parse_question(message.content or "")
            if parsed is not None:
                return at, parsed
    return None
