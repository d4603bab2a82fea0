"""Compile and run harnesses; record every attempt in a tamper-evident store."""

from xaytune.harness._watchdog import AttemptDeadline, request_stop
from xaytune.harness.compiler import HarnessCompiler
from xaytune.harness.evidence.store import HarnessEvidenceStore
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
from xaytune.harness.toolbox import FunctionTool, Tool, Toolbox, ToolError, ToolResult, as_tool

__all__ = [
    "AgentExecutionSpec",
    "AnswerExtraction",
    "AttemptDeadline",
    "AttemptResult",
    "FunctionTool",
    "Harness",
    "HarnessCompilationContext",
    "HarnessCompiler",
    "HarnessContent",
    "HarnessEvidenceStore",
    "HarnessRunner",
    "TaskRun",
    "Tool",
    "ToolError",
    "ToolResult",
    "Toolbox",
    "TrajectoryRecordingSpec",
    "as_tool",
    "compile_replicate",
    "request_stop",
]
