"""Compiling a harness into a frozen, fingerprinted execution spec."""

from __future__ import annotations

from xaytune.core.errors import ExecutionError
from xaytune.harness._templates import render_template, template_fields
from xaytune.harness.environment import environment_config
from xaytune.harness.spec import (
    AgentExecutionSpec,
    Harness,
    HarnessCompilationContext,
    TrajectoryRecordingSpec,
    _harness_fingerprint,
)

__all__ = ["HarnessCompiler"]


class HarnessCompiler:
    """``compile(harness, context)`` -> :class:`AgentExecutionSpec`.

    Refusals (``ExecutionError`` reasons): ``unauthorized-tool`` (a requested tool
    is not in ``authorized_tools``), ``trajectory-required`` (a task-bound spec
    without trajectory recording), ``task-has-attachments``, ``suite-mismatch``
    (the binding's suite is not ``suite``, or no suite was given),
    ``task-mismatch`` (the task is not the bound task), ``template-field-missing``,
    ``cost-budget-unpriced`` (a ``cost_budget_usd`` without the model's ``prices``).
    A harness with a dollar budget gets a spec that pins the price table
    (``config["prices"]``): the budget's stops depend on it.

    A task's later user turns, declared tools and environment go into the spec's
    ``config["task"]`` (``turns``, ``tools``, ``environment``: name, params, code). Its
    environment is resolved here: ``code-mismatch`` (not the code the suite pins),
    ``duplicate-tool`` (a declared tool named like a harness tool), and the registry's
    and the params' refusals (:func:`xaytune.harness.environment.environment_config`).
    """

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._recordings: dict[str, TrajectoryRecordingSpec] = {}

    def _shared(self, text: str) -> str:
        """One string object for equal rendered texts: a replicate's specs usually
        share their system message, and hold it 100,000 times."""
        if len(self._texts) >= 256:
            self._texts.clear()
        return self._texts.setdefault(text, text)

    def _trajectory(
        self, recording: TrajectoryRecordingSpec | None
    ) -> TrajectoryRecordingSpec | None:
        """One (frozen) recording spec object for equal ones, as :meth:`_shared`."""
        if recording is None:
            return None
        return self._recordings.setdefault(recording.writer, recording)

    def compile(self, harness: Harness, context: HarnessCompilationContext) -> AgentExecutionSpec:
        authorized = frozenset(context.authorized_tools)
        tools = harness.tool_names
        for tool in tools:
            if tool not in authorized:
                raise ExecutionError(
                    "unauthorized-tool",
                    f"harness {harness.name} requests tool {tool!r}, which is not authorized",
                )
        values: dict[str, object] = {}
        if context.task is not None:
            values.update(context.task.input)
        blobs = context.content.blobs
        for template in (harness.system_prompt, harness.user_prompt):
            for field in template_fields(template):
                if field.startswith("content."):
                    name = field.removeprefix("content.")
                    if name not in blobs:
                        raise ExecutionError(
                            "content-missing",
                            f"harness {harness.name}: content {name!r} is not in the content",
                        )
                    values[field] = blobs[name]
        where = f"harness {harness.name}"
        system_message = self._shared(render_template(harness.system_prompt, values, where=where))
        user_message = render_template(harness.user_prompt, values, where=where)
        config: dict[str, object] = {}
        if context.task_binding is not None:
            config["task"] = self._task_config(harness, context)
        if harness.cost_budget_usd is not None:
            if context.prices is None:
                raise ExecutionError(
                    "cost-budget-unpriced",
                    f"harness {harness.name}: cost_budget_usd {harness.cost_budget_usd:g} needs "
                    "the model's price table (prices), and none was given",
                )
            config["prices"] = context.prices.model_dump(mode="json")
        return AgentExecutionSpec(
            harness=harness,
            harness_fingerprint=_harness_fingerprint(harness),
            seed=context.seed,
            replicate=context.replicate,
            tools=tools,
            authorized_tools=tuple(sorted(authorized)),
            system_message=system_message,
            user_message=user_message,
            content_digests=context.content.digests,
            model=context.model,
            trajectory=self._trajectory(context.trajectory),
            config=config,
            output_uri=context.output_uri,
        )

    @staticmethod
    def _task_config(harness: Harness, context: HarnessCompilationContext) -> dict[str, object]:
        binding = context.task_binding
        assert binding is not None
        task = context.task
        if context.trajectory is None:
            raise ExecutionError(
                "trajectory-required",
                f"task {binding.task_id}: a task-bound spec must record its trajectory",
            )
        if task is None or task.id != binding.task_id:
            raise ExecutionError(
                "task-mismatch",
                f"task {binding.task_id}: the context's task is "
                f"{None if task is None else task.id!r}, not the bound task",
            )
        if task.attachments:
            raise ExecutionError(
                "task-has-attachments", f"task {task.id}: tasks with attachments are refused"
            )
        suite = context.suite
        if suite is None or suite.digest != binding.suite_digest:
            raise ExecutionError(
                "suite-mismatch",
                f"task {task.id}: bound to suite {binding.suite_digest}, compiled against "
                f"{None if suite is None else suite.digest}",
            )
        if binding.seed != context.seed:
            raise ExecutionError(
                "seed-mismatch",
                f"task {task.id}: bound under seed {binding.seed}, compiled with {context.seed}",
            )
        if suite.task(task.id) != task:
            raise ExecutionError("task-mismatch", f"task {task.id}: differs from the suite's task")
        config: dict[str, object] = {
            "binding": binding.model_dump(mode="json"),
            "input": dict(task.input),
        }
        # An agent benchmark's parts, only when the task has them (a plain task's spec,
        # and so its fingerprint, is unchanged).
        if task.turns:
            config["turns"] = list(task.turns)
        if task.environment is not None:
            config["tools"] = [tool.model_dump(mode="json") for tool in task.tools]
            config["environment"] = environment_config(task, harness.tool_names)
        return config
