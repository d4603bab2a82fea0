"""The documentation site builds strictly, offline, and documents everything it must.

- ``mkdocs build --strict`` succeeds (a broken link, a missing page in the nav or an
  unknown anchor is an error) into a temporary directory, with no plugin that fetches
  from the network at build time;
- every key of the config schema (:class:`xaytune.experiment.config.ExperimentConfig`, walked
  field by field) is on ``docs/reference/config.md``;
- every reason word the code raises (read from the source: the first argument of an
  ``...Error(...)`` or ``refuse(...)`` call, a ``reason=`` keyword, or the ``word: ``
  prefix of a problem line) is on ``docs/reference/reason-words.md``;
- every option each command's ``--help`` prints is on ``docs/reference/commands.md``;
- the screenshots in ``docs/`` are shown on some page; README stays short, opens with the
  two commands, and its test command is the one ``.ci/run`` runs.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import types
from pathlib import Path
from typing import Annotated, Union, get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel

from xaytune.console import COMMANDS, main
from xaytune.experiment.config import ExperimentConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"


def _mkdocs():
    if os.environ.get("CI") == "true":  # the dev extra installs it: never a silent skip
        import mkdocs

        return mkdocs
    return pytest.importorskip("mkdocs")


def test_the_site_builds_strictly_offline(tmp_path: Path):
    _mkdocs()
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    config = load_config(
        config_file=str(REPO_ROOT / "mkdocs.yml"), site_dir=str(tmp_path / "site"), strict=True
    )
    build(config)  # raises mkdocs.exceptions.Abort on any warning under strict
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "reason-words" / "index.html").is_file()
    # Offline: search is built locally; nothing that fetches at build time (social cards,
    # the privacy plugin's downloads) is enabled.
    plugins = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["plugins"]
    assert plugins == ["search"]


def _nav_pages(nav: list) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        for value in entry.values():
            pages.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return pages


def test_every_page_is_in_the_nav():
    nav = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(_nav_pages(nav)) == pages


# --- config keys -------------------------------------------------------------------------

# Keys whose value is documented as a whole: `models` holds model configs as `model` does,
# a judge's `judge_model` too; a loop or tool reference and a part's code identity are
# written as a name or `{_target_: ...}`, never field by field.
_WHOLE = {"models", "evaluators.<label>.judge_model"}
_OPAQUE = {"PartRef", "CodeIdentity"}


def _models_in(annotation) -> list[type[BaseModel]]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _models_in(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [model for arg in get_args(annotation) for model in _models_in(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [] if annotation.__name__ in _OPAQUE else [annotation]
    return []


def config_keys(model: type[BaseModel] = ExperimentConfig, prefix: str = "") -> list[str]:
    """Every key of the schema, dotted: ``<label>`` for a mapping's keys, ``[]`` for a
    list's items, the union of the members' keys for a union (the model kinds)."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        keys.append(key)
        if key in _WHOLE:
            continue
        annotation = field.annotation
        args = get_args(annotation)
        if get_origin(annotation) in (Union, types.UnionType) and type(None) in args:
            rest = [arg for arg in args if arg is not type(None)]
            if len(rest) == 1:
                annotation, args = rest[0], get_args(rest[0])
        origin = get_origin(annotation)
        if origin is dict:
            inner, sub = args[1], key + ".<label>."
        elif origin is tuple and args and args[-1] is Ellipsis:
            inner, sub = args[0], key + "[]."
        else:
            inner, sub = annotation, key + "."
        for member in _models_in(inner):
            keys.extend(config_keys(member, sub))
    return list(dict.fromkeys(keys))


def test_config_keys_cover_the_schema():
    keys = config_keys()
    # Spot checks of the walk itself (by hand from experiment/config.py, harness/spec.py).
    for key in (
        "seeds",
        "cache.max_gb",
        "model.base_url",
        "model.anthropic_version",
        "model._target_",
        "model.prices.tiers[].above_prompt_tokens",
        "comparison.objectives[].min_effect",
        "candidates.<label>.answer.kind",
        "candidates.<label>.attempt_timeout_s",
        "evaluators.<label>.grant_reference_egress",
    ):
        assert key in keys, key
    assert "models.<label>.base_url" not in keys and "candidates.<label>.loop.ref" not in keys


def test_every_config_key_is_documented():
    page = (DOCS / "reference" / "config.md").read_text(encoding="utf-8")
    missing = [key for key in config_keys() if f"`{key}`" not in page]
    assert not missing, f"docs/reference/config.md does not document {missing}"


# --- reason words ------------------------------------------------------------------------

_WORD = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_PROBLEM = re.compile(r"(?:error: )?([a-z][a-z0-9]*(?:-[a-z0-9]+)+): ")


def _first_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        return head.value if isinstance(head, ast.Constant) else None
    return None


def raised_reason_words(root: Path = REPO_ROOT / "xaytune") -> dict[str, str]:
    """Reason word -> one place it is raised: the first argument of a call to a name
    ending in ``Error`` or to ``refuse``; a ``reason="..."`` keyword; a string (not a
    docstring) that opens with ``<hyphenated-word>: `` (a problem line of verify, a
    printed ``error: ...``)."""
    words: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(REPO_ROOT))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = getattr(func, "id", None) or getattr(func, "attr", "")
                first = node.args[0] if node.args else None
                if (
                    (name.endswith("Error") or name.lstrip("_") == "refuse")
                    and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                    and _WORD.fullmatch(first.value)
                ):
                    words.setdefault(first.value, f"{where}:{node.lineno}")
                for keyword in node.keywords:
                    value = keyword.value
                    if (
                        keyword.arg == "reason"
                        and isinstance(value, ast.Constant)
                        and isinstance(value.value, str)
                        and _WORD.fullmatch(value.value)
                    ):
                        words.setdefault(value.value, f"{where}:{node.lineno}")
            elif isinstance(node, ast.Constant | ast.JoinedStr) and id(node) not in docstrings:
                text = _first_text(node)
                match = _PROBLEM.match(text) if text else None
                if match:
                    words.setdefault(match[1], f"{where}:{node.lineno}")
    return words


def test_the_reason_word_scan_finds_what_the_code_raises():
    words = raised_reason_words()
    # One of each kind, found by hand: SuiteError("sample-too-large", ...) in
    # core/domain/benchmark.py, refuse("chain-broken", ...) in the evidence rebuild,
    # reason="suite-differs" in the comparability conditions, "stray-file: ..." in verify,
    # f"error: model-errors: ..." in the run's model-error bound.
    for word in ("sample-too-large", "chain-broken", "suite-differs", "stray-file", "model-errors"):
        assert word in words, word
    assert len(words) > 150


def test_every_reason_word_is_documented():
    page = (DOCS / "reference" / "reason-words.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z][a-z0-9-]*)`", page))
    missing = {
        word: where for word, where in raised_reason_words().items() if word not in documented
    }
    assert not missing, f"docs/reference/reason-words.md lacks {missing}"


# --- commands ----------------------------------------------------------------------------


def _help(command: str, *rest: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([command, *rest, "--help"])
    # argparse wraps a long option inside a help line ("--answer-\n   field"): join it.
    return re.sub(r"-\n\s+", "-", out.getvalue())


def _section(page: str, heading: str) -> str:
    start = page.index(heading)
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else None]


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - {"run"}))
def test_every_option_of_each_command_is_documented(command: str):
    page = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    section = _section(page, f"## `xaytune {command}`")
    helps = [_help(command)]
    if command == "suites":
        helps += [_help(command, sub) for sub in re.findall(r"\{([^}]+)\}", helps[0])[0].split(",")]
    options = {option for text in helps for option in re.findall(r"(?<![\w-])--[a-z][a-z-]+", text)}
    options -= {"--help"}
    assert all(text.startswith("usage:") for text in helps), helps  # real help texts
    missing = sorted(
        option for option in options if not re.search(rf"(?<![\w-]){option}(?![\w-])", section)
    )
    assert not missing, f"docs/reference/commands.md, xaytune {command}: {missing}"


def test_every_command_has_a_section():
    page = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    for command in COMMANDS:
        assert f"## `xaytune {command}`" in page, command


# --- screenshots and README ----------------------------------------------------------------


def test_every_screenshot_is_shown():
    shown = " ".join(p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md"))
    for png in sorted(DOCS.glob("*.png")):
        assert f"({png.name})" in shown or f"(../{png.name})" in shown, png.name


def test_readme_is_short_and_opens_with_the_two_commands():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    commands = [line.strip() for line in readme.splitlines()[:12] if line.startswith("    ")]
    quickstart = (
        "python3 -m venv .venv && . .venv/bin/activate && pip install -q . && "
        "python -m xaytune +experiment=quickstart"
    )
    assert commands[0] == quickstart
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert commands[1] == ci  # `.ci/run` runs the README's test command verbatim
