"""A scripted model: it replays a given list of replies and tool calls, nothing else.

For tests and demonstrations of a path that needs a capable model (a benchmark's
checker, a multi-turn environment): the script is the model's whole behaviour, so a
run is exactly as good as the script.

The script is a list of replies, or a mapping from a conversation's first user message
to its list of replies (one script per task). Each reply is either text or an object
``{"text": str | null, "tool_calls": [{"name": str, "arguments": object | str}]}``.
The reply a request gets is the one at the position given by the number of assistant
messages already in its conversation: the first model call of an attempt gets reply 0,
the call after it (whose conversation holds reply 0) gets reply 1, and so on, the same
in every attempt and whatever the concurrency (no state is kept between calls).

Refusals: a script that is not of that shape is refused when the model is built
(``ValueError``, one line: the config check reports it naming ``model._target_``); a
conversation past the end of its script is ``ModelError("script-exhausted")`` and a
first user message the mapping does not hold is ``ModelError("script-missing")``:
both are definitive (the attempt's outcome is ``model-error``), never retried.

Identity: provider ``scripted``, model ``scripted``, revision the sha256 of the
script's canonical JSON, so two runs of different scripts are different models (C4).
Token usage is counted, not measured: a quarter of the characters of the request's
messages (input) and of the reply's text and arguments (output), at least 1 each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from xaytune.core import limits
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.models.protocol import (
    ModelError,
    ModelIdentity,
    ModelReply,
    ModelRequest,
    ToolCall,
    Usage,
)

__all__ = ["ScriptedCall", "ScriptedModel", "ScriptedReply"]


class ScriptedCall(BaseModel):
    """One tool call of a scripted reply: a name and its arguments (an object or text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: dict[str, Any] | str = {}


class ScriptedReply(BaseModel):
    """One scripted reply: its text and its tool calls."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str | None = None
    tool_calls: tuple[ScriptedCall, ...] = ()


_Replies = list[ScriptedReply | str]
_SCRIPT = TypeAdapter(_Replies | dict[str, _Replies])


def _reply(entry: ScriptedReply | str) -> ScriptedReply:
    return ScriptedReply(text=entry) if isinstance(entry, str) else entry


class ScriptedModel:
    """Replays ``script`` (see the module docstring), or the script in the JSON file
    ``path``, or ``by_seed[str(seed)]``; exactly one of the three. Built-in model adapter
    ``scripted`` (``model: {_target_: scripted, path: script.json}``).

    A script alone answers every replicate alike, so its replicates are identical and
    their spread is 0 (reports mark a comparison ``se = 0``). ``by_seed`` (a script per
    seed) or a ``path`` naming ``{seed}`` (a file per seed) vary it by the replicate's
    seed, which the run passes as ``seed``; a seed without a script is refused. The
    identity's revision is the digest of the script a replicate plays."""

    # The registry's marks for a built-in part: its name and declared version.
    __xaytune_part__ = ("model", "scripted")
    __xaytune_version__ = "1"

    def __init__(
        self,
        script: list[Any] | dict[str, list[Any]] | None = None,
        path: str | None = None,
        by_seed: dict[str, list[Any] | dict[str, list[Any]]] | None = None,
        seed: int | None = None,
    ) -> None:
        given = [
            name
            for name, value in (("script", script), ("path", path), ("by_seed", by_seed))
            if value is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of the script, the path of a JSON file holding it, or "
                f"by_seed (a script per seed); got {', '.join(given) or 'none'}"
            )
        if by_seed is not None:  # a model whose answers differ from one replicate to the next
            if seed is None or str(seed) not in by_seed:
                known = ", ".join(sorted(map(str, by_seed))) or "none"
                raise ValueError(f"by_seed: no script for seed {seed} (scripts for {known})")
            script = by_seed[str(seed)]
        if path is not None and "{seed}" in path:  # a file per seed: scripts/seed-{seed}.json
            if seed is None:
                raise ValueError(f"path {path!r} names {{seed}} but no seed was given")
            path = path.replace("{seed}", str(seed))
        if path is not None:
            raw = limits.read_bounded(
                Path(path), limits.MAX_JSON_FILE_BYTES, size_name="MAX_JSON_FILE_BYTES"
            )
            script = limits.loads(
                raw, what=path, max_size=limits.MAX_JSON_FILE_BYTES, size_name="MAX_JSON_FILE_BYTES"
            )
        try:
            parsed = _SCRIPT.validate_python(script)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "script"
            raise ValueError(f"script: {limits.clip(where)}: {first['msg']}") from None
        if isinstance(parsed, list):
            self._default: tuple[ScriptedReply, ...] | None = tuple(map(_reply, parsed))
            self._by_message: dict[str, tuple[ScriptedReply, ...]] = {}
        else:
            self._default = None
            self._by_message = {key: tuple(map(_reply, value)) for key, value in parsed.items()}
        plain = _SCRIPT.dump_python(parsed, mode="json")
        self._identity = ModelIdentity(
            provider="scripted",
            model="scripted",
            revision=sha256_digest(canonical_bytes(plain)),
            parameters={},
        )

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    def _script(self, request: ModelRequest) -> tuple[ScriptedReply, ...]:
        if self._default is not None:
            return self._default
        first = next((m.content for m in request.messages if m.role == "user"), None)
        script = self._by_message.get(first or "")
        if script is None:
            raise ModelError(
                "script-missing",
                f"no script for the conversation opening with {limits.quote(first)}",
            )
        return script

    async def complete(self, request: ModelRequest) -> ModelReply:
        """The scripted reply at this conversation's position."""
        script = self._script(request)
        position = sum(1 for message in request.messages if message.role == "assistant")
        if position >= len(script):
            raise ModelError(
                "script-exhausted",
                f"the script has {len(script)} replies; this is call {position + 1} of its "
                "conversation",
            )
        reply = script[position]
        calls = tuple(
            ToolCall(
                id=f"call_{position}_{index}",
                name=call.name,
                arguments=call.arguments
                if isinstance(call.arguments, str)
                else json.dumps(call.arguments, ensure_ascii=False),
            )
            for index, call in enumerate(reply.tool_calls)
        )
        asked = sum(len(message.content or "") for message in request.messages)
        said = len(reply.text or "") + sum(len(call.arguments) for call in calls)
        return ModelReply(
            text=reply.text,
            tool_calls=calls,
            usage=Usage(input_tokens=max(1, asked // 4), output_tokens=max(1, said // 4)),
            finish_reason="tool_calls" if calls else "stop",
        )
