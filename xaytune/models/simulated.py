"""A deterministic *simulator* of a model that solves arith-tools questions.

It is not a language model and is never presented as one: it reads the question
with the suite's own grammar (never the reference file), then plays a model whose
mental arithmetic slips more often on longer chains, who uses a calculator tool when
offered and told to, and who follows an answer format only when told to. It exists
so the whole evaluation path runs offline, deterministically and fast.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from xaytune.core import limits
from xaytune.core.canonical import MAX_SAFE_INTEGER
from xaytune.core.domain.arithmetic import Step, parse_question
from xaytune.core.errors import ConfigError, SuiteError
from xaytune.models.protocol import (
    ContextOverflowError,
    Message,
    ModelIdentity,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolSchema,
    TransientModelError,
    Usage,
)

__all__ = ["SimulatedModel"]

_TAG = b"xaytune-sim/v1"
_UNKNOWN = "I could not work this out."
_PROSE = (
    "After working through the steps, I get {value}.",
    "Working it through step by step, the result is {value}.",
    "The final result is {value}.",
)
_CALCULATOR_PROSE = "Using the calculator for each step, the result is {value}."
_CHECKED = "Checking each step again, the result is {value}."
_PLAN = "Plan:"
_MALFORMED_JUDGEMENT = "The candidate's answer seems reasonable overall."
_GRADER = "You are a grader"
_SCALE_RE = re.compile(r"SCORE:\s*<integer from (-?\d+) to (-?\d+)>")
_FIELD_RE = re.compile(
    r"^[ \t]*(Candidate answer|Reference answer|Reply with exactly):[ \t]*", re.MULTILINE
)
_MARKER_RE = re.compile(r"ANSWER:[ \t]*([^\n]*)")
_NUMBER_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@lru_cache(maxsize=4096)
def _question_steps(text: str) -> tuple[Step, ...] | None:
    try:
        return tuple(parse_question(text))
    except SuiteError:
        return None


def _find_question(messages: tuple[Message, ...]) -> tuple[int, tuple[Step, ...]] | None:
    """The latest user message holding a question: its index and the question's steps."""
    for at in range(len(messages) - 1, -1, -1):
        if messages[at].role == "user":
            steps = _question_steps(messages[at].content or "")
            if steps is not None:
                return at, steps
    return None


def _unit(key: bytes, label: bytes) -> float:
    """A uniform draw in [0, 1) from sha256(key, label)."""
    return int.from_bytes(hashlib.sha256(key + label).digest()[:8], "big") / 2.0**64


def _compute(value: int, op: str, operand: int) -> int:
    """What a careful reader would get; an inexact division rounds to nearest."""
    if op == "+":
        return value + operand
    if op == "-":
        return value - operand
    if op == "*":
        return value * operand
    return round(value / operand) if operand else value


def _tool_integer(text: str | None) -> int | None:
    """The integer in a calculator result, or None for an error or a non-integer."""
    if text is None or text.lstrip().lower().startswith("error:"):
        return None
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return None
    if not number.is_finite() or number != number.to_integral_value():
        return None
    return int(number)


def _normalise(text: str) -> str:
    return " ".join(text.lower().replace(",", "").split()).rstrip(".")


def _fields(text: str) -> dict[str, str]:
    """``Candidate answer`` / ``Reference answer`` / ``Reply with exactly`` blocks."""
    marks = list(_FIELD_RE.finditer(text))
    return {
        mark[1]: text[mark.end() : marks[i + 1].start() if i + 1 < len(marks) else None].strip()
        for i, mark in enumerate(marks)
    }


class SimulatedModel:
    """A seeded simulator of a model answering arith-tools questions (not a real model).

    Randomness derives only from sha256 over (seed, ``request.sampling_key``, the
    length-prefixed content of ``request.messages``): the same seed, replicate, task and
    history give the same reply. Behaviour:

    * calculator: when a tool named ``calculator`` is offered and a system or user
      message mentions "calculator", it makes one ``{"expression": "a op b"}`` call per
      step (ids ``call_<turn>_1``), continues from each tool result, and computes a
      step mentally when the result starts with ``error:`` or is not an integer;
    * mental: otherwise step ``k`` (1-based) slips with probability
      ``min(0.9, mental_error_base * (k + 1) / 2)``, so with the default 0.08 an
      n-operation task is right with probability about 0.92, 0.81, 0.68, 0.54,
      0.41, 0.30 for n = 1..6;
    * format: the final text ends with ``ANSWER: <value>`` only if a system or user
      message contains ``ANSWER:``; otherwise the answer is the last number of a prose
      sentence;
    * loops: when the last message is a user follow-up (after the question) that
      asks for a "plan" and nothing was answered yet, it replies with a numbered plan
      of the question's steps (``Plan:`` first); a plan in the conversation halves the
      slip rate of later mental steps. A follow-up asking to "check" an answer already
      given redoes the arithmetic with the slip rate halved (halved once more after a
      plan); a calculator user gives its calculator result again;
    * judge: with "You are a grader" in a system message it replies ``SCORE: n`` (see
      :meth:`_judge`); ``judge_malformed_rate`` of replies are unparsable;
    * failures: ``transient_error_rate`` of calls raise ``TransientModelError``; an
      input above ``context_window`` tokens raises ``ContextOverflowError``;
    * text without a question gets "I could not work this out.".

    Tokens are estimated as ceil(characters / 4): input over message contents,
    tool-call arguments and tool schema JSON; output over text and call arguments.
    A reply above ``request.max_output_tokens`` is cut with finish reason ``length``.
    ``latency_s`` sleeps per call; with 0 the call never yields to the event loop.

    Usage details (cached and reasoning tokens) are not reported, like a provider
    that does not report them, unless ``usage_details``: then the simulator plays a
    provider with a prefix cache and reports as cached the whole tokens
    (floor(characters / 4)) of what the conversation's previous call sent (the tool
    schemas and every message before the last assistant message; 0 on a first call),
    and 0 reasoning tokens (it reasons in no hidden tokens). Its replies are the same
    either way; ``usage_details`` enters the identity only when on.
    """

    @staticmethod
    def can_answer(text: str) -> bool:
        """Whether ``text`` holds an arith-tools question, the only kind it answers
        (to anything else it says "I could not work this out.")."""
        return _question_steps(text) is not None

    def __init__(
        self,
        *,
        seed: int,
        latency_s: float = 0.0,
        transient_error_rate: float = 0.0,
        context_window: int | None = None,
        mental_error_base: float = 0.08,
        judge_noise_rate: float = 0.2,
        judge_malformed_rate: float = 0.0,
        usage_details: bool = False,
    ) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool) or abs(seed) > MAX_SAFE_INTEGER:
            # The seed is in the identity, which is fingerprinted: an integer within 2^53.
            raise ConfigError(
                "model-config",
                f"simulated model seed {limits.quote(seed)} is not an integer within 2^53",
            )
        rates = {
            "transient_error_rate": transient_error_rate,
            "mental_error_base": mental_error_base,
            "judge_noise_rate": judge_noise_rate,
            "judge_malformed_rate": judge_malformed_rate,
        }
        # Bounds from xaytune.core.limits: a latency of 1e308 s would hang the run.
        bounds = {name: (rate, 0.0, 1.0, None) for name, rate in rates.items()}
        bounds["latency_s"] = (latency_s, 0.0, limits.MAX_LATENCY_S, "MAX_LATENCY_S")
        if context_window is not None:
            high = limits.MAX_CONTEXT_WINDOW
            bounds["context_window"] = (context_window, 1, high, "MAX_CONTEXT_WINDOW")
        for name, (value, low, high, limit_name) in bounds.items():
            try:
                limits.check_range(
                    value,
                    name=f"simulated model {name}",
                    low=low,
                    high=high,
                    limit_name=limit_name,
                )
            except limits.LimitError as breach:
                raise ConfigError("model-config", str(breach)) from None
        if context_window is not None and not isinstance(context_window, int):
            raise ConfigError(
                "model-config",
                f"simulated model context_window {limits.quote(context_window)} is not an integer",
            )
        if not isinstance(usage_details, bool):
            raise ConfigError(
                "model-config",
                f"simulated model usage_details {limits.quote(usage_details)} is not a boolean",
            )
        self._seed = seed
        self._usage_details = usage_details
        self._latency_s = float(latency_s)
        self._transient_error_rate = float(transient_error_rate)
        self._context_window = context_window
        self._mental_error_base = float(mental_error_base)
        self._judge_noise_rate = float(judge_noise_rate)
        self._judge_malformed_rate = float(judge_malformed_rate)
        self._prefix = hashlib.sha256(_TAG + b"|" + str(seed).encode() + b"|")
        self._schema_cache: tuple[tuple[ToolSchema, ...], int] = ((), 0)
        self._identity = ModelIdentity(
            provider="xaytune-sim",
            model="simulated-arith",
            revision="v1",
            parameters={
                "seed": seed,
                "latency_s": self._latency_s,
                "context_window": context_window,
                **{name: float(rate) for name, rate in rates.items()},
                # Only when on: identities pinned before the option existed stay valid.
                **({"usage_details": True} if usage_details else {}),
            },
        )

    @property
    def identity(self) -> ModelIdentity:
        """``xaytune-sim / simulated-arith / v1`` with every constructor option."""
        return self._identity

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Reply to one request, or raise a simulated transient or overflow error."""
        if self._latency_s > 0:
            await asyncio.sleep(self._latency_s)
        input_tokens = self._input_tokens(request)
        if self._context_window is not None and input_tokens > self._context_window:
            raise ContextOverflowError(
                f"simulated model: input of ~{input_tokens} tokens exceeds the context window "
                f"of {self._context_window} (sampling key {request.sampling_key!r})"
            )
        key = self._key(request)
        if self._transient_error_rate and _unit(key, b"transient") < self._transient_error_rate:
            raise TransientModelError(
                f"simulated transient failure (seed {self._seed}, "
                f"sampling key {request.sampling_key!r})"
            )
        text, calls = self._respond(request.messages, request.tools, key)
        spent = len(text or "") + sum(len(call.arguments) for call in calls)
        output_tokens = max(1, -(-spent // 4))
        finish = "tool_calls" if calls else "stop"
        limit = request.max_output_tokens
        if limit is not None and output_tokens > limit:
            text, calls, finish, output_tokens = (text or "")[: 4 * limit], (), "length", limit
        cached = reasoning = None
        if self._usage_details:
            cached, reasoning = self._cached_tokens(request), 0
        return ModelReply(
            text=text,
            tool_calls=calls,
            usage=Usage(
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cached_tokens=cached,
                reasoning_tokens=reasoning,
            ),
            finish_reason=finish,
        )

    # ------------------------------------------------------------ internals
    def _input_tokens(self, request: ModelRequest) -> int:
        chars = 0
        for message in request.messages:
            chars += len(message.content or "")
            for call in message.tool_calls:
                chars += len(call.arguments)
        return max(1, -(-(chars + self._schema_chars(request.tools)) // 4))

    def _schema_chars(self, tools: tuple[ToolSchema, ...]) -> int:
        """Characters of the tool schemas' JSON (remembered for the last tuple seen)."""
        if not tools:
            return 0
        cached_tools, cached_chars = self._schema_cache
        if cached_tools is not tools:
            cached_chars = sum(
                len(
                    json.dumps(
                        {"name": t.name, "description": t.description, "parameters": t.parameters},
                        sort_keys=True,
                    )
                )
                for t in tools
            )
            self._schema_cache = (tools, cached_chars)
        return cached_chars

    def _cached_tokens(self, request: ModelRequest) -> int:
        """Whole tokens of the previous call's request: the tool schemas and the
        messages before the last assistant message (0 when there is none)."""
        last = max((i for i, m in enumerate(request.messages) if m.role == "assistant"), default=-1)
        if last < 0:
            return 0
        chars = sum(
            len(message.content or "") + sum(len(call.arguments) for call in message.tool_calls)
            for message in request.messages[:last]
        )
        return (chars + self._schema_chars(request.tools)) // 4

    def _key(self, request: ModelRequest) -> bytes:
        """sha256 over (seed, sampling key, length-prefixed message content)."""
        hasher = self._prefix.copy()
        parts = [request.sampling_key]
        for message in request.messages:
            parts += (message.role, message.content or "", message.tool_call_id or "")
            for call in message.tool_calls:
                parts += (call.id, call.name, call.arguments)
            parts.append("\x1e")
        hasher.update("".join(f"{len(part)}:{part}" for part in parts).encode())
        return hasher.digest()

    def _respond(
        self, messages: tuple[Message, ...], tools: tuple[ToolSchema, ...], key: bytes
    ) -> tuple[str | None, tuple[ToolCall, ...]]:
        instructions = "\n".join(m.content or "" for m in messages if m.role in ("system", "user"))
        if any(m.role == "system" and _GRADER in (m.content or "") for m in messages):
            last_user = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
            return self._judge(last_user, key), ()
        found = _find_question(messages)
        if found is None:
            return _UNKNOWN, ()
        at, steps = found
        marker = "ANSWER:" in instructions
        later = messages[at + 1 :]
        follow_up = (later[-1].content or "").lower() if later and later[-1].role == "user" else ""
        answered = any(m.role == "assistant" and m.tool_calls == () for m in later)
        if "plan" in follow_up and not answered:
            return self._plan(steps), ()
        if any(t.name == "calculator" for t in tools) and "calculator" in instructions.lower():
            return self._with_calculator(messages, at, steps, key, marker)
        # A plan in the conversation, and a request to check an answer given, each halve
        # the slip rate of the mental arithmetic that follows.
        care = 1.0
        if any(m.role == "assistant" and (m.content or "").startswith(_PLAN) for m in later):
            care *= 0.5
        checking = "check" in follow_up and answered
        if checking:
            care *= 0.5
        value = steps[0].operand
        for k, step in enumerate(steps[1:], start=1):
            value = self._mental_step(value, step, k, key, care=care)
        template = _CHECKED if checking else _PROSE[int(_unit(key, b"prose") * len(_PROSE))]
        return self._final(template, value, marker), ()

    @staticmethod
    def _plan(steps: tuple[Step, ...]) -> str:
        """A numbered plan of the question's steps (no arithmetic done)."""
        names = {"+": "Add", "-": "Subtract", "*": "Multiply by", "/": "Divide by"}
        lines = [f"{_PLAN}", f"1. Start from {steps[0].operand}."]
        lines += [
            f"{k}. {names.get(step.op, step.op)} {step.operand}."
            for k, step in enumerate(steps[1:], start=2)
        ]
        return "\n".join(lines)

    def _with_calculator(
        self,
        messages: tuple[Message, ...],
        at: int,
        steps: tuple[Step, ...],
        key: bytes,
        marker: bool,
    ) -> tuple[str | None, tuple[ToolCall, ...]]:
        calls: list[ToolCall] = []
        results: dict[str, str | None] = {}
        for message in messages[at + 1 :]:
            if message.role == "assistant":
                calls += [c for c in message.tool_calls if c.name == "calculator"]
            elif message.role == "tool" and message.tool_call_id is not None:
                results[message.tool_call_id] = message.content
        value = steps[0].operand
        for k, step in enumerate(steps[1:], start=1):
            if k > len(calls):
                turn = 1 + sum(1 for m in messages if m.role == "assistant")
                arguments = json.dumps({"expression": f"{value} {step.op} {step.operand}"})
                return None, (
                    ToolCall(id=f"call_{turn}_1", name="calculator", arguments=arguments),
                )
            result = _tool_integer(results.get(calls[k - 1].id))
            value = result if result is not None else self._mental_step(value, step, k, key)
        return self._final(_CALCULATOR_PROSE, value, marker), ()

    def _mental_step(self, value: int, step: Step, k: int, key: bytes, *, care: float = 1.0) -> int:
        """One step done in the head: slips with probability growing with ``k``
        (scaled by ``care``)."""
        exact = _compute(value, step.op, step.operand)
        chance = min(0.9, self._mental_error_base * (k + 1) / 2) * care
        label = b"slip:%d" % k
        if _unit(key, label) >= chance:
            return exact
        size = 1 if step.op == "/" else 1 + int(_unit(key, label + b":size") * 9)
        downward = _unit(key, label + b":sign") < 0.5 and exact - size >= 0
        return exact - size if downward else exact + size

    @staticmethod
    def _final(template: str, value: int, marker: bool) -> str:
        prose = template.format(value=value)
        return f"{prose}\nANSWER: {value}" if marker else prose

    def _judge(self, prompt: str, key: bytes) -> str:
        """``SCORE: n`` on the prompt's declared scale ``LO..HI``.

        With a reference: a matching candidate (normalised text, its ``ANSWER:`` value,
        or its last number) scores HI, else LO; ``judge_noise_rate`` of scores move one
        step inwards. Without one: a bare number or marker-formatted answer scores the
        middle, other text one below it, no number at all LO; ``judge_noise_rate`` of
        scores move one step up or down. Scores stay on the scale.
        """
        if _unit(key, b"judge-malformed") < self._judge_malformed_rate:
            return _MALFORMED_JUDGEMENT
        scale = _SCALE_RE.search(prompt)
        if scale is None:
            return "I cannot grade this without a score scale."
        low, high = sorted((int(scale[1]), int(scale[2])))
        fields = _fields(prompt)
        candidate = fields.get("Candidate answer", "")
        reference = fields.get("Reference answer")
        marked = _MARKER_RE.findall(candidate)
        numbers = _NUMBER_RE.findall(candidate)
        noisy = _unit(key, b"judge-noise") < self._judge_noise_rate
        if reference is not None:
            wanted = _normalise(reference)
            matches = wanted in {
                _normalise(candidate),
                _normalise(marked[-1]) if marked else None,
                _normalise(numbers[-1]) if numbers else None,
            }
            score = (high - 1 if noisy else high) if matches else (low + 1 if noisy else low)
        else:
            if marked or _NUMBER_RE.fullmatch(candidate.strip()):
                score = (low + high) // 2
            else:
                score = (low + high) // 2 - 1 if numbers else low
            if noisy:
                score += 1 if _unit(key, b"judge-direction") < 0.5 else -1
        return f"SCORE: {min(high, max(low, score))}"
