"""Fuzzing a model's tool-call arguments: the toolbox answers, it never raises.

Whatever arguments text a model sends, ``Toolbox.call`` and ``acall`` return a
``ToolResult`` (``bad-arguments`` for what breaks a rule or a limit, seen by the model),
and the result can be written as evidence (canonical JSON, UTF-8).
"""

from __future__ import annotations

import asyncio
import json

from _fuzz_support import (
    FUZZ,
    FUZZ_TIMEOUT,
    JSON_TEXT,
    JSON_VALUES,
    bounded_memory,
    embedded,
    one_line,
)
from hypothesis import example, given
from hypothesis import strategies as st

from xaytune.core.canonical import canonical_bytes
from xaytune.harness.toolbox import FunctionTool, Toolbox, ToolResult
from xaytune.models.protocol import ToolCall

pytestmark = FUZZ_TIMEOUT


def lookup(key: str, count: int = 1, weights: list[float] | None = None, flag: bool = False):
    """A user tool with a typed signature: pydantic checks its arguments."""
    return {"key": key, "count": count, "weights": weights, "flag": flag}


async def tag(label: str, extra: dict[str, int] | None = None) -> str:
    """An async user tool."""
    return f"{label}:{sorted(extra or {})}"


TOOLBOX = Toolbox.default().register(FunctionTool(lookup)).register(FunctionTool(tag))
NAMES = frozenset({"calculator", "lookup", "tag"})
DEEP = "[" * 100_000 + "]" * 100_000

ARGUMENTS = st.one_of(
    JSON_TEXT,
    JSON_VALUES.map(lambda value: json.dumps({"expression": value})),
    JSON_VALUES.map(lambda value: json.dumps({"key": "k", "weights": value})),
    embedded('{"expression": {}}'),
    embedded('{"key": {}, "count": 2}'),
    embedded('{"key": "k", "count": {}}'),
    embedded('{"label": "x", "extra": {}}'),
    st.text(max_size=30).map(lambda text: json.dumps({"expression": text})),
)


def _check(result: ToolResult, name: str) -> None:
    assert isinstance(result, ToolResult) and result.name == name
    if not result.ok:
        assert result.error in {"bad-arguments", "tool-error"}, result
        assert result.content.startswith("error: ")
        assert one_line(result.content) and len(result.content) < 2_000, result.content[:3_000]
    # The runner records the result: it must be writable as canonical UTF-8 JSON.
    canonical_bytes({"content": result.content, "error": result.error})


@FUZZ
@given(name=st.sampled_from(sorted(NAMES)), arguments=ARGUMENTS)
@example(name="calculator", arguments='{"expression": ' + DEEP + "}")  # issue 23
@example(name="lookup", arguments='{"key": ' + DEEP + "}")
@example(name="lookup", arguments='{"key": "k", "count": ' + "9" * 5_000 + "}")
@example(name="lookup", arguments='{"key": "k", "weights": [1e400]}')
@example(name="lookup", arguments='{"key": "\\ud800"}')
@example(name="tag", arguments='{"label": "x", "extra": {"a": 1, "a": 2}}')
@example(name="calculator", arguments='{"expression": "1", "' + "k" * 100_000 + '": 1}')
def test_call_answers_any_arguments_with_a_result(name: str, arguments: str) -> None:
    with bounded_memory():
        result = TOOLBOX.call(ToolCall("c1", name, arguments), authorized=NAMES)
    _check(result, name)


@FUZZ
@given(name=st.sampled_from(sorted(NAMES)), arguments=ARGUMENTS)
@example(name="tag", arguments='{"label": ' + DEEP + "}")
def test_acall_answers_any_arguments_with_a_result(name: str, arguments: str) -> None:
    async def both() -> ToolResult:
        return await TOOLBOX.acall(ToolCall("c1", name, arguments), authorized=NAMES, timeout_s=10)

    with bounded_memory():
        result = asyncio.run(both())
    _check(result, name)


@FUZZ
@given(arguments=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4))
def test_a_function_tool_checks_any_python_arguments_without_raising(arguments: dict) -> None:
    # A direct caller (not the toolbox) may hand over anything JSON-like.
    checked = FunctionTool(lookup).check_arguments(arguments)
    assert isinstance(checked, dict | str)
    if isinstance(checked, str):
        assert one_line(checked) and len(checked) < 2_000
