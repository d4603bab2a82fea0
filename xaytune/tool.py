"""Tools: what an agent may call, and how to write one.

A tool is a typed function (sync or ``async def``) registered with :func:`tool`, or a
class meeting the :class:`Tool` protocol. For a function, pydantic builds the JSON
schema the model is offered from the signature and checks each call's arguments
strictly; the docstring is the description; a non-string result is sent as canonical
JSON text; an exception is a tool error the model sees, never a crash of the attempt.
Raise :class:`ToolError` for a failure worded for the model::

    from xaytune.tool import ToolError, tool

    @tool(version="1")
    def percent_of(value: float, percent: float) -> float:
        \"\"\"Return `percent` % of `value`.\"\"\"
        if percent < 0:
            raise ToolError("percent must not be negative")
        return value * percent / 100

Config names it (``tools: [calculator, my_parts.tools.percent_of]``, or by short name
once its module is imported or declared as a ``xaytune.tools`` entry point). Its code
identity (dotted path, declared version, sha256 of its module's source) enters the
harness fingerprint. A :class:`Toolbox` holds tools by name and runs a
:class:`~xaytune.model.ToolCall` into a :class:`ToolResult` (see
:mod:`xaytune.harness.toolbox` for every check and its error word).
"""

from xaytune.harness import (
    CalculatorTool,
    FunctionTool,
    Tool,
    Toolbox,
    ToolError,
    ToolErrorWord,
    ToolResult,
    as_tool,
)
from xaytune.models import ToolCall, ToolSchema
from xaytune.plugins import tool

__all__ = [
    "CalculatorTool",
    "FunctionTool",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolErrorWord",
    "ToolResult",
    "ToolSchema",
    "Toolbox",
    "as_tool",
    "tool",
]
