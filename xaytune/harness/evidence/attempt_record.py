"""An attempt file's first two lines: the spec, and the attempt record.

The record attributes the attempt (suite, assignment, task, position, seed, replicate,
harness, spec, intent) and names the serving model and the writer. The writer fills
the replicate's :class:`RecordTemplate` (built once per replicate, through
:func:`record_bytes` itself); verification compares a stored record with the same
template.
"""

from __future__ import annotations

from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.harness.evidence._template import LineTemplate, json_string, placeholder
from xaytune.harness.evidence.trajectory import WRITER
from xaytune.harness.spec import AgentExecutionSpec

__all__ = [
    "RecordTemplate",
    "attribution_facts",
    "attribution_of",
    "record_bytes",
    "record_line",
    "spec_bytes",
]


def spec_bytes(spec: AgentExecutionSpec) -> bytes:
    """A spec as an attempt file's first line: the bytes its fingerprint covers."""
    return spec.canonical + b"\n"


def attribution_facts(
    *,
    suite_digest: str,
    assignment_digest: str,
    task_id: str,
    position: int,
    seed: int,
    replicate: int,
    harness_fingerprint: str,
    spec_fingerprint: str,
    intent: str | None = None,
) -> dict[str, Any]:
    """A record's attribution: what the writer records and verification expects.

    ``intent`` is the digest of the run's intent record (what the run set out to do,
    written before it ran), or None for an attempt run outside an experiment.
    """
    return {
        "suite_digest": suite_digest,
        "assignment_digest": assignment_digest,
        "task_id": task_id,
        "position": position,
        "seed": seed,
        "replicate": replicate,
        "harness_fingerprint": harness_fingerprint,
        "spec_fingerprint": spec_fingerprint,
        "intent": intent,
    }


def attribution_of(spec: AgentExecutionSpec, *, intent: str | None = None) -> dict[str, Any]:
    """The attribution a task-bound spec's attempts record (under ``intent``)."""
    binding = spec.binding
    assert binding is not None
    return attribution_facts(
        intent=intent,
        suite_digest=binding.suite_digest,
        assignment_digest=binding.assignment_digest,
        task_id=binding.task_id,
        position=binding.position,
        seed=binding.seed,
        replicate=spec.replicate,
        harness_fingerprint=spec.harness_fingerprint,
        spec_fingerprint=spec.fingerprint,
    )


def record_bytes(number: int, attribution: dict[str, Any], model: bytes) -> bytes:
    """An attempt record line: the canonical record, newline-terminated.

    ``model`` is the canonical bytes of the serving identity (computed once per
    model by the runner). The record's keys are written in their canonical (sorted)
    order around canonical values, so the bytes are ``canonical_bytes(record)``;
    verification rebuilds them from the facts it expects and compares.
    """
    return b"".join(
        (
            b'{"attempt":%d,"attribution":' % number,
            canonical_bytes(attribution),
            b',"model":',
            model,
            b',"schema":"xaytune.attempt/v3","writer":',
            _WRITER_JSON,
            b"}\n",
        )
    )


_WRITER_JSON = canonical_bytes(WRITER)


_RECORD_HOLES = ("position", "spec_fingerprint", "task_id")


class RecordTemplate:
    """:func:`record_bytes` for the attempts of one replicate, as a template.

    Everything but the attempt number, task id, position and spec fingerprint is
    the same for every attempt of a replicate, so its record is built once, through
    :func:`attribution_facts` and :func:`record_bytes` themselves, with placeholders
    for those, and each record is that line filled in:
    ``line(...) == record_bytes(number, attribution_facts(...), model)``.
    Verification compares a stored record with it.
    """

    __slots__ = ("_format",)

    _HEAD = b'{"attempt":0,'

    def __init__(
        self,
        *,
        suite_digest: str,
        assignment_digest: str,
        seed: int,
        replicate: int,
        harness_fingerprint: str,
        model: bytes,
        intent: str | None = None,
    ) -> None:
        attribution = attribution_facts(
            intent=intent,
            suite_digest=suite_digest,
            assignment_digest=assignment_digest,
            seed=seed,
            replicate=replicate,
            harness_fingerprint=harness_fingerprint,
            **{name: placeholder(name) for name in _RECORD_HOLES},  # type: ignore[arg-type]
        )
        line = record_bytes(0, attribution, model)
        assert line.startswith(self._HEAD)
        template = LineTemplate(
            b'{"attempt":\x00attempt,' + line[len(self._HEAD) :],
            {
                "attempt": b"\x00attempt",
                **{name: canonical_bytes(placeholder(name)) for name in _RECORD_HOLES},
            },
        )
        # The attribution's keys are sorted: position, spec_fingerprint, task_id.
        self._format = template.format(("attempt", *_RECORD_HOLES))

    def line(self, number: int, *, task_id: str, position: int, spec_fingerprint: str) -> bytes:
        """The record line of attempt ``number`` of the task at ``position``."""
        return self._format % (
            b"%d" % number,
            b"%d" % position,
            json_string(spec_fingerprint),
            json_string(task_id),
        )


# The record templates of the replicates a process runs, by their shared facts: a
# replicate's attempts differ only in their number, task id, position and spec.
_TEMPLATES: dict[tuple[Any, ...], RecordTemplate] = {}
_MAX_TEMPLATES = 64


def record_line(spec: AgentExecutionSpec, number: int, model: bytes, intent: str | None) -> bytes:
    """``record_bytes(number, attribution_of(spec, intent=intent), model)``, filled in
    from the replicate's :class:`RecordTemplate` (built once per replicate)."""
    binding = spec.binding
    assert binding is not None
    position = binding.position
    if type(position) is not int or type(number) is not int:
        return record_bytes(number, attribution_of(spec, intent=intent), model)
    key = (
        binding.suite_digest,
        binding.assignment_digest,
        binding.seed,
        spec.replicate,
        spec.harness_fingerprint,
        model,
        intent,
    )
    template = _TEMPLATES.get(key)
    if template is None:
        if len(_TEMPLATES) >= _MAX_TEMPLATES:
            _TEMPLATES.clear()
        template = RecordTemplate(
            suite_digest=binding.suite_digest,
            assignment_digest=binding.assignment_digest,
            seed=binding.seed,
            replicate=spec.replicate,
            harness_fingerprint=spec.harness_fingerprint,
            model=model,
            intent=intent,
        )
        _TEMPLATES[key] = template
    return template.line(
        number, task_id=binding.task_id, position=position, spec_fingerprint=spec.fingerprint
    )
