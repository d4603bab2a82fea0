"""Turning a source's rows into tasks and references: the builder's field mapping.

Two ways to read a row:

- **As a task record** (no mapping option given and the row has an ``input`` object):
  ``{"id", "input", "answer", "attachments"?, "metadata"?, "turns"?, "tools"?,
  "environment"?}``, any other field refused (``bad-record``). This is the suite's own
  line format plus the answer, which may be JSON data (a structured reference).
- **Mapped** (any other row, or any mapping option given):
  ``id_field`` (default ``id``; without ``--id-field`` and without an ``id`` in the
  first row, every task is numbered ``row-1``, ``row-2``, ... in source order);
  ``answer_field`` (default ``answer``); ``input_fields`` (default: every other field
  but ``metadata``; fields not listed are ignored); ``template`` (``"Q: {question}
  C: {context}"`` over the input fields: the input is then ``{"question": <text>}``,
  what a harness's ``{question}`` reads). A ``metadata`` object is kept as metadata.
  An input field holding an object or a list is refused (``bad-record``) unless
  ``json_inputs`` (``--json-inputs``) is given: it is then written as its canonical
  JSON text (RFC 8785: sorted keys, no spaces), which is what a prompt shows of it (a
  task input holds scalars only, so a harness template can place every field).

Two options work in both ways of reading:

- ``reference_fields`` (``--reference-fields prompt,test,entry_point``): the reference
  is the object ``{field: value, ...}`` of those fields (each must be present; values
  of any JSON type), instead of the one ``answer_field``: what a scorer that needs the
  tests *and* the entry point reads (``execution``). The fields are left out of the
  default input fields.
- ``id_rule``: ``strict`` (default) refuses an id that is not a valid id (``bad-id``);
  ``normalise`` derives one: every run of characters other than ASCII letters, digits,
  ``.``, ``_`` and ``-`` becomes one ``-``, then leading characters that are not a
  letter or digit are dropped (``HumanEval/0`` -> ``HumanEval-0``, ``a b/c`` ->
  ``a-b-c``). The source's id is kept as ``metadata.source_id`` whenever it changed.
  An id still not valid (empty, longer than 128 characters) is ``bad-id``; two ids that
  normalise to one (``a/b`` and ``a-b``) are ``id-collision``, naming both.

Refused, one line naming the row (``<file>: line N`` / ``row N``) and the field:
``duplicate-task`` (an id seen before), ``bad-id`` (not a valid id), ``missing-field``
(a mapped field absent), ``empty-answer`` (an answer that is null, empty or blank),
``missing-reference`` (no answer field, or a ``reference_fields`` field absent),
``id-collision``, ``bad-record`` (an answer that is not text or
an integer, an input value that is not text, a number, a boolean or null without
``json_inputs``),
``mixed-types`` (in a mapped row, a field whose JSON type differs from the first row's:
text in one row, a number in another; integers and decimals are both numbers),
``template-field-missing`` and ``bad-template`` (a template naming a field that is not
an input field, or using anything but ``{name}``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from xaytune.core import limits
from xaytune.core.canonical import canonical_bytes
from xaytune.core.errors import SuiteError
from xaytune.core.ids import is_valid_id
from xaytune.core.limits import quote

__all__ = ["ID_RULES", "FieldMapping", "map_rows", "normalise_id"]

ID_RULES = ("strict", "normalise")
_NOT_ID = re.compile(r"[^A-Za-z0-9._-]+")
_LEADING = re.compile(r"^[^A-Za-z0-9]+")

_TASK_FIELDS = frozenset(
    {"id", "input", "attachments", "metadata", "turns", "tools", "environment"}
)
_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class FieldMapping:
    """Which fields of a row make a task (see the module docstring)."""

    id_field: str | None = None
    input_fields: tuple[str, ...] | None = None
    answer_field: str = "answer"
    template: str | None = None
    reference_fields: tuple[str, ...] | None = None
    id_rule: Literal["strict", "normalise"] = "strict"
    json_inputs: bool = False

    def __post_init__(self) -> None:
        if self.id_rule not in ID_RULES:
            raise SuiteError("bad-id", f"--id-rule {quote(self.id_rule)} is not one of {ID_RULES}")
        if self.reference_fields is not None and not self.reference_fields:
            raise SuiteError("missing-reference", "--reference-fields: no field named")

    @property
    def given(self) -> bool:
        """True when a field option differs from the defaults (rows are then mapped);
        ``id_rule`` and ``reference_fields`` apply to task records as well."""
        return (self.id_field, self.input_fields, self.answer_field, self.template) != (
            None,
            None,
            "answer",
            None,
        )

    def template_fields(self) -> tuple[str, ...]:
        """The fields ``template`` names; ``bad-template`` for anything but ``{name}``."""
        if self.template is None:
            return ()
        try:
            parsed = list(string.Formatter().parse(self.template))
        except ValueError as error:
            raise SuiteError("bad-template", f"--template: {error}") from None
        names = []
        for _, name, spec, conversion in parsed:
            if name is None:
                continue
            if not name.isidentifier() or spec or conversion:
                raise SuiteError(
                    "bad-template",
                    f"--template: {{{name}}} is not a plain field name ({{name}} only)",
                )
            names.append(name)
        if not names:
            raise SuiteError("bad-template", "--template: names no field ({question}, ...)")
        if self.input_fields is not None:
            missing = [name for name in names if name not in self.input_fields]
            if missing:
                raise SuiteError(
                    "template-field-missing",
                    f"--template: field {quote(missing[0])} is not one of --input-fields",
                )
        return tuple(names)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def normalise_id(value: str) -> str:
    """``value`` under the ``normalise`` id rule (module docstring); it may still be
    invalid (empty, too long): the caller checks."""
    return _LEADING.sub("", _NOT_ID.sub("-", value))


class _Rows:
    """The state of one pass over the rows: ids seen, each field's first kind."""

    def __init__(self, mapping: FieldMapping) -> None:
        self.mapping = mapping
        self.template_names = mapping.template_fields()
        self.ids: set[str] = set()
        self.kinds: dict[str, str] = {}
        self.numbered: bool | None = None  # decided by the first row
        self.tasks: list[dict[str, Any]] = []
        self.references: list[dict[str, Any]] = []
        self.source_ids: dict[str, str] = {}  # derived id -> the source's id

    def same_kind(self, field: str, value: Any, where: str) -> None:
        kind = _kind(value)
        first = self.kinds.setdefault(field, kind)
        if first != kind:
            raise SuiteError(
                "mixed-types",
                f"{where}: field {quote(field)} is {kind}; earlier rows have {first}",
            )

    def answer(self, row: dict[str, Any], where: str, *, mapped: bool = True) -> Any:
        if self.mapping.reference_fields is not None:
            return self.reference_object(row, where)
        field = self.mapping.answer_field
        if field not in row:
            raise SuiteError("missing-reference", f"{where}: no answer field {quote(field)}")
        value = row[field]
        if value is None or (isinstance(value, str | dict | list) and not value):
            raise SuiteError("empty-answer", f"{where}: field {quote(field)} is empty")
        if isinstance(value, str) and not value.strip():
            raise SuiteError("empty-answer", f"{where}: field {quote(field)} is blank")
        if not mapped and isinstance(value, dict | list):
            return value  # a task record's structured reference (JSON data)
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise SuiteError(
                "bad-record",
                f"{where}: field {quote(field)} is {_kind(value)}; an answer is text or an integer",
            )
        if mapped:  # a task record's answer may be text or an integer, line by line
            self.same_kind(field, value, where)
        return str(value)

    def reference_object(self, row: dict[str, Any], where: str) -> dict[str, Any]:
        """The ``reference_fields`` of ``row`` as one object (a structured reference)."""
        reference = {}
        for field in self.mapping.reference_fields or ():
            if field not in row:
                raise SuiteError("missing-reference", f"{where}: no reference field {quote(field)}")
            value = row[field]
            if value is None or (isinstance(value, str | dict | list) and not value):
                raise SuiteError(
                    "empty-answer", f"{where}: reference field {quote(field)} is empty"
                )
            reference[field] = value
        return reference

    def derived_id(self, value: str, where: str) -> str:
        """``value`` under the id rule; ``bad-id`` when still invalid, ``id-collision``
        when another source id gave the same."""
        task_id = value if self.mapping.id_rule == "strict" else normalise_id(value)
        if not is_valid_id(task_id):
            rule = "" if task_id == value else f" (normalised: {quote(task_id)})"
            raise SuiteError(
                "bad-id",
                f"{where}: id {quote(value)}{rule} is not a valid id (letters, digits, '.', "
                "'_', '-'; starts with a letter or digit; at most 128 characters)"
                + ("; --id-rule normalise derives one" if task_id == value else ""),
            )
        first = self.source_ids.setdefault(task_id, value)
        if first != value:
            raise SuiteError(
                "id-collision",
                f"{where}: id {quote(value)} normalises to {quote(task_id)}, as {quote(first)} did",
            )
        return task_id

    def task_id(self, row: dict[str, Any], ordinal: int, where: str) -> str:
        field = self.mapping.id_field or "id"
        if self.numbered is None:
            self.numbered = self.mapping.id_field is None and "id" not in row
        if self.numbered:
            if "id" in row:
                raise SuiteError(
                    "mixed-types", f"{where}: has an 'id' field; the first row has none"
                )
            return f"row-{ordinal}"
        if field not in row:
            raise SuiteError("missing-field", f"{where}: no id field {quote(field)}")
        value = row[field]
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise SuiteError(
                "bad-id", f"{where}: id field {quote(field)} is {_kind(value)}, not an id"
            )
        self.same_kind(field, value, where)
        return self.derived_id(str(value), where)

    def inputs(self, row: dict[str, Any], task_id_field: str | None, where: str) -> dict:
        if self.mapping.input_fields is not None:
            fields: Iterable[str] = self.mapping.input_fields
        else:
            skip = {self.mapping.answer_field, "metadata", task_id_field}
            skip |= set(self.mapping.reference_fields or ())
            fields = [name for name in row if name not in skip]
        values: dict[str, Any] = {}
        for field in fields:
            if field not in row:
                raise SuiteError("missing-field", f"{where}: no input field {quote(field)}")
            value = row[field]
            if not isinstance(value, _SCALARS):
                if not self.mapping.json_inputs:
                    raise SuiteError(
                        "bad-record",
                        f"{where}: input field {quote(field)} is {_kind(value)}; an input "
                        "field holds text, a number, a boolean or null (--json-inputs writes "
                        "it as JSON text; --input-fields lists the fields to use)",
                    )
                value = canonical_bytes(value).decode()  # an object or a list: its JSON
            self.same_kind(field, value, where)
            values[field] = value
        if not values:
            raise SuiteError("missing-field", f"{where}: no input field (use --input-fields)")
        if self.mapping.template is None:
            return values
        for name in self.template_names:
            if name not in values:
                raise SuiteError(
                    "template-field-missing",
                    f"{where}: --template names {quote(name)}, which is not an input field",
                )
        text = self.mapping.template.format_map({k: _text(v) for k, v in values.items()})
        return {"question": text}

    def mapped(self, row: dict[str, Any], ordinal: int, where: str) -> None:
        task_id = self.task_id(row, ordinal, where)
        if task_id in self.ids:
            raise SuiteError("duplicate-task", f"{where}: task id {quote(task_id)} seen before")
        self.ids.add(task_id)
        answer = self.answer(row, where)
        id_field = None if self.numbered else (self.mapping.id_field or "id")
        task: dict[str, Any] = {"id": task_id, "input": self.inputs(row, id_field, where)}
        metadata = row.get("metadata")
        if isinstance(metadata, dict) and "metadata" not in (self.mapping.input_fields or ()):
            task["metadata"] = metadata
        self.keep_source_id(task, row.get(id_field) if id_field else None)
        self.tasks.append(task)
        self.references.append({"id": task_id, "answer": answer})

    def record(self, row: dict[str, Any], where: str) -> None:
        """A row in the suite's own line format (with its answer)."""
        extra = set(row) - _TASK_FIELDS - {"answer", *(self.mapping.reference_fields or ())}
        if extra:
            raise SuiteError("bad-record", f"{where}: unknown fields {quote(sorted(extra))}")
        task_id = row.get("id")
        if isinstance(task_id, str) and self.mapping.id_rule != "strict":
            task_id = self.derived_id(task_id, where)
        if isinstance(task_id, str) and task_id in self.ids:
            raise SuiteError("duplicate-task", f"{where}: task id {quote(task_id)} seen before")
        answer = self.answer(row, where, mapped=False)
        held_out = {"answer", *(self.mapping.reference_fields or ())}
        task = {key: value for key, value in row.items() if key not in held_out}
        if isinstance(task_id, str):
            self.ids.add(task_id)
            task["id"] = task_id
            self.keep_source_id(task, row.get("id"))
        self.tasks.append(task)
        self.references.append({"id": task_id, "answer": answer})

    def keep_source_id(self, task: dict[str, Any], source_id: Any) -> None:
        """``metadata.source_id``: the source's id, when the id rule changed it."""
        if source_id is None or str(source_id) == task["id"]:
            return
        metadata = task.get("metadata")
        metadata = dict(metadata) if isinstance(metadata, dict) else {}
        metadata["source_id"] = str(source_id)
        task["metadata"] = metadata


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def map_rows(
    rows: Iterable[tuple[str, dict[str, Any]]], mapping: FieldMapping
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tasks and references of ``rows`` under ``mapping`` (module docstring)."""
    state = _Rows(mapping)
    for ordinal, (where, row) in enumerate(rows, start=1):
        if ordinal > limits.MAX_SUITE_TASKS:
            limit = f"{limits.MAX_SUITE_TASKS:,}"
            raise SuiteError("too-large", f"{where}: more than {limit} tasks (MAX_SUITE_TASKS)")
        if not mapping.given and isinstance(row.get("input"), dict):
            state.record(row, where)
        else:
            state.mapped(row, ordinal, where)
    return state.tasks, state.references
