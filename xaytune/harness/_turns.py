"""The user turns of one attempt: the loop runs once per turn of the task.

A plain task has one user turn (the compiled user message): the loop runs once, as
it always did, and nothing here records anything. A task with later ``turns``
(``config["task"]["turns"]``) runs the loop again for each of them, once the agent has
finished the turn before (the loop returned its text):

- the conversation continues: a later turn's opening messages (``ctx.messages``) are
  the last model call's messages, its reply (the text; tool calls a loop left
  unanswered are not carried) and the new user message; when the turn before made no
  model call, they are that turn's opening messages and the new user message;
- a ``user_turn`` event records the message, numbered from 1 (turn 0 is the ``start``
  event's user message);
- every budget spans the whole attempt (``max_turns`` counts model turns across all
  user turns); a stop in any turn ends the attempt, whose outcome is the stop;
- with an environment, every turn is a turn of its call record (the attempt's answer),
  offers the environment's tools for that turn (an environment may hold some out until
  a later turn: ``hidden_tools``), and ends with an ``environment_state`` event holding
  the environment's ``state()``.

A loop that returns something other than text (or None) before the last turn is
refused (``bad-loop-result``), as the runner refuses it after the last one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from xaytune.core.errors import ExecutionError
from xaytune.harness._loop_context import LoopContext, _Host
from xaytune.models.protocol import Message

__all__ = ["run_turns"]


def _continued(host: _Host, text: str) -> tuple[Message, ...]:
    if host.exchange is None:
        history = host.opening
    else:
        messages, reply = host.exchange
        carried = Message("assistant", reply.text)
        history = (*messages, carried)
    return (*history, Message("user", text))


def _begin_turn(host: _Host) -> None:
    if host.environment is not None:
        host.environment.begin_turn()
        # The environment may offer other tools in this turn (tools held out until now).
        host.schemas = (*host.toolbox.schemas(host.spec.tools), *host.environment.schemas)


def _end_turn(host: _Host, number: int) -> None:
    if host.environment is not None:
        state = host.environment.state()
        host.record("environment_state", {"turn": number, "state": state}, "environment")


async def run_turns(run: Callable[[LoopContext], Awaitable[object]], host: _Host) -> object:
    """Run the loop ``run`` over every user turn of the attempt; the last turn's text."""
    task = host.spec.config.get("task") or {}
    later: list[str] = task.get("turns", [])
    _begin_turn(host)
    text = await run(LoopContext(host))
    _end_turn(host, 0)
    for number, message in enumerate(later, start=1):
        if host.stop is not None or host.unavailable is not None:
            break  # a loop that swallowed its stop: the attempt ended there
        if text is not None and not isinstance(text, str):
            raise ExecutionError(
                "bad-loop-result",
                f"task {host.spec.task_id}: the loop returned {type(text).__name__} in user "
                f"turn {number - 1}, not text or None",
            )
        host.opening = _continued(host, message)
        host.exchange = None
        host.record("user_turn", {"turn": number, "text": message}, "user turn")
        _begin_turn(host)
        text = await run(LoopContext(host))
        _end_turn(host, number)
    return text
