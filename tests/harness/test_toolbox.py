"""The toolbox: registration, schemas, version, and every call path."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import math
import pickle
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import ExecutionError
from xaytune.harness import toolbox as toolbox_module
from xaytune.harness.toolbox import CalculatorTool, Tool, Toolbox, ToolError, ToolResult
from xaytune.models.protocol import ToolCall

ALL = frozenset({"calculator", "echo", "failing", "buggy", "nested"})


class EchoTool:
    """Returns its ``text`` argument, optionally repeated."""

    name = "echo"
    description = "Echo the text."
    version = "1"

    def __init__(self, parameters: dict[str, Any] | None = None) -> None:
        self.parameters = parameters or {
            "type": "object",
            "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
            "required": ["text"],
            "additionalProperties": False,
        }

    def invoke(self, arguments: dict[str, Any]) -> str:
        return arguments["text"] * arguments.get("times", 1)


class FailingTool:
    name = "failing"
    description = "Always fails."
    version = "1"
    parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012 - the Tool protocol

    def invoke(self, arguments: dict[str, Any]) -> str:
        raise ToolError("the service is down")


class BuggyTool(FailingTool):
    name = "buggy"

    def invoke(self, arguments: dict[str, Any]) -> str:
        raise RuntimeError("a bug in the tool")


class NestedTool:
    """Exercises the nested parts of the schema subset."""

    name = "nested"
    description = "Nested arguments."
    version = "1"
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol
        "type": "object",
        "properties": {
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
            "tags": {"type": "array", "items": {"type": "string"}},
            "flag": {"type": "boolean"},
            "anything": {"description": "no type: any JSON value"},
        },
    }

    def invoke(self, arguments: dict[str, Any]) -> str:
        return json.dumps(arguments, sort_keys=True)


def toolbox() -> Toolbox:
    return Toolbox((CalculatorTool(), EchoTool(), FailingTool(), BuggyTool(), NestedTool()))


def call(name: str, arguments: str, authorized: frozenset[str] = ALL) -> ToolResult:
    return toolbox().call(ToolCall("call-1", name, arguments), authorized=authorized)


# ---------------------------------------------------------------- call paths


def test_call_returns_the_tool_content_with_timing() -> None:
    result = call("calculator", '{"expression": "17 * 25 - 38"}')
    assert result == ToolResult("call-1", "calculator", "387", True, None, result.elapsed_s)
    assert result.elapsed_s >= 0.0


def test_call_refuses_an_unauthorized_tool_even_if_the_toolbox_has_it() -> None:
    result = call("echo", '{"text": "hi"}', authorized=frozenset({"calculator"}))
    assert (result.ok, result.error) == (False, "unauthorized-tool")
    assert result.content == "error: tool 'echo' is not authorized"
    assert result.elapsed_s == 0.0


def test_call_refuses_an_unknown_tool_as_unauthorized_when_not_granted() -> None:
    # Authorization is the gate: an ungranted name gets the same answer either way.
    result = call("search", "{}", authorized=frozenset({"calculator"}))
    assert result.error == "unauthorized-tool"


def test_call_reports_an_authorized_tool_missing_from_the_toolbox_as_unknown() -> None:
    result = call("search", "{}", authorized=ALL | {"search"})
    assert (result.ok, result.error) == (False, "unknown-tool")
    assert result.content.startswith("error: ")
    assert "'search'" in result.content


@pytest.mark.parametrize(
    ("name", "arguments", "words"),
    [
        ("calculator", "", "not valid JSON"),
        ("calculator", "{expression: 1}", "not valid JSON"),
        ("calculator", '"1+1"', "expected a JSON object, got string"),
        ("calculator", "[1]", "expected a JSON object, got array"),
        ("calculator", "null", "expected a JSON object, got null"),
        ("calculator", "{}", "missing required key 'expression'"),
        ("calculator", '{"expression": 3}', "arguments.expression must be string, got integer"),
        ("calculator", '{"expression": "1", "x": 1}', "unexpected key 'x'"),
        ("calculator", '{"expression": "1", "expression": "2"}', "duplicate key"),
        ("echo", '{"text": "a", "times": 1.5}', "arguments.times must be integer, got number"),
        ("echo", '{"text": "a", "times": true}', "must be integer, got boolean"),
        ("nested", '{"point": {"x": 1}}', "missing required key 'y' in arguments.point"),
        ("nested", '{"point": {"x": NaN, "y": 1}}', "not valid JSON"),
        ("nested", '{"point": {"x": Infinity, "y": 1}}', "not valid JSON"),
        ("nested", '{"point": {"x": "1", "y": 1}}', "arguments.point.x must be number"),
        ("nested", '{"point": {"x": 1, "y": 2, "z": 3}}', "unexpected key 'z'"),
        ("nested", '{"tags": ["a", 2]}', "arguments.tags[1] must be string, got integer"),
        ("nested", '{"tags": "a"}', "arguments.tags must be array, got string"),
        ("nested", '{"flag": 1}', "arguments.flag must be boolean, got integer"),
    ],
)
def test_call_refuses_bad_arguments(name: str, arguments: str, words: str) -> None:
    result = call(name, arguments)
    assert (result.ok, result.error) == (False, "bad-arguments")
    assert result.content.startswith(f"error: bad arguments for {name!r}: ")
    assert words in result.content


def test_call_accepts_arguments_the_schema_allows() -> None:
    arguments = {"point": {"x": 1, "y": 2.5}, "tags": [], "flag": False, "anything": [None]}
    result = call("nested", json.dumps(arguments))
    assert result.ok
    assert json.loads(result.content) == arguments
    assert call("nested", '{"extra": "open schemas allow extra keys"}').ok
    assert call("echo", '{"text": "ab", "times": 2}').content == "abab"


def test_call_reports_a_tool_error_to_the_model() -> None:
    result = call("failing", "{}")
    assert (result.ok, result.error) == (False, "tool-error")
    assert result.content == "error: the service is down"


def test_call_reports_a_calculator_refusal_as_a_tool_error() -> None:
    for expression in ["1 / 0", "__import__('os')", "2 ** 1000", "x" * 501]:
        result = call("calculator", json.dumps({"expression": expression}))
        assert result.error == "tool-error", expression
        assert result.content.startswith("error: ")


def test_call_reports_a_tool_bug_to_the_model_as_a_tool_error() -> None:
    # A tool's bug is the model's observation (and a counted tool error), never a
    # crash of the attempt: the type and the first line of the message are shown.
    result = call("buggy", "{}")
    assert (result.ok, result.error) == (False, "tool-error")
    assert result.content == "error: RuntimeError: a bug in the tool"


def test_call_reports_a_tool_that_returns_a_non_string_as_a_tool_error() -> None:
    class NumberTool(FailingTool):
        name = "number"

        def invoke(self, arguments: dict[str, Any]) -> str:
            return 42  # type: ignore[return-value]

    box = Toolbox((NumberTool(),))
    result = box.call(ToolCall("c", "number", "{}"), authorized=frozenset({"number"}))
    assert (result.ok, result.error) == (False, "tool-error")
    assert result.content == "error: tool 'number' returned int, not a string"


# ---------------------------------------------------------------- registry


def test_default_toolbox_holds_the_calculator_only() -> None:
    assert Toolbox.default().names == frozenset({"calculator"})
    assert isinstance(CalculatorTool(), Tool)


def test_register_returns_a_new_toolbox_and_leaves_the_old_one_unchanged() -> None:
    base = Toolbox.default()
    grown = base.register(EchoTool())
    assert base.names == frozenset({"calculator"})
    assert grown.names == frozenset({"calculator", "echo"})
    assert grown is not base
    assert base.version != grown.version
    with pytest.raises(AttributeError):
        base.extra = 1  # type: ignore[attr-defined]


def test_register_refuses_a_duplicate_name() -> None:
    with pytest.raises(ExecutionError) as caught:
        Toolbox.default().register(CalculatorTool())
    assert caught.value.reason == "duplicate-tool"
    with pytest.raises(ExecutionError) as caught:
        Toolbox((EchoTool(), EchoTool()))
    assert caught.value.reason == "duplicate-tool"


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "array"},
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}},
        {"type": "object", "properties": {"a": {"type": "null"}}},
        {"type": "object", "properties": {"a": {"type": ["string", "integer"]}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
        {"type": "object", "required": "a"},
        {"type": "object", "oneOf": []},
        {"type": "object", "properties": {"a": {"type": "string", "items": {}}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"format": "x"}}}},
        {"type": "object", "description": 3},
    ],
)
def test_register_refuses_a_schema_outside_the_subset(parameters: dict[str, Any]) -> None:
    with pytest.raises(ExecutionError) as caught:
        Toolbox.default().register(EchoTool(parameters))
    assert caught.value.reason == "unsupported-schema"


@pytest.mark.parametrize("name", ["", "has space", "dotted.name", "x" * 65])
def test_register_refuses_a_name_endpoints_reject(name: str) -> None:
    tool = EchoTool()
    tool.name = name
    with pytest.raises(ExecutionError) as caught:
        Toolbox((tool,))
    assert caught.value.reason == "invalid-tool-name"


def test_register_refuses_an_object_that_is_not_a_tool() -> None:
    with pytest.raises(ExecutionError) as caught:
        Toolbox((object(),))  # type: ignore[arg-type]
    assert caught.value.reason == "not-a-tool"


# ---------------------------------------------------------------- schemas, version


def test_schemas_come_in_the_requested_order() -> None:
    schemas = toolbox().schemas(["echo", "calculator", "nested"])
    assert [schema.name for schema in schemas] == ["echo", "calculator", "nested"]
    assert schemas[1].parameters == CalculatorTool().parameters
    assert schemas[1].description == CalculatorTool.description


def test_schemas_refuse_an_unknown_name_and_name_it() -> None:
    with pytest.raises(ExecutionError) as caught:
        toolbox().schemas(["calculator", "search"])
    assert caught.value.reason == "unknown-tool"
    assert "'search'" in str(caught.value)


def test_schemas_are_read_only_snapshots_that_callers_cannot_mutate_into_the_toolbox() -> None:
    box = Toolbox.default()
    version = box.version
    parameters = box.schemas(["calculator"])[0].parameters
    properties = parameters["properties"]
    required = parameters["required"]
    for change in (
        lambda: properties.clear(),
        lambda: properties.pop("expression"),
        lambda: properties.update({"x": 1}),
        lambda: properties.setdefault("x", 1),
        lambda: properties.popitem(),
        lambda: properties.__setitem__("x", 1),
        lambda: properties.__delitem__("expression"),
        lambda: properties.__ior__({"x": 1}),
        lambda: required.append("x"),
        lambda: required.extend(["x"]),
        lambda: required.insert(0, "x"),
        lambda: required.remove("expression"),
        lambda: required.pop(),
        lambda: required.clear(),
        lambda: required.sort(),
        lambda: required.reverse(),
        lambda: required.__setitem__(0, "x"),
        lambda: required.__delitem__(0),
        lambda: required.__iadd__(["x"]),
        lambda: required.__imul__(2),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert box.schemas(["calculator"])[0].parameters == CalculatorTool().parameters
    assert box.version == version


def test_schemas_are_made_once_and_are_plain_json_to_their_readers() -> None:
    box = Toolbox.default()
    offered = box.schemas(["calculator"])
    # One tuple for the same names, however they are given (a model may cache by it).
    assert box.schemas(("calculator",)) is offered
    assert box.schemas(iter(["calculator"])) is offered
    parameters = offered[0].parameters
    plain = CalculatorTool().parameters
    assert isinstance(parameters, dict) and isinstance(parameters["required"], list)
    assert json.dumps(parameters) == json.dumps(plain)
    assert canonical_bytes(parameters) == canonical_bytes(plain)
    # A copy is plain, mutable data, equal to the schema.
    for copied in (copy.deepcopy(parameters), pickle.loads(pickle.dumps(parameters))):
        assert type(copied) is dict and type(copied["required"]) is list
        assert type(copied["properties"]) is dict
        copied["properties"].clear()  # changes the copy only
    shallow = copy.copy(parameters)
    assert type(shallow) is dict and shallow == plain
    shallow["type"] = "array"
    assert parameters == plain
    with pytest.raises(ExecutionError) as refused:
        box.schemas(["nope"])
    assert refused.value.reason == "unknown-tool"


def test_version_is_stable_and_independent_of_registration_order() -> None:
    one = Toolbox((CalculatorTool(), EchoTool()))
    two = Toolbox((EchoTool(),)).register(CalculatorTool())
    assert one.version == two.version
    assert one.version.startswith("sha256:")
    assert Toolbox.default().version == Toolbox.default().version


def test_version_changes_when_a_tool_schema_or_version_changes() -> None:
    before = Toolbox((EchoTool(),)).version
    changed_schema = EchoTool()
    changed_schema.parameters["properties"]["text"]["description"] = "what to echo"
    assert Toolbox((changed_schema,)).version != before
    changed_version = EchoTool()
    changed_version.version = "2"
    assert Toolbox((changed_version,)).version != before


def test_a_tool_mutated_after_registration_does_not_change_the_toolbox() -> None:
    tool = EchoTool()
    box = Toolbox((tool,))
    version = box.version
    tool.parameters["required"] = []
    assert box.version == version
    result = box.call(ToolCall("c", "echo", "{}"), authorized=frozenset({"echo"}))
    assert result.error == "bad-arguments"


# ---------------------------------------------------------------- acall, protocol additions


def acall(box: Toolbox, name: str, arguments: str, *, timeout_s: float | None = 5.0) -> ToolResult:
    async def run() -> ToolResult:
        call = ToolCall("call-1", name, arguments)
        return await box.acall(call, authorized=box.names | {"search"}, timeout_s=timeout_s)

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("calculator", '{"expression": "2 ** 10"}'),
        ("search", "{}"),
        ("calculator", "{}"),
        ("echo", '{"text": "a", "times": true}'),
        ("failing", "{}"),
        ("buggy", "{}"),
        ("nested", '{"point": {"x": 1, "y": 2}}'),
    ],
)
def test_acall_gives_the_answers_call_gives(name: str, arguments: str) -> None:
    box = toolbox()
    synchronous = box.call(ToolCall("call-1", name, arguments), authorized=ALL | {"search"})
    asynchronous = acall(box, name, arguments)
    assert replace(asynchronous, elapsed_s=0.0) == replace(synchronous, elapsed_s=0.0)


def test_acall_checks_authorization_first() -> None:
    async def run() -> ToolResult:
        call = ToolCall("call-1", "search", "not json")
        return await toolbox().acall(call, authorized=frozenset(), timeout_s=None)

    assert asyncio.run(run()).error == "unauthorized-tool"


class WhereTool:
    """Reports the thread its ``invoke`` runs in."""

    description = "Where am I?"
    version = "1"
    parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012 - the Tool protocol

    def __init__(self, name: str, inline: bool) -> None:
        self.name, self.inline = name, inline

    def invoke(self, arguments: dict[str, Any]) -> str:
        return threading.current_thread().name


def test_acall_runs_an_inline_tool_on_the_loop_and_others_in_a_worker_thread() -> None:
    assert CalculatorTool.inline is True
    box = Toolbox((WhereTool("here", True), WhereTool("away", False)))
    assert acall(box, "here", "{}").content == "MainThread"
    assert acall(box, "away", "{}").content == "xaytune-tool"


def test_acall_awaits_an_async_invoke_under_the_timeout() -> None:
    class SlowTool(FailingTool):
        name = "slow"

        async def invoke(self, arguments: dict[str, Any]) -> str:  # type: ignore[override]
            await asyncio.sleep(arguments.get("seconds", 0))
            return "done"

    box = Toolbox((SlowTool(),))
    assert acall(box, "slow", "{}").content == "done"
    result = acall(box, "slow", '{"seconds": 10}', timeout_s=0.05)
    assert (result.ok, result.error) == (False, "tool-timeout")
    assert result.content == "error: tool 'slow' timed out after 0.05 s"


@pytest.mark.parametrize("timeout_s", [0, -1.0, math.nan, math.inf, True, "5"])
def test_acall_refuses_a_timeout_that_is_not_a_positive_number(timeout_s: Any) -> None:
    with pytest.raises(ExecutionError) as caught:
        acall(Toolbox.default(), "calculator", '{"expression": "1"}', timeout_s=timeout_s)
    assert caught.value.reason == "invalid-timeout"


class SelfCheckingTool:
    """Checks its own arguments, so its schema may lie outside the subset."""

    name = "self_checking"
    description = "Takes a colour."
    version = "1"

    def __init__(self, check: Any = None) -> None:
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"colour": {"enum": ["red", "blue"]}},
            "required": ["colour"],
        }
        if check is not None:
            self.check_arguments = check

    def check_arguments(self, arguments: dict[str, Any]) -> dict[str, Any] | str:
        colour = arguments.get("colour")
        if colour not in ("red", "blue"):
            return f"colour: must be red or blue, got {colour!r}\n(second line)"
        return {"colour": colour.upper()}

    def invoke(self, arguments: dict[str, Any]) -> str:
        return arguments["colour"]


def test_a_tool_that_checks_its_own_arguments_is_asked_instead_of_the_subset() -> None:
    box = Toolbox((SelfCheckingTool(),))  # "enum" would be unsupported-schema otherwise
    ok = box.call(ToolCall("c", "self_checking", '{"colour": "red"}'), authorized=box.names)
    assert ok.content == "RED"  # invoke receives what check_arguments returned
    bad = box.call(ToolCall("c", "self_checking", '{"colour": 1}'), authorized=box.names)
    assert (bad.error, bad.elapsed_s) == ("bad-arguments", 0.0)
    expected = "error: bad arguments for 'self_checking': colour: must be red or blue, got 1"
    assert bad.content == expected + " (second line)"


def test_a_failing_argument_check_is_a_tool_error() -> None:
    def raises(arguments: dict[str, Any]) -> Any:
        raise KeyError("colour")

    for check, content in [
        (raises, "error: KeyError: 'colour'"),
        (lambda arguments: None, "error: TypeError: check_arguments returned NoneType"),
    ]:
        box = Toolbox((SelfCheckingTool(check),))
        result = box.call(ToolCall("c", "self_checking", "{}"), authorized=box.names)
        assert (result.ok, result.error) == (False, "tool-error")
        assert result.content.startswith(content)


def test_a_self_checking_tool_still_needs_an_object_schema_of_json_data() -> None:
    for parameters in ({"type": "array"}, {"type": "object", "default": math.nan}):
        tool = SelfCheckingTool()
        tool.parameters = parameters
        with pytest.raises(ExecutionError) as caught:
            Toolbox((tool,))
        assert caught.value.reason == "unsupported-schema"


def test_register_refuses_an_inline_flag_that_is_not_a_boolean() -> None:
    with pytest.raises(ExecutionError) as caught:
        Toolbox((WhereTool("here", "yes"),))  # type: ignore[arg-type]
    assert caught.value.reason == "invalid-tool"


def test_the_sync_call_runs_an_async_invoke_outside_an_event_loop() -> None:
    class AsyncEcho(EchoTool):
        async def invoke(self, arguments: dict[str, Any]) -> str:  # type: ignore[override]
            return arguments["text"]

    box = Toolbox((AsyncEcho(),))
    assert box.call(ToolCall("c", "echo", '{"text": "hi"}'), authorized=box.names).content == "hi"


# ---------------------------------------------------------------- identity


def test_identities_come_in_the_requested_order_and_name_a_missing_tool() -> None:
    identities = toolbox().identities(["echo", "calculator"])
    assert [identity.target for identity in identities] == [
        "test_toolbox.EchoTool",
        "xaytune.harness.toolbox.CalculatorTool",
    ]
    # The calculator names its evaluator module: both sources make its digest.
    from xaytune.harness import _calculator

    digests = [
        "sha256:" + hashlib.sha256(Path(m.__file__).read_bytes()).hexdigest()
        for m in (toolbox_module, _calculator)
    ]
    combined = hashlib.sha256("\n".join(digests).encode()).hexdigest()
    assert identities[1].source_sha256 == "sha256:" + combined
    assert identities[1].version == CalculatorTool.version
    with pytest.raises(ExecutionError) as caught:
        toolbox().identities(["echo", "search"])
    assert caught.value.reason == "unknown-tool"
    assert "'search'" in str(caught.value)


def test_version_changes_when_the_same_schema_is_served_by_other_code() -> None:
    class OtherEcho(EchoTool):
        """Same name, description, version and schema as EchoTool; other code."""

    assert Toolbox((OtherEcho(),)).schemas(["echo"]) == Toolbox((EchoTool(),)).schemas(["echo"])
    assert Toolbox((OtherEcho(),)).version != Toolbox((EchoTool(),)).version


# ---------------------------------------------------------------- limits (issue 23)

DEEP = '{"expression": ' + "[" * 100_000 + "]" * 100_000 + "}"


@pytest.mark.parametrize(
    ("name", "arguments", "word"),
    [
        ("calculator", DEEP, "too-deep"),  # raised RecursionError out of call (issue 23)
        ("calculator", '{"expression": ' + "[" * 100_000, "too-deep"),  # never closed
        ("nested", '{"anything": ' + '{"a": ' * 65 + "1" + "}" * 66, "too-deep"),
        ("nested", '{"anything": ' + '{"a": ' * 62 + "1" + "}" * 63, None),  # 64 levels
        ("nested", '{"anything": ' + "9" * 5_000 + "}", "too-many-digits"),
        ("nested", '{"anything": ' + "9" * 4_300 + "}", None),
        ("nested", '{"point": {"x": 1e400, "y": 1}}', "out-of-range"),
        ("echo", '{"text": "\\ud800"}', "not-text"),
        ("echo", '{"text": "' + "a" * 1_000_001 + '"}', "too-large"),
    ],
)
def test_call_holds_arguments_to_the_limits(name: str, arguments: str, word: str | None) -> None:
    result = call(name, arguments)
    if word is None:
        assert result.ok, result.content
        return
    assert (result.ok, result.error) == (False, "bad-arguments")
    assert result.content.startswith(f"error: bad arguments for {name!r}: {word}: ")
    assert "\n" not in result.content and len(result.content) < 300


def test_acall_refuses_deep_arguments_as_bad_arguments_too() -> None:
    result = asyncio.run(
        toolbox().acall(ToolCall("call-1", "calculator", DEEP), authorized=ALL, timeout_s=5)
    )
    assert (result.ok, result.error) == (False, "bad-arguments")
    assert "too-deep" in result.content


def test_a_refusal_quotes_at_most_80_characters_of_a_key() -> None:
    result = call("calculator", json.dumps({"expression": "1", "k" * 100_000: 1}))
    assert result.error == "bad-arguments"
    assert "k" * 80 + "'... (100000 characters)" in result.content
    assert len(result.content) < 300


def test_a_run_whose_model_sends_deep_arguments_continues_and_answers(tmp_path: Path) -> None:
    # Issue 23: every attempt crashed (sealed partial) and the run aborted. Now the model
    # sees bad-arguments, answers on the next turn, and the attempt is sealed complete.
    from _fixtures_run import Bench, ScriptedModel, make_source, reply

    from xaytune.harness import Harness, HarnessRunner

    bench = Bench(make_source(tmp_path / "suite", count=4), tmp_path / "store", count=1)
    harness = Harness(name="calc", system_prompt="Use the calculator.", tools=("calculator",))
    model = ScriptedModel([reply(calls=[ToolCall("c1", "calculator", DEEP)]), reply("ANSWER: 5")])
    result = HarnessRunner().run(
        bench.spec(harness),
        model=model,
        toolbox=Toolbox.default(),
        authorized_tools=frozenset({"calculator"}),
    )
    assert result.status == "complete"
    tool_message = model.requests[1].messages[-1]
    assert tool_message.role == "tool"
    assert tool_message.content.startswith("error: bad arguments for 'calculator': too-deep: ")
