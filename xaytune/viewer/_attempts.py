"""One attempt file, verified and made readable: its seal, spend and transcript.

Each attempt is verified with the evidence room's own rebuild (the check
``verify_run_evidence`` makes of every attempt): its record must be attributed to
this suite, assignment, task, position, seed and harness; its events must chain
from the record to the head its seal names; its seal must match its end event. An
attempt that does not verify is shown as such, with the refusal's one line, and its
bytes only as raw, unparsed text: nothing in it is laid out as a transcript.

A transcript is the attempt's events in order: the task's system and user messages
(``start``), each model reply (text, tool calls with their arguments, token usage),
each tool result, model errors, loop notes, an interruption or crash, and the end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from xaytune.core.errors import XaytuneError
from xaytune.harness.evidence.attempt_file import parse_line, split_attempt
from xaytune.harness.evidence.journal import check_journaled
from xaytune.harness.evidence.rebuild_attempt import Expected, rebuild_attempt
from xaytune.harness.evidence.trajectory import verify_chain

__all__ = ["AttemptView", "Block", "EventView", "error_cause", "read_attempt"]

# Raw bytes of an attempt that does not verify shown at most (the rest is elided).
RAW_LIMIT = 64 * 1024
# Terminal outcomes that are errors rather than an answer or a budget stop.
ERROR_TERMINALS = frozenset({"model-error", "context-overflow", "cancelled"})


@dataclass(frozen=True, slots=True)
class Block:
    """One labelled piece of an event: ``text`` is shown preformatted when ``pre``."""

    label: str
    text: str
    pre: bool = False


@dataclass(frozen=True, slots=True)
class EventView:
    """One event of a transcript: its kind (``model_reply``, ...), a title, blocks."""

    seq: int
    kind: str
    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class AttemptView:
    """One attempt as the viewer shows it. When ``verifies`` is False, ``problem`` is
    the refusal and ``raw`` the file's text; nothing else is read from it."""

    number: int
    file: str
    verifies: bool
    problem: str | None
    status: str | None = None
    recovered: bool = False
    terminal: str | None = None
    answer: str | None = None
    detail: str | None = None
    spend: tuple[tuple[str, str], ...] = ()
    events: tuple[EventView, ...] = ()
    raw: str = ""
    cause: str | None = None
    cause_detail: str | None = None

    @property
    def budget_stop(self) -> bool:
        return self.verifies and self.terminal == "budget-stop"

    @property
    def error(self) -> bool:
        """Sealed partial (no outcome), or ended in an error outcome."""
        return self.verifies and (self.status == "partial" or self.terminal in ERROR_TERMINALS)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _arguments(text: Any) -> str:
    """Tool-call arguments, pretty-printed when they are a JSON object."""
    if isinstance(text, str):
        try:
            return json.dumps(json.loads(text), ensure_ascii=False, indent=1, sort_keys=True)
        except ValueError:
            return text
    return _text(text)


def _event_view(event: dict[str, Any]) -> EventView:
    kind, v, seq = event.get("type"), event.get("v"), event.get("seq")
    if not isinstance(v, dict):
        v = {}
    blocks: list[Block] = []
    if kind == "start":
        title = "task"
        blocks.append(Block("system", _text(v.get("system")), pre=True))
        blocks.append(Block("user", _text(v.get("user")), pre=True))
        blocks.append(Block("tools", ", ".join(map(str, v.get("tools") or [])) or "none"))
    elif kind == "model_reply":
        usage = v.get("usage") or {}
        title = (
            f"model, turn {v.get('turn')} · {usage.get('input')} in / {usage.get('output')} out"
            f" tokens · {v.get('finish_reason')}"
        )
        if v.get("retries"):
            title += f" · {v['retries']} retries"
        if v.get("text") is not None:
            blocks.append(Block("text", _text(v["text"]), pre=True))
        for call in v.get("tool_calls") or []:
            call = call if isinstance(call, dict) else {}
            blocks.append(
                Block(
                    f"tool call {call.get('name')} ({call.get('id')})",
                    _arguments(call.get("arguments")),
                    pre=True,
                )
            )
    elif kind == "tool_result":
        ok = "ok" if v.get("ok") else "error"
        title = f"tool result {v.get('name')} ({v.get('call_id')}) · {ok}"
        if v.get("content") is not None:
            blocks.append(Block("content", _text(v["content"]), pre=True))
        if v.get("error") is not None:
            blocks.append(Block("error", _text(v["error"]), pre=True))
    elif kind == "model_error":
        title = f"model error, turn {v.get('turn')} · {v.get('reason')}"
        blocks.append(Block("message", _text(v.get("message")), pre=True))
    elif kind == "note":
        title = f"note, turn {v.get('turn')}"
        blocks.append(Block("text", _text(v.get("text")), pre=True))
        if v.get("data") is not None:
            blocks.append(Block("data", _text(v["data"]), pre=True))
    elif kind == "end":
        outcome = v.get("outcome") or {}
        title = f"end · {v.get('status')}" + (
            f" · {outcome.get('terminal')}" if outcome.get("terminal") else ""
        )
    else:
        title = str(kind)
        blocks.append(Block("event", json.dumps(v, ensure_ascii=False, sort_keys=True), pre=True))
    return EventView(seq if isinstance(seq, int) else -1, str(kind), title, tuple(blocks))


def error_cause(
    status: str, terminal: str | None, recovered: bool, events: list[dict[str, Any]]
) -> tuple[str | None, str | None]:
    """Why an attempt ended without an answer, as (cause, detail), read from its sealed
    events: ``model error: <reason>``, ``context-overflow``, ``cancelled``, ``crash:
    <exception type>`` (detail: the recorded "Type: message"), ``timeout:
    attempt-timeout``, ``interrupted``, ``recovered after a process crash``; (None,
    None) for an answer or a budget stop (an outcome of the harness, not an error)."""
    payloads = {}
    for event in events:
        if isinstance(event, dict) and isinstance(event.get("v"), dict):
            payloads.setdefault(event.get("type"), []).append(event["v"])
    last_model_error = (payloads.get("model_error") or [{}])[-1]
    if status == "complete":
        if terminal == "model-error":
            return f"model error: {last_model_error.get('reason', 'unknown')}", _text(
                last_model_error.get("message", "")
            )
        if terminal in ("context-overflow", "cancelled"):
            return terminal, _text(last_model_error.get("message", "")) or None
        return None, None
    if "crashed" in payloads:
        crashed = payloads["crashed"][-1]
        error = _text(crashed.get("error", ""))
        kind, _, rest = (part.strip() for part in error.partition(":"))
        if kind == "ModelUnavailable":  # the endpoint, not the harness: no outcome
            return f"model unavailable: {rest.split(':', 1)[0] or 'unknown'}", error
        part = f"{crashed['part']} " if isinstance(crashed.get("part"), str) else ""
        return f"crash: {part}{kind or 'unknown'}", error
    if "timed-out" in payloads:
        timed_out = payloads["timed-out"][-1]
        return f"timeout: {timed_out.get('reason')}", f"deadline {timed_out.get('deadline_s')} s"
    if "interrupted" in payloads:
        return "interrupted", f"by {payloads['interrupted'][-1].get('by')}"
    if recovered:
        return "recovered after a process crash", None
    return "partial", None


def _spend(spend: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The seal's spend, every field in its order: times (``*_us``) in seconds, a
    count the provider did not report (null) as such, never as zero."""
    rows = []
    for key, value in spend.items():
        if value is None:
            text = "not reported"
        elif key.endswith("_us") and isinstance(value, int):
            key, text = key.removesuffix("_us"), f"{value / 1e6:.3f} s"
        elif isinstance(value, int):
            text = f"{value:,}"
        else:
            text = _text(value)
        rows.append((key.replace("_", " "), text))
    return tuple(rows)


def _raw(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(RAW_LIMIT + 1)
    except OSError as error:
        return f"(unreadable: {error.strerror})"
    text = data[:RAW_LIMIT].decode("utf-8", errors="replace")
    return text + ("\n… (elided)" if len(data) > RAW_LIMIT else "")


def read_attempt(
    position: int,
    number: int,
    path: str,
    *,
    task_id: str,
    expected: Expected,
    first_spec: bytes | None,
    shown_as: str,
    committed: dict[tuple[int, int], str] | None = None,
) -> tuple[AttemptView, bytes | None]:
    """The attempt ``number`` of the task at ``position``, verified; and its spec line
    (for the task's next attempt, which must have run the same spec). ``shown_as``
    is the file's path as pages name it (relative to the run); ``committed`` the
    seals its store's journal lists."""
    try:
        rebuilt = rebuild_attempt(
            position, number, path, task_id=task_id, expected=expected, first_spec=first_spec
        )
        if committed is not None:  # its seal is one the store's journal committed
            check_journaled(
                committed,
                position=position,
                number=number,
                seal_digest=rebuilt.seal_digest,
                where=path,
                task=task_id,
            )
    except XaytuneError as error:
        message = str(error).replace(path, shown_as)
        return AttemptView(number, shown_as, False, message, raw=_raw(path)), first_spec
    # The bytes shown are read once more and chained again to the verified seal's
    # head: a file changed since it was verified is never shown as verified.
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        layout = split_attempt(data, shown_as)
        chain_end = layout.record_end + rebuilt.chain_bytes
        seal = parse_line(data[layout.events_end :]) if layout.sealed else None
        facts = verify_chain(
            data,
            genesis=rebuilt.record_digest,
            where=shown_as,
            start=layout.record_end,
            end=chain_end,
        )
        if seal != rebuilt.seal or facts.head != seal["trajectory"]["head"]:
            raise ValueError("the file changed while it was read")
        events = [parse_line(line) for line in data[layout.record_end : chain_end].splitlines()]
    except (OSError, ValueError, XaytuneError) as error:
        problem = f"changed: {shown_as}: {error}"
        return AttemptView(number, shown_as, False, problem, raw=_raw(path)), first_spec
    outcome = seal["outcome"] or {}
    cause, cause_detail = error_cause(
        seal["status"], outcome.get("terminal"), bool(seal["recovered"]), events
    )
    view = AttemptView(
        number,
        shown_as,
        True,
        None,
        status=seal["status"],
        recovered=bool(seal["recovered"]),
        terminal=outcome.get("terminal"),
        answer=outcome.get("answer"),
        detail=outcome.get("detail"),
        spend=_spend(seal["spend"]),
        events=tuple(_event_view(e) for e in events if isinstance(e, dict)),
        cause=cause,
        cause_detail=cause_detail,
    )
    return view, rebuilt.spec_line
