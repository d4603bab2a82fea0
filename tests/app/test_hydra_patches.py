"""The Hydra patches are applied only where they pay, and only to the Hydra code they
were written for (issue 28, item 5)."""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
from pathlib import Path

import pytest
from hydra._internal.config_repository import CachingConfigRepository
from hydra._internal.hydra import Hydra

from xaytune.app import _hydra_repository, cli
from xaytune.app._cli_checks import check_arguments
from xaytune.app._hydra_repository import (
    PATCHED_SOURCES,
    HydraMismatchError,
    compose_once,
    share_config_store,
)

_INIT = "hydra._internal.config_repository.CachingConfigRepository.__init__"
_GET_MODE = "hydra._internal.hydra.Hydra.get_mode"


@pytest.fixture
def unpatched(monkeypatch):
    """Hydra's own functions (an earlier test in this process may have patched them),
    put back as they were after the test."""
    init, get_mode = (
        getattr(function, "_xaytune_original", function)
        for function in (CachingConfigRepository.__init__, Hydra.get_mode)
    )
    monkeypatch.setattr(CachingConfigRepository, "__init__", init)
    monkeypatch.setattr(Hydra, "get_mode", get_mode)
    return init, get_mode


def _source_from_file(module, qualname: str) -> str:
    """A method's lines read from its module's file with ast (not with inspect)."""
    class_name, method = qualname.split(".")
    text = Path(module.__file__).read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            (function,) = [f for f in node.body if getattr(f, "name", None) == method]
            lines = text.splitlines(keepends=True)
            return "".join(lines[function.lineno - 1 : function.end_lineno])
    raise AssertionError(qualname)


def test_the_recorded_digests_are_those_of_the_installed_hydra(unpatched):
    import hydra._internal.config_repository as repository
    import hydra._internal.hydra as hydra_module

    for name, module, qualname in (
        (_INIT, repository, "CachingConfigRepository.__init__"),
        (_GET_MODE, hydra_module, "Hydra.get_mode"),
    ):
        digest = hashlib.sha256(_source_from_file(module, qualname).encode()).hexdigest()
        assert PATCHED_SOURCES[name] == digest, name


@pytest.mark.parametrize(
    ("name", "patch", "owner", "attribute"),
    [
        (_INIT, share_config_store, CachingConfigRepository, "__init__"),
        (_GET_MODE, compose_once, Hydra, "get_mode"),
    ],
    ids=["share_config_store", "compose_once"],
)
def test_another_hydra_is_refused_and_left_unpatched(
    unpatched, monkeypatch, name, patch, owner, attribute
):
    original = getattr(owner, attribute)
    # Another Hydra: the function's source is not the one recorded.
    real_getsource = inspect.getsource

    def changed(function):
        text = real_getsource(function)
        return text + "        pass  # changed upstream\n" if function is original else text

    monkeypatch.setattr(_hydra_repository.inspect, "getsource", changed)
    with pytest.raises(HydraMismatchError) as refused:
        patch()
    assert refused.value.reason == "hydra-unsupported"
    assert name in str(refused.value) and "\n" not in str(refused.value)
    assert getattr(owner, attribute) is original  # nothing was patched


def test_the_recorded_source_is_patched_once(unpatched):
    init, get_mode = unpatched
    share_config_store()
    compose_once()
    patched = (CachingConfigRepository.__init__, Hydra.get_mode)
    assert patched[0] is not init and patched[1] is not get_mode
    share_config_store()  # idempotent: the patched functions are not checked again
    compose_once()
    assert (CachingConfigRepository.__init__, Hydra.get_mode) == patched


@pytest.mark.parametrize(
    ("argv", "shares_store", "composes_once"),
    [
        (["--help"], True, False),
        (["--hydra-help"], True, False),
        (["+experiment=quickstart"], False, True),
        (["-m", "+experiment=quickstart", "seed=1,2"], False, True),
        (["+experiment=quickstart", "--cfg", "job"], False, False),
        (["--info", "searchpath"], False, False),
    ],
)
def test_each_command_gets_the_patches_it_is_faster_with(
    unpatched, argv, shares_store, composes_once
):
    cli._apply_patches(check_arguments(argv))
    assert getattr(CachingConfigRepository.__init__, "_xaytune_shares_store", False) is (
        shares_store
    )
    assert getattr(Hydra.get_mode, "_xaytune_composes_once", False) is composes_once


def test_the_cli_refuses_another_hydra_in_one_line(unpatched, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(PATCHED_SOURCES, _INIT, "0" * 64)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["xaytune", "--help"])
    with pytest.raises(SystemExit) as stop:
        cli.run()
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: hydra-unsupported: {_INIT} of hydra-core ")
    assert "expected 0000000000000000" in line
