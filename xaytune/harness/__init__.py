"""Compile and run harnesses; record every attempt in a tamper-evident store.

A part's author needs only the public names here (re-exported, by concept, from
``xaytune.tool`` and ``xaytune.loop``): the tool contract (:class:`Tool`,
:class:`ToolError`, :class:`ToolResult`), the loop's context (:class:`LoopContext`,
:class:`LoopStop`, :class:`SpendView`) and the :class:`AgentLoop` protocol.
"""

from xaytune.harness._watchdog import AttemptDeadline, request_stop
from xaytune.harness.compiler import HarnessCompiler
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.harness.loops import (
    AgentLoop,
    LoopContext,
    LoopStop,
    SpendView,
    plan_then_act,
    self_check,
    tool_loop,
)
from xaytune.harness.replicate import compile_replicate
from xaytune.harness.runner import AttemptResult, HarnessRunner, TaskRun
from xaytune.harness.spec import (
    AgentExecutionSpec,
    AnswerExtraction,
    Harness,
    HarnessCompilationContext,
    HarnessContent,
    TrajectoryRecordingSpec,
)
from xaytune.harness.tool_contract import Tool, ToolError, ToolErrorWord, ToolResult
from xaytune.harness.toolbox import CalculatorTool, FunctionTool, Toolbox, as_tool

__all__ = [
    "AgentExecutionSpec",
    "AgentLoop",
    "AnswerExtraction",
    "AttemptDeadline",
    "AttemptResult",
    "CalculatorTool",
    "FunctionTool",
    "Harness",
    "HarnessCompilationContext",
    "HarnessCompiler",
    "HarnessContent",
    "HarnessEvidenceStore",
    "HarnessRunner",
    "LoopContext",
    "LoopStop",
    "SpendView",
    "TaskRun",
    "Tool",
    "ToolError",
    "ToolErrorWord",
    "ToolResult",
    "Toolbox",
    "TrajectoryRecordingSpec",
    "as_tool",
    "compile_replicate",
    "plan_then_act",
    "request_stop",
    "self_check",
    "tool_loop",
]
