"""Pinning a task's environment when its suite is built.

For every task that names an environment, the builder resolves it
(:func:`xaytune.plugins.resolve_environment`), checks the task's params against it,
builds one instance to check that it implements every tool the task declares and that
its ``state()`` is JSON data, and writes the environment's code identity into the
task (``environment.code``): the tasks file, and so the suite digest, then pin the
environment's code, and a changed environment is another cohort.

Refusals, naming the task: the registry's (``unknown-part``, ``import-failed``,
``bad-part``, ``bad-part-params``), ``code-mismatch`` (the record pins other code than
the environment's current code), ``unknown-tool`` (a declared tool the environment does
not implement), ``bad-record`` (a state that is not JSON data).
"""

from __future__ import annotations

from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import Task
from xaytune.core.errors import FingerprintError, SuiteError, XaytuneError
from xaytune.core.limits import clip
from xaytune.plugins import resolve_environment

__all__ = ["pin_environment"]


def pin_environment(record: dict[str, Any], task: Task, *, where: str) -> dict[str, Any]:
    """``record`` with its environment's code identity pinned (checked as above)."""
    declared = task.environment
    if declared is None:
        return record
    at = f"{where}: task {task.id!r}: environment"
    resolved = resolve_environment(declared.name, where=at)
    code = resolved.identity.model_dump(mode="json")
    if declared.code is not None and declared.code != code:
        raise SuiteError(
            "code-mismatch",
            f"{at} {declared.name!r}: the record pins {declared.code.get('source_sha256')}, "
            f"the code here is {code['source_sha256']}",
        )
    instance = resolved.build(declared.params, where=at)
    try:
        implemented = set(instance.tools())
        state = instance.state()
    except XaytuneError:
        raise
    except Exception as error:
        raise SuiteError(
            "bad-part", f"{at} {declared.name!r} raised {type(error).__name__}: {error}"
        ) from None
    for tool in task.tools:
        if tool.name not in implemented:
            raise SuiteError(
                "unknown-tool",
                f"{at} {declared.name!r} does not implement the declared tool {tool.name!r}",
            )
    try:
        canonical_bytes(state)
    except (FingerprintError, RecursionError) as error:
        raise SuiteError("bad-record", f"{at} state is not JSON data: {clip(str(error))}") from None
    return {**record, "environment": {**record["environment"], "code": code}}
