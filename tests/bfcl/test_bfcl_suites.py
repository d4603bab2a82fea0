"""The BFCL suites built from the installed wheel: shape, pins, notice, determinism,
every task runnable, references held out; and the refusals without the extra."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from xaytune.core.domain.benchmark import REFERENCES_FILE, TASKS_FILE, SuiteSource
from xaytune.core.errors import SuiteError
from xaytune.harness.environment import open_environment
from xaytune.plugins import resolve_environment
from xaytune.suites import builtin_suite_path
from xaytune.suites.bfcl import BFCL_VERSION, build_bfcl_suite
from xaytune.suites.bfcl import _source as bfcl_source
from xaytune.suites.bfcl._schema import tool_schema
from xaytune.suites.bfcl.environment import BfclMultiTurnEnvironment


def test_the_multi_turn_suite(multi_turn: SuiteSource):
    suite = multi_turn.suite
    assert (suite.name, suite.version, len(suite.tasks)) == (
        "bfcl-multi-turn-base",
        BFCL_VERSION,
        200,
    )
    task = suite.task("multi_turn_base_0")
    assert task.input["question"].startswith("Move 'final_report.pdf' within document")
    assert len(task.turns) == 3  # four user turns in all
    assert task.environment is not None and task.environment.name == "bfcl-multi-turn"
    assert {"cd", "mkdir", "mv", "post_tweet"} <= {tool.name for tool in task.tools}
    # The environment's code (BFCL's classes included) is pinned into every task.
    pinned = resolve_environment("bfcl-multi-turn", where="test").identity
    assert task.environment.code == pinned.model_dump(mode="json")
    assert all(t.environment.code == task.environment.code for t in suite.tasks)
    reference = multi_turn.reference(task.id)
    assert reference.answer["turns"][0] == [
        "cd(folder='document')",
        "mkdir(dir_name='temp')",
        "mv(source='final_report.pdf', destination='temp')",
    ]


def test_the_simple_python_suite(simple_python: SuiteSource):
    suite = simple_python.suite
    assert (suite.name, len(suite.tasks)) == ("bfcl-simple-python", 400)
    task = suite.task("simple_python_0")
    assert task.turns == () and [tool.name for tool in task.tools] == ["calculate_triangle_area"]
    assert task.environment.name == "bfcl-functions"
    ground_truth = simple_python.reference(task.id).answer["ground_truth"]
    assert ground_truth == [
        {"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}
    ]


def test_the_sources_and_the_notice_are_carried(multi_turn: SuiteSource):
    source = multi_turn.suite.tasks[0].metadata["source"]
    assert (source["distribution"], source["version"]) == ("bfcl-eval", BFCL_VERSION)
    wheel = bfcl_source.require_bfcl()
    for relative, digest in source["files"].items():
        assert bfcl_source.file_digest(wheel / relative) == digest
    assert multi_turn.suite.tasks[0].metadata["license"] == "Apache-2.0"
    notice = (multi_turn.path / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in notice and "bfcl-eval" in notice


def test_references_are_only_in_the_held_out_file(multi_turn: SuiteSource):
    public = (multi_turn.path / TASKS_FILE).read_text()
    held_out = (multi_turn.path / REFERENCES_FILE).read_text()
    for task in multi_turn.suite.tasks[:40]:
        for turn in multi_turn.reference(task.id).answer["turns"]:
            for call in turn:
                assert json.dumps(call) in held_out
                assert call not in public, (task.id, call)


def test_a_build_is_deterministic(multi_turn: SuiteSource, tmp_path: Path):
    again = build_bfcl_suite("bfcl-multi-turn-base", tmp_path / "again")
    assert again.digest == multi_turn.digest
    for name in (TASKS_FILE, REFERENCES_FILE, "suite.json", "NOTICE"):
        assert (tmp_path / "again" / name).read_bytes() == (multi_turn.path / name).read_bytes()


def test_every_multi_turn_task_opens_its_environment(multi_turn: SuiteSource):
    # What an attempt does first: every declared tool is implemented and its schema
    # compiles into the argument checks.
    for task in multi_turn.suite.tasks:
        spec = _SpecLike(task)
        environment = open_environment(spec)
        assert environment is not None
        assert environment.names == {tool.name for tool in task.tools}


class _SpecLike:
    """What open_environment reads of a task-bound spec."""

    def __init__(self, task) -> None:
        self.task_id = task.id
        self.config = {
            "task": {
                "tools": [tool.model_dump(mode="json") for tool in task.tools],
                "environment": task.environment.model_dump(mode="json"),
            }
        }


def test_a_card_number_beyond_2_53_survives_the_suite(multi_turn: SuiteSource):
    task = multi_turn.suite.task("multi_turn_base_116")
    config = task.environment.params["initial_config"]
    assert '"binding_card": 9876543210123456' in config  # the JSON text, as BFCL's file
    environment = BfclMultiTurnEnvironment(**task.environment.params)
    account = environment._instances["TradingBot"].account_info
    assert account["binding_card"] == 9876543210123456


def test_a_scenario_keeps_bfcls_key_order(multi_turn: SuiteSource):
    # multi_turn_base_5's file system has two top-level directories, "data" first: BFCL
    # roots the file system at the first one (canonical JSON would sort "archive" first).
    task = multi_turn.suite.task("multi_turn_base_5")
    environment = BfclMultiTurnEnvironment(**task.environment.params)
    file_system = environment._instances["GorillaFileSystem"]
    assert file_system.root.name == "data"
    assert (
        environment.execute("cd", (), {"folder": "project"})
        == '{"current_working_directory": "project"}'
    )
    listed = json.loads(environment.execute("ls"))["current_directory_content"]
    assert listed == ["analysis_report.csv", "archive", "archive_summary.txt"]


def test_two_environments_of_one_task_share_no_state(multi_turn: SuiteSource):
    params = multi_turn.suite.task("multi_turn_base_0").environment.params
    first, second = BfclMultiTurnEnvironment(**params), BfclMultiTurnEnvironment(**params)
    before = json.dumps(second.state(), sort_keys=True)
    assert first.execute("cd", (), {"folder": "document"}).startswith("{")
    first.execute("mkdir", (), {"dir_name": "fresh"})
    assert json.dumps(second.state(), sort_keys=True) == before
    assert "fresh" not in json.dumps(params)  # the task's params are never mutated
    assert first.differences(second) == {"GorillaFileSystem": ["root"]}


def test_bfcl_results_and_failures_follow_bfcl(multi_turn: SuiteSource):
    params = multi_turn.suite.task("multi_turn_base_0").environment.params
    environment = BfclMultiTurnEnvironment(**params)
    assert environment.execute("cd", (), {"nope": 1}).startswith("Error during execution: ")
    assert (
        environment.execute("kill") == "Error during execution: Function call kill is not allowed."
    )
    with pytest.raises(TypeError):
        environment.tools()["cd"](nope=1)  # live: a tool error the model sees


def test_schemas_are_offered_as_bfcl_offers_them():
    offered = tool_schema(
        {
            "name": "math.hypot",
            "description": "Norm.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "x": {"type": "float", "description": "x."},
                    "ys": {"type": "array", "items": {"type": "float"}, "description": "ys."},
                    "opts": {"type": "dict", "properties": {"n": {"type": "tuple"}}},
                    "other": {"description": "no type"},
                },
                "required": ["x"],
            },
        }
    )
    assert offered["name"] == "math_hypot"
    parameters = offered["parameters"]
    assert parameters["type"] == "object" and parameters["required"] == ["x"]
    assert parameters["properties"]["x"] == {
        "type": "number",
        "format": "float",
        "description": "x. This is a float type value.",
    }
    assert parameters["properties"]["ys"]["items"] == {"type": "number"}
    assert parameters["properties"]["opts"]["properties"]["n"]["type"] == "array"
    assert parameters["properties"]["other"]["type"] == "string"


# -- without the extra ----------------------------------------------------------------


def test_without_the_extra_the_suite_says_how_to_install_it(monkeypatch):
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(bfcl_source.metadata, "version", missing)
    with pytest.raises(SuiteError) as caught:
        builtin_suite_path("bfcl-multi-turn-base")
    assert caught.value.reason == "bfcl-missing"
    assert "scripts/setup-bfcl.sh" in str(caught.value) and "\n" not in str(caught.value)


def test_another_bfcl_version_is_refused(monkeypatch):
    monkeypatch.setattr(bfcl_source.metadata, "version", lambda name: "2099.1.1")
    with pytest.raises(SuiteError) as caught:
        builtin_suite_path("bfcl-simple-python")
    assert caught.value.reason == "bfcl-version" and "2099.1.1" in str(caught.value)
