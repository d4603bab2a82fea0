"""User tools: functions and classes as tools, strict arguments, timeouts, identity."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import _user_tools as user
import pytest

from xaytune.core.errors import ExecutionError, PluginError
from xaytune.harness import FunctionTool, Toolbox, ToolResult, as_tool
from xaytune.harness.toolbox import CalculatorTool
from xaytune.models.protocol import ToolCall


@pytest.fixture(autouse=True)
def _release_blocked_tools() -> Iterator[None]:
    user.RELEASE.clear()
    yield
    user.RELEASE.set()  # ends any worker thread a timed-out tool left behind


def box(*functions: Callable[..., Any]) -> Toolbox:
    return Toolbox(as_tool(fn, where=f"test.tools[{i}]") for i, fn in enumerate(functions))


def call(toolbox: Toolbox, name: str, arguments: dict[str, Any] | str) -> ToolResult:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return toolbox.call(ToolCall("c1", name, text), authorized=toolbox.names)


def acall(
    toolbox: Toolbox, name: str, arguments: dict[str, Any], timeout_s: float | None = 5.0
) -> ToolResult:
    async def run() -> ToolResult:
        return await toolbox.acall(
            ToolCall("c1", name, json.dumps(arguments)),
            authorized=toolbox.names,
            timeout_s=timeout_s,
        )

    return asyncio.run(run())


# ---------------------------------------------------------------- schema and metadata


def test_schema_comes_from_the_typed_signature() -> None:
    # Written by hand from pydantic's JSON-schema rules: a title per field from its
    # name, ``default`` for optional ones, Optional[...] as anyOf with null, Literal
    # as enum, extra="forbid" as additionalProperties false, keyword-only included.
    expected = {
        "title": "convert_parameters",
        "type": "object",
        "properties": {
            "value": {"title": "Value", "type": "number"},
            "unit": {"title": "Unit", "type": "string", "enum": ["m", "ft"]},
            "tags": {
                "title": "Tags",
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
            },
            "exact": {"title": "Exact", "type": "boolean", "default": False},
        },
        "required": ["value", "unit"],
        "additionalProperties": False,
    }
    tool = FunctionTool(user.convert)
    assert tool.parameters == expected
    # The toolbox offers it as is: pydantic's schema is not forced into the subset.
    assert box(user.convert).schemas(["convert"])[0].parameters == expected


def test_name_description_and_version_come_from_the_function() -> None:
    tool = FunctionTool(user.add)
    assert (tool.name, tool.description, tool.version) == ("add", "Add two integers.", "0")
    chosen = FunctionTool(user.add, name="plus", description="Adds.", version="7")
    assert (chosen.name, chosen.description, chosen.version) == ("plus", "Adds.", "7")


def test_the_decorators_name_and_version_are_used() -> None:
    toolbox = box(user.lookup_word)
    assert toolbox.names == frozenset({"ut_lookup"})
    (identity,) = toolbox.identities(["ut_lookup"])
    assert (identity.name, identity.version) == ("ut_lookup", "3")
    assert call(toolbox, "ut_lookup", {"word": "tool"}).content == "tool: a word"


def test_a_signature_pydantic_cannot_describe_is_refused() -> None:
    def takes_a_callback(callback: Callable[[], int]) -> int:
        return callback()

    def takes_anything(*values: int) -> int:
        return sum(values)

    for fn in (takes_a_callback, takes_anything):
        with pytest.raises(PluginError) as caught:
            FunctionTool(fn)
        assert caught.value.reason == "bad-part"


def test_a_function_name_endpoints_reject_fails_when_the_toolbox_is_built() -> None:
    with pytest.raises(ExecutionError) as caught:
        Toolbox((FunctionTool(lambda: "x"),))
    assert caught.value.reason == "invalid-tool-name"


# ---------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"a": "3"}, "a: Input should be a valid integer"),  # strict: no str -> int
        ({"a": 1.5}, "a: Input should be a valid integer"),
        ({"a": True}, "a: Input should be a valid integer"),
        ({}, "a: missing"),
        ({"a": 1, "c": 2}, "c: unknown parameter"),
    ],
)
def test_arguments_are_validated_strictly(arguments: dict[str, Any], problem: str) -> None:
    result = call(box(user.add), "add", arguments)
    assert (result.ok, result.error, result.elapsed_s) == (False, "bad-arguments", 0.0)
    assert result.content == f"error: bad arguments for 'add': {problem}"


def test_a_literal_and_a_nested_list_are_validated() -> None:
    toolbox = box(user.convert)
    assert call(toolbox, "convert", {"value": 1, "unit": "km"}).error == "bad-arguments"
    assert call(toolbox, "convert", {"value": 1, "unit": "m", "tags": [1]}).error == (
        "bad-arguments"
    )


def test_arguments_that_are_not_a_json_object_are_refused_before_pydantic() -> None:
    result = call(box(user.add), "add", "[1, 2]")
    assert result.error == "bad-arguments"
    assert "expected a JSON object, got array" in result.content


# ---------------------------------------------------------------- results


def test_a_sync_function_returns_canonical_json_for_a_non_string() -> None:
    toolbox = box(user.add, user.convert, user.nothing)
    added = call(toolbox, "add", {"a": 3})
    assert added == ToolResult("c1", "add", "5", True, None, added.elapsed_s)
    converted = call(toolbox, "convert", {"value": 2.5, "unit": "m", "tags": ["x"]})
    assert converted.content == '{"exact":false,"metres":2.5,"tags":["x"]}'
    assert call(toolbox, "nothing", {}).content == "null"


def test_an_async_function_is_awaited() -> None:
    toolbox = box(user.shout)
    result = acall(toolbox, "shout", {"text": "hi"})
    assert (result.ok, result.content) == (True, "HI")
    # The synchronous path runs it to completion too (no event loop is running).
    assert call(toolbox, "shout", {"text": "hi"}).content == "HI"


def test_the_sync_call_refuses_an_async_tool_inside_a_running_loop() -> None:
    toolbox = box(user.shout)

    async def inside() -> None:
        call(toolbox, "shout", {"text": "hi"})

    with pytest.raises(ExecutionError) as caught:
        asyncio.run(inside())
    assert caught.value.reason == "async-tool"


def test_a_sync_function_runs_in_a_worker_thread_under_acall() -> None:
    toolbox = box(user.thread_name)
    assert acall(toolbox, "thread_name", {}).content == "xaytune-tool"
    assert call(toolbox, "thread_name", {}).content == "MainThread"


@pytest.mark.parametrize(
    ("fn", "arguments", "content"),
    [
        (user.broken, {"x": 3}, "error: ValueError: no good value 3"),
        (user.refusing, {}, "error: the index is offline"),
        (user.own_timeout, {}, "error: TimeoutError: upstream took too long"),
        (user.returns_set, {}, "error: tool 'returns_set' returned set, which is not JSON data"),
    ],
)
def test_a_failing_function_is_a_tool_error_the_model_sees(
    fn: Callable[..., Any], arguments: dict[str, Any], content: str
) -> None:
    toolbox = box(fn)
    for result in (call(toolbox, fn.__name__, arguments), acall(toolbox, fn.__name__, arguments)):
        assert (result.ok, result.error) == (False, "tool-error")
        assert result.content.startswith(content)
        assert "\n" not in result.content


# ---------------------------------------------------------------- timeouts


def test_a_blocking_sync_tool_times_out_and_the_event_loop_keeps_running() -> None:
    toolbox = box(user.blocking)

    async def scenario() -> tuple[ToolResult, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        result = await toolbox.acall(
            ToolCall("c1", "blocking", '{"seconds": 30}'),
            authorized=toolbox.names,
            timeout_s=0.3,
        )
        task.cancel()
        return result, ticks

    started = time.perf_counter()
    result, ticks = asyncio.run(scenario())
    # asyncio.run returns at once: the abandoned worker does not hold up its exit.
    assert time.perf_counter() - started < 5.0
    assert (result.ok, result.error) == (False, "tool-timeout")
    assert result.content == "error: tool 'blocking' timed out after 0.3 s"
    assert 0.3 <= result.elapsed_s < 5.0
    assert ticks >= 5  # ~30 expected at 10 ms a tick; the loop was never blocked


def test_a_hanging_async_tool_times_out() -> None:
    result = acall(box(user.hanging), "hanging", {}, timeout_s=0.1)
    assert (result.ok, result.error) == (False, "tool-timeout")
    assert result.content == "error: tool 'hanging' timed out after 0.1 s"
    assert result.elapsed_s >= 0.1


def test_a_tool_within_its_timeout_answers() -> None:
    user.RELEASE.set()
    result = acall(box(user.blocking), "blocking", {"seconds": 30}, timeout_s=5)
    assert (result.ok, result.content) == (True, "released")


# ---------------------------------------------------------------- as_tool


def test_as_tool_wraps_a_function_and_refuses_params_for_it() -> None:
    assert isinstance(as_tool(user.add, where="t"), FunctionTool)
    assert isinstance(as_tool(user.add, {}, where="t"), FunctionTool)
    with pytest.raises(PluginError) as caught:
        as_tool(user.add, {"b": 3}, where="harness h.tools[0]")
    assert caught.value.reason == "bad-part-params"
    assert "harness h.tools[0]" in str(caught.value)


def test_as_tool_instantiates_a_class_with_checked_params() -> None:
    tool = as_tool(user.ScaleTool, {"factor": 2.5, "label": "double"}, where="t")
    assert isinstance(tool, user.ScaleTool)
    toolbox = Toolbox((tool,))
    assert call(toolbox, "double", {"x": 2}).content == "5.0"
    assert isinstance(as_tool(CalculatorTool, where="t"), CalculatorTool)  # no params


@pytest.mark.parametrize(
    "params",
    [None, {"factor": "2"}, {"factor": 2, "colour": "red"}, {"factor": 2, "label": 3}],
)
def test_as_tool_refuses_params_that_do_not_fit_the_constructor(
    params: dict[str, Any] | None,
) -> None:
    with pytest.raises(PluginError) as caught:
        as_tool(user.ScaleTool, params, where="harness h.tools[1]")
    assert caught.value.reason == "bad-part-params"
    assert "harness h.tools[1]" in str(caught.value)


def test_as_tool_reports_a_constructor_that_raises_on_one_line() -> None:
    with pytest.raises(PluginError) as caught:
        as_tool(user.ExplodingTool, where="harness h.tools[2]")
    assert caught.value.reason == "bad-part"
    message = str(caught.value)
    assert "harness h.tools[2]" in message
    assert "OSError: credentials file missing" in message
    assert "\n" not in message and "details" not in message


def test_as_tool_takes_an_instance_as_it_is_and_refuses_params_for_it() -> None:
    instance = user.ScaleTool(3)
    assert as_tool(instance, where="t") is instance
    with pytest.raises(PluginError) as caught:
        as_tool(instance, {"factor": 1}, where="t")
    assert caught.value.reason == "bad-part-params"


@pytest.mark.parametrize("thing", [42, "add", object(), user.NotATool, user.NotATool(), dict])
def test_as_tool_refuses_what_is_not_a_tool(thing: object) -> None:
    with pytest.raises(PluginError) as caught:
        as_tool(thing, where="harness h.tools[3]")
    assert caught.value.reason == "bad-part"
    assert str(caught.value).startswith("bad-part: harness h.tools[3]: ")
    assert "is not a tool" in str(caught.value)


# ---------------------------------------------------------------- identity


def test_the_identity_is_the_functions_code_not_the_wrappers() -> None:
    (identity,) = box(user.add).identities(["add"])
    digest = hashlib.sha256(Path(user.__file__).read_bytes().replace(b"\r\n", b"\n"))
    assert identity.model_dump() == {
        "kind": "tool",
        "name": "add",
        "target": "_user_tools.add",
        "version": "0",
        "source_sha256": "sha256:" + digest.hexdigest(),
    }


_MODULE_V1 = '''
def measure(x: int) -> int:
    """Measure x."""
    return x + 1
'''
_MODULE_V2 = _MODULE_V1.replace("return x + 1", "return x + 1000  # a changed body")


def test_changing_a_tools_module_changes_its_identity_and_the_toolbox_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # reload reads the source
    source = tmp_path / "ut_identity_tool.py"
    source.write_text(_MODULE_V1)
    try:
        module = importlib.import_module("ut_identity_tool")
        before = box(module.measure)
        assert call(before, "measure", {"x": 1}).content == "2"
        source.write_text(_MODULE_V2)
        stat = source.stat()  # a later mtime, so no cache can take it for the old file
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
        module = importlib.reload(module)
        after = box(module.measure)
    finally:
        sys.modules.pop("ut_identity_tool", None)
    assert call(after, "measure", {"x": 1}).content == "1001"
    (old,), (new,) = before.identities(["measure"]), after.identities(["measure"])
    assert old.target == new.target == "ut_identity_tool.measure"
    expected = hashlib.sha256(_MODULE_V2.encode()).hexdigest()
    assert new.source_sha256 == "sha256:" + expected != old.source_sha256
    assert before.schemas(["measure"]) == after.schemas(["measure"])  # only the code changed
    assert before.version != after.version
