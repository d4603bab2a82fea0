"""The evaluation reports and how they are written.

Files under ``output_uri`` (canonical JSON, each written atomically)::

    evaluation.json                              RELEASED: per the disclosure
    restricted/evaluation.restricted.json        RESTRICTED: every per-task score,
                                                 judge exchanges, withheld values

Per-task observations are columns (one list of values and one of absences per
metric, in assignment order, position = index), so a report of 100,000 tasks stays
a few lists rather than a record per task per metric.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from operator import is_, is_not
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_serializer, model_validator

from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.measurement import AbsenceReason, MetricResult, TaskObservation
from xaytune.core.errors import EvaluationError
from xaytune.evaluation._common import JudgeExchange, ScorerReason
from xaytune.evaluation.config import Disclosure
from xaytune.evaluation.metrics import Column
from xaytune.harness.evidence.store import atomic_write

__all__ = [
    "RELEASED_FILE",
    "RESTRICTED_FILE",
    "EvaluationHeader",
    "HarnessEvaluationReport",
    "ProviderFeedback",
    "RestrictedEvaluationReport",
    "TaskColumn",
    "TaskObservationView",
    "Withheld",
    "WithholdRule",
    "write_reports",
]

RELEASED_FILE = "evaluation.json"
RESTRICTED_FILE = "restricted/evaluation.restricted.json"
_FROZEN = ConfigDict(frozen=True, extra="forbid")

WithholdRule = Literal[
    "per-task-reference-derived",
    "single-task-reference-derived",
    "successful-tasks-slice",
]


class EvaluationHeader(BaseModel):
    """What was evaluated, by which evaluator and config, under which disclosure."""

    model_config = _FROZEN

    evaluator: str
    evaluator_fingerprint: str
    determinism: Literal["DETERMINISTIC", "STOCHASTIC"]
    catalog: str
    disclosure: Disclosure
    config: dict[str, Any]
    subject_kind: Literal["agent_run_evidence"] = "agent_run_evidence"
    subject_digest: str
    suite_name: str
    suite_digest: str
    assignment_digest: str
    seed: int
    n_tasks: int
    attested_tasks: int


class TaskColumn(BaseModel):
    """Per-task observations of one metric: at each position a value or an absence."""

    model_config = _FROZEN

    metric: str
    values: tuple[int | float | None, ...]
    absences: tuple[AbsenceReason | None, ...]
    judge_spreads: tuple[float | None, ...] | None = None

    @model_validator(mode="after")
    def _value_xor_absence(self) -> TaskColumn:
        if len(self.values) != len(self.absences):
            raise ValueError(f"column {self.metric}: values and absences differ in length")
        # Which positions hold no value must be exactly those that hold an absence:
        # compared as two lists made in C (a column has a position per task).
        if list(map(is_, self.values, repeat(None))) != list(
            map(is_not, self.absences, repeat(None))
        ):
            pairs = zip(self.values, self.absences, strict=True)
            for position, (value, absence) in enumerate(pairs):
                if (value is None) == (absence is None):
                    raise ValueError(
                        f"column {self.metric}: position {position} is not a value xor an absence"
                    )
        return self

    @classmethod
    def of(cls, column: Column) -> TaskColumn:
        return cls(
            metric=column.metric,
            values=tuple(column.value_list()),
            absences=tuple(column.absence_list()),  # type: ignore[arg-type]
            judge_spreads=None if column.spreads is None else tuple(column.spread_list() or ()),
        )

    def observations(self, task_ids: tuple[str, ...]) -> tuple[TaskObservation, ...]:
        """One validated :class:`TaskObservation` per task, in position order."""
        spreads = self.judge_spreads or (None,) * len(task_ids)
        return _OBSERVATIONS.validate_python(_rows(task_ids, self.values, self.absences, spreads))

    def observation_data(self, task_ids: tuple[str, ...]) -> list[dict[str, Any]] | None:
        """``observations(task_ids)`` as the JSON data their dump gives
        (``model_dump(mode="json")`` of each), made without building them; None when
        a value is not one this spells as the dump does (then dump them)."""
        values, spreads = self.values, self.judge_spreads or (None,) * len(task_ids)
        if len(task_ids) != len(values) or len(spreads) != len(values):
            return None
        if not _PLAIN_VALUES.issuperset(map(type, values)) or not _SPREADS.issuperset(
            map(type, spreads)
        ):
            return None
        # A validated TaskObservation holds each value as a float; a non-finite float
        # or an integer a float cannot hold exactly is left to the dump.
        floats = [None if value is None else float(value) for value in values]
        if any(
            item is not None and not (-_EXACT_FLOAT <= item <= _EXACT_FLOAT)
            for item in (*floats, *spreads)
        ):
            return None
        return _rows(task_ids, floats, self.absences, spreads)


def _rows(
    task_ids: Sequence[str],
    values: Sequence[Any],
    absences: Sequence[Any],
    spreads: Sequence[float | None],
) -> list[dict[str, Any]]:
    """One observation's fields per task, in position order."""
    return [
        {
            "task_id": task_id,
            "position": position,
            "value": value,
            "absence": absence,
            "judge_spread": spread,
        }
        for position, (task_id, value, absence, spread) in enumerate(
            zip(task_ids, values, absences, spreads, strict=True)
        )
    ]


_OBSERVATIONS = TypeAdapter(tuple[TaskObservation, ...])
_PLAIN_VALUES = frozenset({int, float, type(None)})
_SPREADS = frozenset({float, type(None)})
_EXACT_FLOAT = float(2**53)  # beyond it (or NaN, Infinity) the dump decides


class TaskObservationView(Mapping[str, tuple[TaskObservation, ...]]):
    """RESTRICTED: per metric key, one observation per task, built on first access.

    Lazy because a run of 100,000 tasks has millions of observations and a caller
    (the comparison's task-level view) usually needs a few metrics.
    """

    def __init__(self, task_ids: tuple[str, ...], columns: tuple[TaskColumn, ...]) -> None:
        self._task_ids = task_ids
        self._columns = {column.metric: column for column in columns}
        self._built: dict[str, tuple[TaskObservation, ...]] = {}

    def __getitem__(self, key: str) -> tuple[TaskObservation, ...]:
        if key not in self._built:
            self._built[key] = self._columns[key].observations(self._task_ids)
        return self._built[key]

    def data(self, key: str) -> list[dict[str, Any]]:
        """``self[key]`` as JSON data (each observation's ``model_dump(mode="json")``),
        without building the observations when they are not built yet."""
        column = self._columns[key]
        if key not in self._built:
            plain = column.observation_data(self._task_ids)
            if plain is not None:
                return plain
        return list(_OBSERVATIONS.dump_python(self[key], mode="json"))

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


class Withheld(BaseModel):
    """Something the released report does not carry, and the rule why (no value)."""

    model_config = _FROZEN

    metric: str  # a metric key: "task_success", "input_tokens@successful-tasks", ...
    scope: Literal["run-value", "per-task"]
    rule: WithholdRule


class _Report(BaseModel):
    model_config = _FROZEN

    evaluation: EvaluationHeader
    metrics: tuple[MetricResult, ...]
    task_ids: tuple[str, ...]
    task_columns: tuple[TaskColumn, ...]
    withheld: tuple[Withheld, ...]

    @model_validator(mode="after")
    def _columns_cover_tasks(self) -> _Report:
        for column in self.task_columns:
            if len(column.values) != len(self.task_ids):
                raise ValueError(
                    f"column {column.metric} does not cover the {len(self.task_ids)} tasks"
                )
        return self

    def metric(self, key: str) -> MetricResult | None:
        """The run-level result for ``key``, if this report carries it."""
        return next((result for result in self.metrics if result.key == key), None)

    def column(self, key: str) -> TaskColumn | None:
        """The per-task column for ``key``, if this report carries it."""
        return next((column for column in self.task_columns if column.metric == key), None)


class HarnessEvaluationReport(_Report):
    """RELEASED: run values and per-task measurements allowed by the disclosure;
    ``withheld`` lists what is not here and why, without values."""

    schema_: Literal["xaytune.harness-evaluation-report/v1"] = Field(
        default="xaytune.harness-evaluation-report/v1", alias="schema"
    )
    label: Literal["released"] = "released"


class RestrictedEvaluationReport(_Report):
    """RESTRICTED: every run value and per-task score (reference-derived included),
    every judge exchange (requests carry candidate answers and, with reference
    access, references), and which values the released report withheld."""

    schema_: Literal["xaytune.harness-evaluation-restricted/v1"] = Field(
        default="xaytune.harness-evaluation-restricted/v1", alias="schema"
    )
    label: Literal["restricted"] = "restricted"
    judge_exchanges: tuple[JudgeExchange, ...] = ()
    # The outcome scorer's reasons, when it gave any (left out of the file when none,
    # so a report of a scorer without reasons is what it always was).
    scorer_reasons: tuple[ScorerReason, ...] = ()

    @model_serializer(mode="wrap")
    def _without_empty_reasons(self, handler: Any) -> dict[str, Any]:
        plain = handler(self)
        if not plain.get("scorer_reasons"):
            plain.pop("scorer_reasons", None)
        return plain

    @property
    def withheld_values(self) -> tuple[MetricResult, ...]:
        """The run-level results the released report withheld, with their values."""
        keys = {item.metric for item in self.withheld if item.scope == "run-value"}
        return tuple(result for result in self.metrics if result.key in keys)

    def task_observations(self) -> TaskObservationView:
        """Per metric key, one :class:`TaskObservation` per task (built lazily)."""
        return TaskObservationView(self.task_ids, self.task_columns)


class ProviderFeedback(_Report):
    """What a search or mutation provider may see, whatever the disclosure: no
    per-task reference-derived score, no reference-derived run value over a single
    task, no successful-tasks slice."""

    schema_: Literal["xaytune.provider-feedback/v1"] = Field(
        default="xaytune.provider-feedback/v1", alias="schema"
    )
    label: Literal["provider-feedback"] = "provider-feedback"


def report_bytes(report: BaseModel) -> bytes:
    """Canonical JSON of a report, newline-terminated."""
    return canonical_bytes(report.model_dump(mode="json", by_alias=True)) + b"\n"


def output_dir(output_uri: str) -> Path:
    """The local directory named by ``output_uri`` (a path or a ``file://`` URI)."""
    if not isinstance(output_uri, str) or not output_uri:
        raise EvaluationError("bad-output", f"output_uri {output_uri!r} is not a path")
    path = output_uri.removeprefix("file://")
    if "://" in path:
        raise EvaluationError("bad-output", f"output_uri {output_uri}: only local paths in H06")
    if ".." in Path(path).parts:
        raise EvaluationError("bad-output", f"output_uri {output_uri}: '..' is not allowed")
    return Path(path)


def evaluation_files(
    directory: Path,
    released: HarnessEvaluationReport,
    restricted: RestrictedEvaluationReport,
) -> tuple[tuple[Path, bytes], tuple[Path, bytes]]:
    """The restricted and the released report files under ``directory``: path, bytes."""
    return (
        (directory / RESTRICTED_FILE, report_bytes(restricted)),
        (directory / RELEASED_FILE, report_bytes(released)),
    )


def write_reports(
    directory: Path,
    released: HarnessEvaluationReport,
    restricted: RestrictedEvaluationReport,
) -> tuple[Path, Path]:
    """Write both reports atomically; refuse to replace different existing reports.

    The restricted file is written first, so a released file never exists without
    its restricted counterpart.
    """
    files = evaluation_files(directory, released, restricted)
    for path, raw in files:
        if path.exists() and path.read_bytes() != raw:
            raise EvaluationError(
                "output-exists",
                f"{path}: a different evaluation report is already there; use a fresh output_uri",
            )
    for path, raw in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, raw)
    return files[1][0], files[0][0]
