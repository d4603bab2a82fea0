"""Compile and run harnesses; record every attempt in a tamper-evident store."""

from xaytune.harness.compiler import HarnessCompiler
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
from xaytune.harness.store import HarnessEvidenceStore
from xaytune.harness.toolbox import Tool, Toolbox, ToolResult

__all__ = [
    "AgentExecutionSpec",
    "AnswerExtraction",
    "AttemptResult",
    "Harness",
    "HarnessCompilationContext",
    "HarnessCompiler",
    "HarnessContent",
    "HarnessEvidenceStore",
    "HarnessRunner",
    "TaskRun",
    "Tool",
    "ToolResult",
    "Toolbox",
    "TrajectoryRecordingSpec",
    "compile_replicate",
]
