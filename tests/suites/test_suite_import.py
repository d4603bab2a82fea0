"""Bring-your-own data: the builder reads JSONL, JSON arrays, CSV and Parquet, maps fields
onto tasks, and refuses duplicate ids, empty answers and mixed types in one line naming
the file, the row and the field."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from xaytune.core.domain.benchmark import REFERENCES_FILE, TASKS_FILE
from xaytune.core.errors import SuiteError, XaytuneError
from xaytune.suites import FieldMapping, build_suite_from_file
from xaytune.suites.__main__ import main as suites_main


def _build(source: Path, mapping: FieldMapping | None = None, **kwargs: Any):
    return build_suite_from_file(
        source, source.parent / "out", name="imported", version="1", mapping=mapping, **kwargs
    )


def _refused(source: Path, mapping: FieldMapping | None = None, **kwargs: Any) -> XaytuneError:
    with pytest.raises(XaytuneError) as caught:
        _build(source, mapping, **kwargs)
    assert "\n" not in str(caught.value)
    assert not (source.parent / "out").exists()  # a refusal writes nothing
    return caught.value


def _pyarrow():
    """pyarrow (the [parquet] extra, in [test]); under CI a missing one fails."""
    if os.environ.get("CI") == "true":
        import pyarrow.parquet as pq

        return pq
    return pytest.importorskip("pyarrow.parquet")


def _parquet(path: Path, columns: dict[str, list[Any]]) -> Path:
    pq = _pyarrow()
    import pyarrow as pa

    pq.write_table(pa.table(columns), path)
    return path


# --- JSONL --------------------------------------------------------------------------


def test_a_question_answer_jsonl_is_mapped_and_numbered(tmp_path: Path):
    # The report: {"question", "answer"} lines used to be "unknown fields".
    source = tmp_path / "qa.jsonl"
    source.write_text('{"question": "2+2?", "answer": "4"}\n{"question": "3+3?", "answer": "6"}\n')
    built = _build(source)
    assert built.suite.task_ids == ("row-1", "row-2")
    assert built.suite.task("row-2").input == {"question": "3+3?"}
    assert built.reference("row-1").answer == "4"


def test_a_jsonl_row_with_mixed_answer_types_names_the_line(tmp_path: Path):
    source = tmp_path / "qa.jsonl"
    source.write_text('{"question": "a", "answer": "4"}\n{"question": "b", "answer": 6}\n')
    error = _refused(source)
    assert error.reason == "mixed-types"
    assert f"{source}: line 2:" in str(error) and "'answer'" in str(error)


# --- JSON array ------------------------------------------------------------------------


def test_a_json_array_with_id_and_input_fields(tmp_path: Path):
    source = tmp_path / "qa.json"
    rows = [
        {"qid": 7, "question": "Capital of France?", "context": "Europe", "answer": "Paris"},
        {"qid": 8, "question": "Capital of Japan?", "context": "Asia", "answer": "Tokyo"},
    ]
    source.write_text(json.dumps(rows))
    mapping = FieldMapping(id_field="qid", input_fields=("question", "context"))
    built = _build(source, mapping)
    assert built.suite.task_ids == ("7", "8")
    assert built.suite.task("8").input == {"question": "Capital of Japan?", "context": "Asia"}
    assert "Tokyo" not in (tmp_path / "out" / TASKS_FILE).read_text()
    assert "Tokyo" in (tmp_path / "out" / REFERENCES_FILE).read_text()


@pytest.mark.parametrize(
    ("rows", "reason", "named"),
    [
        ([{"id": "a", "q": "x", "answer": "1"}, {"id": "a", "q": "y", "answer": "2"}],
         "duplicate-task", "row 2"),
        ([{"id": "a", "q": "x", "answer": "1"}, {"id": "b", "q": "y", "answer": " "}],
         "empty-answer", "row 2"),
        ([{"id": "a", "q": "x", "answer": "1"}, {"id": "b", "q": "y", "answer": None}],
         "empty-answer", "row 2"),
        ([{"id": "a", "q": "x", "answer": "1"}, {"id": "b", "q": 5, "answer": "2"}],
         "mixed-types", "row 2"),
        ([{"id": "a", "q": ["x"], "answer": "1"}], "bad-record", "row 1"),
        ([{"id": "a", "q": "x"}], "missing-reference", "row 1"),
        ([{"id": "../a", "q": "x", "answer": "1"}], "bad-id", "row 1"),
        ({"not": "an array"}, "bad-json", "not a JSON array"),
        ([{"id": "a", "q": "x", "answer": "1"}, 3], "bad-json", "row 2"),
    ],
)  # fmt: skip
def test_json_array_refusals_name_the_row(tmp_path: Path, rows, reason, named):
    source = tmp_path / "qa.json"
    source.write_text(json.dumps(rows))
    error = _refused(source)
    assert error.reason == reason
    assert str(source) in str(error) and named in str(error)


def test_a_json_array_with_a_duplicate_key_is_refused(tmp_path: Path):
    source = tmp_path / "qa.json"
    source.write_text('[{"id": "a", "id": "b", "answer": "1"}]')
    assert _refused(source).reason == "bad-json"


# --- CSV ------------------------------------------------------------------------------


def test_a_csv_with_a_template(tmp_path: Path):
    source = tmp_path / "capitals.csv"
    source.write_text(
        '\ufeffcountry,continent,capital\nFrance,Europe,Paris\n"Korea, South",Asia,Seoul\n'
    )
    mapping = FieldMapping(
        input_fields=("country", "continent"),
        answer_field="capital",
        template="Capital of {country} ({continent})?",
    )
    built = _build(source, mapping)
    assert built.suite.task_ids == ("row-1", "row-2")
    assert built.suite.task("row-2").input == {"question": "Capital of Korea, South (Asia)?"}
    assert built.reference("row-2").answer == "Seoul"


@pytest.mark.parametrize(
    ("text", "mapping", "reason", "named"),
    [
        ("id,q,answer\na,x,1\na,y,2\n", None, "duplicate-task", "line 3"),
        ("id,q,answer\na,x,1\nb,y,\n", None, "empty-answer", "line 3"),
        ("id,q,answer\na,x,1\nb,y\n", None, "bad-csv", "line 3"),
        ("id,q,q\na,x,1\n", None, "bad-csv", "line 1"),
        ("", None, "bad-csv", "empty file"),
        ("id,q,answer\na,x,1\n", FieldMapping(input_fields=("nope",)), "missing-field",
         "'nope'"),
        ("id,q,answer\na,x,1\n", FieldMapping(template="{q} {r}"), "template-field-missing",
         "'r'"),
        ("id,q,answer\na,x,1\n", FieldMapping(template="{q!r}"), "bad-template", "--template"),
        ("id,q,answer\na,x,1\n", FieldMapping(input_fields=("q",), template="{z}"),
         "template-field-missing", "'z'"),
    ],
)  # fmt: skip
def test_csv_refusals_name_the_line(tmp_path: Path, text, mapping, reason, named):
    source = tmp_path / "qa.csv"
    source.write_text(text)
    error = _refused(source, mapping)
    assert error.reason == reason
    assert named in str(error)


def test_a_csv_that_is_not_utf8_names_the_line(tmp_path: Path):
    source = tmp_path / "qa.csv"
    source.write_bytes(b"id,q,answer\na,x,1\nb,\xff,2\n")
    error = _refused(source)
    assert error.reason == "bad-csv" and "line 3" in str(error)


# --- Parquet ------------------------------------------------------------------------


def test_a_parquet_file_with_a_list_column_left_out(tmp_path: Path):
    source = _parquet(
        tmp_path / "test-00000-of-00001.parquet",
        {
            "qid": ["q1", "q2", "q3"],
            "question": ["2+2?", "3*3?", "10-7?"],
            "choices": [["3", "4"], ["9", "6"], ["3", "2"]],
            "answer": ["4", "9", "3"],
        },
    )
    mapping = FieldMapping(id_field="qid", input_fields=("question",))
    built = _build(source, mapping)
    assert built.suite.task_ids == ("q1", "q2", "q3")
    assert built.suite.task("q3").input == {"question": "10-7?"}
    assert built.reference("q2").answer == "9"


@pytest.mark.parametrize(
    ("columns", "mapping", "reason", "named"),
    [
        ({"id": ["a", "b"], "q": ["x", "y"], "answer": ["1", None]}, None, "empty-answer",
         "row 2"),
        ({"id": ["a", "a"], "q": ["x", "y"], "answer": ["1", "2"]}, None, "duplicate-task",
         "row 2"),
        ({"id": ["a"], "q": [["x"]], "answer": ["1"]}, None, "bad-record", "'q'"),
        ({"id": ["a"], "q": ["x"], "answer": [1.5]}, None, "bad-record", "'answer'"),
    ],
)  # fmt: skip
def test_parquet_refusals_name_the_row(tmp_path: Path, columns, mapping, reason, named):
    source = _parquet(tmp_path / "set.parquet", columns)
    error = _refused(source, mapping)
    assert error.reason == reason
    assert str(source) in str(error) and named in str(error)


def test_a_file_that_is_not_parquet_is_refused(tmp_path: Path):
    _pyarrow()
    source = tmp_path / "broken.parquet"
    source.write_bytes(b"PAR1 this is not a parquet file")
    assert _refused(source).reason == "bad-parquet"


def test_parquet_without_pyarrow_says_how_to_install_it(tmp_path: Path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name: str, *args: Any, **kwargs: Any):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    source = tmp_path / "set.parquet"
    source.write_bytes(b"PAR1")
    error = _refused(source)
    assert error.reason == "parquet-missing" and "xaytune[parquet]" in str(error)


# --- the CLI ------------------------------------------------------------------------


def test_the_cli_maps_fields_and_refuses_in_one_line(tmp_path: Path, capsys):
    source = tmp_path / "qa.csv"
    source.write_text("key,question,gold\nk1,2+2?,4\nk2,3+3?,6\n")
    out = tmp_path / "suite"
    args = ["build", str(source), "--name", "qa", "--version", "1", "--out", str(out)]
    mapping = ["--id-field", "key", "--input-fields", "question", "--answer-field", "gold"]
    assert suites_main([*args, *mapping]) == 0
    assert "pinned qa 1: 2 tasks" in capsys.readouterr().out
    # The same file without the mapping: no 'answer' field in line 2.
    code = suites_main([*args[:-1], str(tmp_path / "other")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: missing-reference: ") and "line 2" in err


def test_a_declared_format_that_does_not_exist_is_refused(tmp_path: Path):
    source = tmp_path / "qa.txt"
    source.write_text('{"question": "a", "answer": "1"}\n')
    error = _refused(source, fmt="xml")
    assert isinstance(error, SuiteError) and error.reason == "unknown-format"
