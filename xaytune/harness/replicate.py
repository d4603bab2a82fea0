"""Compiling every assigned task of one replicate (the spec's "Running one replicate")."""

from __future__ import annotations

from collections.abc import Iterable

from xaytune.core.domain.benchmark import BenchmarkSuite, TaskAssignment
from xaytune.core.harness_evaluation import bind_task
from xaytune.harness.compiler import HarnessCompiler
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.harness.evidence.trajectory import WRITER
from xaytune.harness.spec import (
    AgentExecutionSpec,
    Harness,
    HarnessCompilationContext,
    HarnessContent,
    TrajectoryRecordingSpec,
)
from xaytune.models.prices import ModelPrices
from xaytune.models.protocol import ModelIdentity

__all__ = ["compile_replicate"]


def compile_replicate(
    harness: Harness,
    *,
    suite: BenchmarkSuite,
    assignment: TaskAssignment,
    store: HarnessEvidenceStore,
    authorized_tools: Iterable[str],
    replicate: int = 0,
    content: HarnessContent | None = None,
    model: ModelIdentity | None = None,
    compiler: HarnessCompiler | None = None,
    prices: ModelPrices | None = None,
    make_dirs: bool = True,
) -> list[AgentExecutionSpec]:
    """One task-bound, recording spec per assigned task, in assignment order.

    Each task is bound (``bind_task``), compiled under the assignment's seed, and
    writes its attempts to ``store.task_output(position)``. ``prices`` is the model's
    price table (pinned in the specs of a harness with a dollar budget).
    ``make_dirs=False`` touches no file: the task directories (and the store's
    marker) are left for the caller to make (``store.task_output``), or not at all
    when the store is restored whole from the evidence cache.
    """
    compiler = compiler or HarnessCompiler()
    content = content or HarnessContent()
    tools = frozenset(authorized_tools)
    recording = TrajectoryRecordingSpec(writer=WRITER)
    specs = []
    output = store.task_output if make_dirs else store.task_dir
    for task_id in assignment.task_ids:
        task, binding = bind_task(suite, assignment, task_id)
        context = HarnessCompilationContext(
            task=task,
            seed=assignment.seed,
            replicate=replicate,
            authorized_tools=tools,
            content=content,
            output_uri=str(output(binding.position)),
            trajectory=recording,
            task_binding=binding,
            suite=suite,
            model=model,
            prices=prices,
        )
        specs.append(compiler.compile(harness, context))
    return specs
