"""Fuzzing what the auditor reads: ``read_manifest`` on fuzzed files, and
``python -m xaytune.verify`` (in process) on a copy of a real quickstart tree whose
manifest was fuzzed. Always a verdict in lines, never an exception; nothing written."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from _fuzz_support import (
    FUZZ,
    FUZZ_TIMEOUT,
    JSON_TEXT,
    JSON_VALUES,
    LONG,
    bounded_memory,
    json_paths,
    one_line,
    snapshot,
    to_bytes,
    working_directory,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

from xaytune.core.errors import XaytuneError
from xaytune.experiment.tree.manifest_view import ManifestView, read_manifest

pytestmark = FUZZ_TIMEOUT

_HOLE = "\x01fuzz\x01"
DEEP = "[" * 100_000 + "]" * 100_000


def _with(manifest: dict, path: tuple, replacement: Any) -> dict:
    copy = json.loads(json.dumps(manifest))
    if not path:
        return replacement
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    if replacement is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return copy


_DELETE = object()


@st.composite
def fuzzed_manifests(draw: st.DrawFn, manifest: dict) -> bytes:
    """The real manifest with one value replaced (by a value or raw JSON text) or
    deleted, or fuzzed text whole."""
    kind = draw(st.sampled_from(["value", "text", "delete", "whole"]))
    if kind == "whole":
        return to_bytes(draw(JSON_TEXT))
    path = draw(st.sampled_from(json_paths(manifest)))
    if kind == "delete" and path:
        return json.dumps(_with(manifest, path, _DELETE)).encode()
    if kind == "value":
        return to_bytes(json.dumps(_with(manifest, path, draw(JSON_VALUES)), ensure_ascii=False))
    text = json.dumps(_with(manifest, path, _HOLE))
    return to_bytes(text.replace(json.dumps(_HOLE), draw(JSON_TEXT), 1))


def _manifest(tree: Path) -> dict:
    return json.loads((tree / "manifest.json").read_bytes())


@FUZZ
@given(data=st.data())
def test_read_manifest_reads_a_view_or_refuses_in_one_line(quickstart_tree: Path, data) -> None:
    raw = data.draw(fuzzed_manifests(_manifest(quickstart_tree)))
    with tempfile.TemporaryDirectory() as temp, bounded_memory():
        path = Path(temp) / "manifest.json"
        path.write_bytes(raw)
        try:
            view = read_manifest(path)
        except XaytuneError as error:
            assert error.reason in {"bad-manifest", "incomplete-run"}, error
            assert one_line(str(error))
        else:
            assert isinstance(view, ManifestView)


def test_read_manifest_refuses_deep_and_huge_manifests_before_parsing(tmp_path: Path) -> None:
    cases = {
        "deep": '{"schema": "xaytune.experiment-manifest/v1", "config": {"x": ' + DEEP + "}}",
        "digits": '{"complete": true, "config": {"x": ' + "7" * 5_000 + "}}",
    }
    for name, text in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        try:
            read_manifest(path)
        except XaytuneError as error:
            assert error.reason == "bad-manifest" and one_line(str(error))
            assert ("too-deep" if name == "deep" else "too-many-digits") in str(error)
        else:
            raise AssertionError(f"{name}: read")


def _verify(tree: Path) -> tuple[int, str, str]:
    from xaytune.verify import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(tree)])
    return code, out.getvalue(), err.getvalue()


@settings(FUZZ, max_examples=500 if LONG else 8)
@given(data=st.data())
@example(data=None)  # the manifest given a config nested 100,000 deep (see below)
def test_verify_answers_a_tree_with_a_fuzzed_manifest_in_lines(quickstart_tree: Path, data):
    manifest = _manifest(quickstart_tree)
    if data is None:
        text = json.dumps(_with(manifest, ("config", "seed"), _HOLE))
        raw = to_bytes(text.replace(json.dumps(_HOLE), DEEP, 1))
    else:
        raw = data.draw(fuzzed_manifests(manifest))
    with tempfile.TemporaryDirectory() as temp, bounded_memory():
        root = Path(temp)
        tree = root / quickstart_tree.name
        shutil.copytree(quickstart_tree, tree, symlinks=True)
        (tree / "manifest.json").write_bytes(raw)
        before, around = snapshot(tree), {path.name for path in root.iterdir()}
        with working_directory(root):
            code, out, err = _verify(tree)
        assert code in (0, 1, 2)
        for line in (out + err).splitlines():
            assert len(line) < 5_000, line[:200]
        assert snapshot(tree) == before  # verify writes nothing
        assert {path.name for path in root.iterdir()} == around
