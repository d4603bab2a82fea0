"""The ``xaytune`` console script: one command, every entry point as a subcommand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from xaytune.console import COMMANDS, main
from xaytune.suites import builtin_suite_path

# The entry points docs/reference/commands.md documents (each also a ``python -m`` module).
EXPECTED = {"run", "verify", "view", "compare", "share", "sign", "suites"}


@pytest.mark.parametrize("argv", [[], ["-h"], ["--help"], ["help"]])
def test_bare_command_lists_every_subcommand_on_stdout(argv, capsys):
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == ""
    listed = {
        line.split()[0] for line in out.split("commands:\n", 1)[1].splitlines() if line[:2] == "  "
    }
    assert listed == EXPECTED == set(COMMANDS)


def test_unknown_subcommand_is_one_line_naming_it(capsys):
    assert main(["experiment=quickstart"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: unknown-command: 'experiment=quickstart'")
    assert "xaytune run" in err and err.count("\n") == 1


def test_subcommand_runs_its_module_with_the_rest_of_the_arguments(capsys):
    # `xaytune suites verify DIR` is `python -m xaytune.suites verify DIR`, in process.
    path = builtin_suite_path("arith-tools")
    assert main(["suites", "verify", str(path)]) == 0
    assert "arith-tools" in capsys.readouterr().out


def test_every_subcommand_names_an_importable_entry():
    import importlib

    for name, command in COMMANDS.items():
        module = importlib.import_module(command.module)
        assert callable(module.run if name == "run" else module.main), name


def test_installed_script_runs_hydra_help():
    # The console script pip installs beside this interpreter ([project.scripts]).
    script = Path(sys.executable).parent / "xaytune"
    assert script.exists(), f"{script}: not installed (pip install -e .)"
    listed = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "verify" in listed.stdout
    hydra = subprocess.run([script, "run", "--help"], capture_output=True, text=True, timeout=60)
    assert hydra.returncode == 0, hydra.stderr
    assert "+experiment=quickstart" in hydra.stdout
