"""The builder without preprocessing: the ``normalise`` id rule and its collisions,
several fields into one structured reference, and object inputs as JSON text — each
refusal by its reason word, through the API and the CLI a user runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xaytune.core.domain.benchmark import TASKS_FILE
from xaytune.core.errors import SuiteError
from xaytune.suites import FieldMapping, build_suite_from_file
from xaytune.suites.__main__ import main as suites_main
from xaytune.suites._mapping import normalise_id

# HumanEval's shape: an id with "/", the prompt, the tests, the entry point.
HUMANEVAL = [
    {
        "task_id": "HumanEval/0",
        "prompt": "def inc(x):\n",
        "canonical_solution": "    return x + 1\n",
        "test": "def check(candidate):\n    assert candidate(1) == 2\n",
        "entry_point": "inc",
    },
    {
        "task_id": "HumanEval/1",
        "prompt": "def dec(x):\n",
        "canonical_solution": "    return x - 1\n",
        "test": "def check(candidate):\n    assert candidate(1) == 0\n",
        "entry_point": "dec",
    },
]


def _source(tmp_path: Path, rows: list[dict[str, Any]], name: str = "rows.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _build(source: Path, mapping: FieldMapping):
    return build_suite_from_file(
        source, source.parent / "out", name="fields", version="1", mapping=mapping
    )


def _refused(source: Path, mapping: FieldMapping) -> SuiteError:
    with pytest.raises(SuiteError) as caught:
        _build(source, mapping)
    assert "\n" not in str(caught.value)
    assert not (source.parent / "out").exists()
    return caught.value


HUMANEVAL_MAPPING = FieldMapping(
    id_field="task_id",
    input_fields=("prompt",),
    reference_fields=("prompt", "test", "entry_point"),
    id_rule="normalise",
)


@pytest.mark.parametrize(
    ("source_id", "derived"),
    [
        ("HumanEval/0", "HumanEval-0"),
        ("a b/c", "a-b-c"),
        ("Mbpp//12", "Mbpp-12"),
        ("/lead", "lead"),
        ("_x", "x"),
        ("ok.id_1-2", "ok.id_1-2"),
        ("café", "caf-"),
    ],
)
def test_the_normalise_rule_by_hand(source_id: str, derived: str):
    assert normalise_id(source_id) == derived


def test_a_humaneval_file_builds_without_preprocessing(tmp_path: Path):
    built = _build(_source(tmp_path, HUMANEVAL), HUMANEVAL_MAPPING)
    assert [task.id for task in built.suite.tasks] == ["HumanEval-0", "HumanEval-1"]
    task = built.suite.tasks[0]
    assert task.input == {"prompt": "def inc(x):\n"}
    assert task.metadata == {"source_id": "HumanEval/0"}
    # The reference is the object of the three fields; the solution is not kept.
    assert json.loads(built.reference("HumanEval-0").text) == {
        "prompt": "def inc(x):\n",
        "test": "def check(candidate):\n    assert candidate(1) == 2\n",
        "entry_point": "inc",
    }
    tasks = (tmp_path / "out" / TASKS_FILE).read_text()
    assert "check(candidate)" not in tasks and "canonical_solution" not in tasks


def test_the_strict_rule_refuses_a_slash_and_names_the_other_rule(tmp_path: Path):
    mapping = FieldMapping(id_field="task_id", reference_fields=("test",))
    error = _refused(_source(tmp_path, HUMANEVAL), mapping)
    assert error.reason == "bad-id"
    assert "'HumanEval/0'" in str(error) and "--id-rule normalise" in str(error)


def test_two_ids_that_normalise_to_one_are_refused_naming_both(tmp_path: Path):
    rows = [
        {"id": "a/b", "q": "x", "answer": "1"},
        {"id": "a-b", "q": "y", "answer": "2"},
    ]
    error = _refused(_source(tmp_path, rows), FieldMapping(id_rule="normalise"))
    assert error.reason == "id-collision"
    assert "'a-b'" in str(error) and "'a/b'" in str(error) and "line 2" in str(error)


def test_an_id_that_normalises_to_nothing_is_bad_id(tmp_path: Path):
    rows = [{"id": "///", "q": "x", "answer": "1"}]
    assert _refused(_source(tmp_path, rows), FieldMapping(id_rule="normalise")).reason == "bad-id"


def test_the_same_source_id_twice_is_still_a_duplicate(tmp_path: Path):
    rows = [{"id": "a/b", "q": "x", "answer": "1"}, {"id": "a/b", "q": "y", "answer": "2"}]
    error = _refused(_source(tmp_path, rows), FieldMapping(id_rule="normalise"))
    assert error.reason == "duplicate-task"


def test_task_records_take_the_id_rule_and_reference_fields(tmp_path: Path):
    rows = [{"id": "set/1", "input": {"question": "q"}, "test": "assert True", "answer": "x"}]
    mapping = FieldMapping(id_rule="normalise", reference_fields=("test",))
    built = _build(_source(tmp_path, rows), mapping)
    (task,) = built.suite.tasks
    assert (task.id, task.metadata) == ("set-1", {"source_id": "set/1"})
    assert json.loads(built.reference("set-1").text) == {"test": "assert True"}


def test_a_missing_reference_field_is_missing_reference(tmp_path: Path):
    rows = [dict(HUMANEVAL[0]), {k: v for k, v in HUMANEVAL[1].items() if k != "entry_point"}]
    error = _refused(_source(tmp_path, rows), HUMANEVAL_MAPPING)
    assert error.reason == "missing-reference"
    assert "line 2" in str(error) and "'entry_point'" in str(error)


def test_an_empty_reference_field_is_empty_answer(tmp_path: Path):
    rows = [dict(HUMANEVAL[0], test="")]
    assert _refused(_source(tmp_path, rows), HUMANEVAL_MAPPING).reason == "empty-answer"


def test_a_list_reference_field_is_kept_as_data(tmp_path: Path):
    # MBPP's shape: the tests are a list of asserts.
    rows = [{"task_id": 11, "text": "Add.", "test_list": ["assert add(1, 1) == 2"]}]
    mapping = FieldMapping(id_field="task_id", reference_fields=("test_list",))
    built = _build(_source(tmp_path, rows), mapping)
    assert json.loads(built.reference("11").text) == {"test_list": ["assert add(1, 1) == 2"]}
    assert built.suite.tasks[0].input == {"text": "Add."}  # reference fields left out


def test_an_object_input_is_refused_without_json_inputs(tmp_path: Path):
    rows = [{"id": "a", "q": "x", "schema": {"type": "object"}, "answer": "1"}]
    error = _refused(_source(tmp_path, rows), FieldMapping())
    assert error.reason == "bad-record"
    assert "--json-inputs" in str(error)


def test_json_inputs_writes_objects_and_lists_as_canonical_json_text(tmp_path: Path):
    rows = [{"id": "a", "q": "x", "schema": {"z": 1, "a": [True, None]}, "answer": "1"}]
    built = _build(_source(tmp_path, rows), FieldMapping(json_inputs=True))
    # Canonical JSON (RFC 8785): keys sorted, no spaces; worked out by hand.
    assert built.suite.tasks[0].input == {"q": "x", "schema": '{"a":[true,null],"z":1}'}


def test_the_cli_builds_humaneval_with_every_option(tmp_path: Path, capsys):
    source = _source(tmp_path, HUMANEVAL, "HumanEval.jsonl")
    out = tmp_path / "suites" / "humaneval"
    code = suites_main(
        [
            "build",
            str(source),
            "--name",
            "humaneval",
            "--version",
            "1",
            "--out",
            str(out),
            "--id-field",
            "task_id",
            "--input-fields",
            "prompt",
            "--reference-fields",
            "prompt,test,entry_point",
            "--id-rule",
            "normalise",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert "pinned humaneval 1: 2 tasks" in capsys.readouterr().out
    assert (out / TASKS_FILE).is_file()


def test_the_cli_refuses_a_collision_in_one_line_with_exit_code_2(tmp_path: Path, capsys):
    rows = [{"id": "a/b", "q": "x", "answer": "1"}, {"id": "a b", "q": "y", "answer": "2"}]
    source = _source(tmp_path, rows)
    args = ["build", str(source), "--name", "x", "--version", "1", "--out", str(tmp_path / "o")]
    code = suites_main([*args, "--id-rule", "normalise", "--json-inputs"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: id-collision: ") and err.count("\n") == 1
