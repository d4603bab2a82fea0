"""What Hydra raises while composing becomes one line by its type (issue 28, item 5).

Each exception here is the one Hydra really raises: the packaged config is composed
in-process with Hydra's compose API and the given overrides. The expected lines were
written by hand from Hydra's refusal (the group's options listed in conf/, the key the
override names), and are the lines the CLI printed before it read exceptions instead of
Hydra's report (tests/app/test_app_errors.py runs a few through the CLI).
"""

from __future__ import annotations

import os
import sys

import pytest
from hydra import compose, initialize_config_dir, initialize_config_module
from hydra._internal.config_repository import CachingConfigRepository
from hydra._internal.hydra import Hydra

from xaytune.app import cli
from xaytune.app.composition import composing, composition_done, composition_finished
from xaytune.app.hydra_errors import composition_error_line

_TYPO = "no such key (a typo? `python -m xaytune +experiment=... --cfg job` prints every key)"

CASES = [
    # (overrides, the one line)
    (
        ["model=nonexistent"],
        "error: bad-override: In 'config': Could not find 'model/nonexistent'; Available "
        "options in 'model': anthropic, llama_cpp_local, llama_cpp_local_8k, "
        "openai_compatible, simulated",
    ),
    (
        ["+experiment=quickstart", "hydra/launcher=nope"],
        "error: bad-override: In 'hydra/config': Could not find 'hydra/launcher/nope'; "
        "Available options in 'hydra/launcher': basic, joblib",
    ),
    (["samplin.count=3"], f"error: bad-override: samplin.count: {_TYPO}"),
    (
        ["+experiment=quickstart", "sampling.count=2", "candidates.a.max_turn=3"],
        f"error: bad-override: candidates.a.max_turn: {_TYPO}",
    ),
    (
        ["experiment=quickstart"],
        "error: bad-override: experiment=quickstart: no default selects the group "
        "experiment; add it with +experiment=quickstart",
    ),
    (
        ["+experiment=quickstart", "model=simulated", "candidate=terse"],
        "error: bad-override: candidate=terse: the group candidate is chosen per place; "
        "give candidate@candidates.a=terse or candidate@candidates.b=terse",
    ),
    (
        ["+experiment=quickstart", "model={_target_: x}"],
        "error: bad-override: model={_target_: x}: model is a config group, so a mapping "
        "cannot replace its option; drop the option first: ~model '+model={_target_: x}' "
        "(or write it to <config dir>/model/<name>.yaml and give --config-dir <config dir> "
        "model=<name>)",
    ),
    (
        ["+experiment=quickstart", "seed=[1"],
        "error: bad-override: seed=[1: no viable alternative at input '[1'; See "
        "https://hydra.cc/docs/1.2/advanced/override_grammar/basic for details",
    ),
    (
        ["+experiment=quickstart", "seed=1,2"],
        "error: bad-override: Ambiguous value for argument 'seed=1,2'; 1. To use it as a "
        "list, use key=[value1,value2]",
    ),
    (
        ["+experiment=quickstart", "+candidates.a=3"],
        "error: bad-override: Could not append to config. An item is already at "
        "'candidates.a'.; Either remove + prefix: 'candidates.a=3'",
    ),
]


def _composition_error(overrides: list[str]) -> BaseException:
    with (
        initialize_config_module(config_module="xaytune.conf", version_base="1.3"),
        pytest.raises(Exception) as raised,
    ):
        compose(config_name="config", overrides=overrides)
    return raised.value


@pytest.mark.parametrize(("overrides", "line"), CASES, ids=[" ".join(o) for o, _ in CASES])
def test_a_composition_error_is_one_line_by_its_type(overrides, line):
    error = _composition_error(overrides)
    assert composition_error_line(error, overrides) == line


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    (tmp_path / "config.yaml").write_text('name: broken\nprompt: "unclosed\n')
    with (
        initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"),
        pytest.raises(Exception) as raised,
    ):
        compose(config_name="config")
    line = composition_error_line(raised.value, [])
    assert line.startswith("error: bad-yaml: ScannerError: ")
    assert str(tmp_path / "config.yaml") in line and "line 2" in line
    assert "\n" not in line


def test_an_os_error_is_bad_output_and_anything_else_bad_override():
    denied = PermissionError(13, "Permission denied", "/srv/out")
    assert composition_error_line(denied, []) == (
        "error: bad-output: PermissionError: [Errno 13] Permission denied: '/srv/out'"
    )
    other = ValueError("Config group override must be a string or a list.\nGot dict")
    assert composition_error_line(other, []) == (
        "error: bad-override: ValueError: Config group override must be a string or a "
        "list. Got dict"
    )


def test_a_long_override_is_clipped_not_echoed():
    override = "seed=[" + "1," * 5000
    line = composition_error_line(_composition_error([override]), [override])
    assert line.startswith("error: bad-override: seed=[1,1,") and len(line) < 500


def test_hydra_raises_while_composing_and_reports_again_once_the_task_starts(monkeypatch):
    monkeypatch.setenv("HYDRA_FULL_ERROR", "0")  # the user's own value comes back
    with composing():
        assert os.environ["HYDRA_FULL_ERROR"] == "1" and not composition_finished()
        composition_done()
        assert os.environ["HYDRA_FULL_ERROR"] == "0" and composition_finished()
    assert os.environ["HYDRA_FULL_ERROR"] == "0"
    monkeypatch.delenv("HYDRA_FULL_ERROR")
    with pytest.raises(KeyError), composing():  # an error while composing ends it too
        raise KeyError("x")
    assert "HYDRA_FULL_ERROR" not in os.environ


def _cli(monkeypatch, capsys, tmp_path, *argv: str) -> tuple[int, str]:
    """``python -m xaytune *argv`` in this process: its exit code and stderr."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["xaytune", *argv])
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(cli, "install_stop_handlers", lambda: None)  # this process's own
    # The patches run() applies are undone after the test.
    monkeypatch.setattr(Hydra, "get_mode", Hydra.get_mode)
    monkeypatch.setattr(CachingConfigRepository, "__init__", CachingConfigRepository.__init__)
    with pytest.raises(SystemExit) as stop:
        cli.run()
    return stop.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["experiment=quickstart"], CASES[4][1]),
        (["--help", "samplin.count=3"], f"error: bad-override: samplin.count: {_TYPO}"),
        (
            ["--cfg", "job", "+experiment=quickstart", "candidate=terse"],
            "error: bad-override: candidate=terse: the group candidate is chosen per place; "
            "give candidate@candidates.a=terse or candidate@candidates.b=terse",
        ),
        (
            ["-m", "+experiment=quickstart", "seed=1,2", "model=nope"],
            "error: bad-override: In 'config': Could not find 'model/nope'; Available "
            "options in 'model': anthropic, llama_cpp_local, llama_cpp_local_8k, "
            "openai_compatible, simulated",
        ),
    ],
    ids=["run", "help", "cfg", "multirun"],
)
def test_the_cli_prints_the_line_and_exits_2_leaving_nothing(
    monkeypatch, capsys, tmp_path, argv, line
):
    code, err = _cli(monkeypatch, capsys, tmp_path, *argv)
    assert (code, err) == (2, line + "\n")
    assert "HYDRA_FULL_ERROR" not in os.environ
    assert list(tmp_path.iterdir()) == []


def test_an_option_among_the_overrides_is_one_line(monkeypatch, capsys, tmp_path):
    code, err = _cli(monkeypatch, capsys, tmp_path, "+experiment=quickstart", "--cfg", "jobs")
    assert code == 2
    assert err == (
        "error: bad-override: argument --cfg/-c: invalid choice: 'jobs' "
        "(choose from 'job', 'hydra', 'all')\n"
    )
    code, err = _cli(monkeypatch, capsys, tmp_path, "--cfg", "job", "a=1", "-m", "b=2")
    assert code == 2
    assert err.startswith("error: bad-override: b=2: give every override together")


def test_dry_run_joins_the_other_overrides():
    assert cli._dry_run_argument(["+experiment=q", "--cfg", "job", "--dry-run"]) == [
        "+experiment=q",
        "dry_run=true",
        "--cfg",
        "job",
    ]
    assert cli._dry_run_argument(["--dry-run", "-m"]) == ["-m", "dry_run=true"]
    assert cli._dry_run_argument(["a=1"]) == ["a=1"]
