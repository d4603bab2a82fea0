"""Every command of the documentation runs in a test, or says why it cannot: no silent gaps.

The commands are the lines of every ```` ```sh ```` block in ``docs/`` and of README's
command blocks (indented ones opening with ``python``); a backslash continues a line,
``# ...`` is a comment. Each line is one of:

- **run by another test**: the blocks of ``guides/own-parts.md``
  (``tests/test_readme_parts.py``) and the suite how-tos of ``guides/own-data.md``
  (``tests/suites/test_readme_suite_howtos.py``), which read the page itself; the guides
  ``guides/code-benchmark.md`` and the BFCL category guide of ``guides/bfcl.md``, whose
  tests run their own copy of the text. This file checks that the block is in the text
  that test runs;
- **not runnable here**, listed in ``NOT_RUN`` with the reason (an API key, a package
  install, an hour of a local model, a server that runs until Ctrl-C);
- **run here**, exactly as written, from a fresh directory per page that holds a copy of
  one quickstart tree: ``<timestamp>`` is the newest tree of ``experiments/quickstart/``
  at that moment (the one the page's previous command wrote, else the copy). ``python -m
  xaytune ...`` runs in a subprocess (Hydra); ``python -m xaytune.<command>`` and
  ``xaytune <command>`` run in process through :func:`xaytune.console.main`. Each must exit
  0 without a traceback; ``EXPECT`` adds what a line's output must say. The evidence
  cache is on, in the page's directory, as a user's would be.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from xaytune.console import main as console_main

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
QUICKSTART = "python -m xaytune +experiment=quickstart"

# Pages whose blocks another test runs: page -> (test file, the functions returning the
# text whose blocks it runs).
ELSEWHERE = {
    "guides/own-parts.md": ("tests/test_readme_parts.py", ("_section",)),
    "guides/own-data.md": (
        "tests/suites/test_readme_suite_howtos.py",
        ("_howtos", "_environment_howto"),
    ),
    # These two tests run their own copy of the guide: the page's blocks must be in it.
    "guides/code-benchmark.md": ("tests/evaluation/test_execution_guide.py", ("GUIDE",)),
    "guides/bfcl.md": ("tests/bfcl/test_bfcl_guide.py", ("_guide",)),
}

_INSTALL = (
    "creates a virtualenv and installs from the package index (.ci/run runs the test command)"
)
_KEY = "needs an API key and the network"
_SERVER = "needs a model server at that address (tests/app/test_app_endpoints.py runs one)"
NOT_RUN = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install -q . && "
    "python -m xaytune +experiment=quickstart": _INSTALL,
    'python3 -m venv .venv && . .venv/bin/activate && pip install -q -e ".[dev]" && '
    "bash scripts/setup-local-model.sh && bash scripts/setup-browser.sh && "
    "bash scripts/setup-bfcl.sh && python -m pytest -n logical --dist loadscope": _INSTALL,
    "python -m pytest -n logical --dist loadscope": "the whole test suite (this test is in it)",
    "python -m pytest -m fast -n 4": "the fast tier of the test suite (this test is in it)",
    "bash scripts/setup-bfcl.sh": "installs packages (the test command runs it)",
    "bash scripts/setup-local-model.sh": "installs packages (the test command runs it)",
    'pip install ".[joblib]" && python -m xaytune -m +experiment=quickstart seed=101,102,103 '
    "hydra/launcher=joblib": "installs a package; tests/app/test_app_multirun.py sweeps with "
    "the joblib launcher",
    "python -m xaytune +experiment=bfcl_multi_turn": "about an hour on the local model "
    "(tests/bfcl/ run the BFCL suites and their checkers)",
    "python -m xaytune +experiment=smollm2_local": "about two minutes on the local model "
    "(tests/models/test_realmodel.py runs a 2-task CLI run of it)",
    "xaytune view experiments/quickstart/<timestamp> --serve": "serves until Ctrl-C "
    "(tests/report/test_viewer_live.py serves a run being written and reads it)",
    "export OPENAI_API_KEY=...": _KEY,
    "python -m xaytune model=openai_compatible model.base_url=https://api.openai.com/v1 "
    "model.name=gpt-4o-mini model.api_key_env=OPENAI_API_KEY": _KEY,
    "export ANTHROPIC_API_KEY=...": _KEY,
    "python -m xaytune model=anthropic model.name=claude-sonnet-4-5": _KEY,
    "export MY_KEY=...": _KEY,
    "python -m xaytune +experiment=openai_endpoint model.base_url=http://127.0.0.1:8080/v1 "
    "model.name=my-model model.api_key_env=MY_KEY": _SERVER,
    "python -m xaytune model=openai_compatible model.base_url=http://127.0.0.1:11434/v1 "
    "model.name=qwen2.5:7b": _SERVER,
    "python -m xaytune +experiment=openai_endpoint model.base_url=http://127.0.0.1:8080/v1 "
    "model.name=my-model model.preflight=false": _SERVER,
}

# Files a line reads that the page names but does not show in full.
SETUP = {
    "python -m xaytune +experiment=quickstart '~model' "
    "'+model={_target_: scripted, path: script.json}'": {"script.json": '["ANSWER: 42"]'},
}

# Commands run in process (no Hydra, no global state): the rest run in a subprocess.
IN_PROCESS = {"xaytune.verify", "xaytune.view", "xaytune.share", "xaytune.sign", "xaytune.suites"}

# What a line's output must say (beyond exit 0).
EXPECT = {
    "python -m xaytune +experiment=quickstart candidate@candidates.b=terse": "reused",
    "python -m xaytune +experiment=quickstart_cost --dry-run": "$",
    "python -m xaytune.verify experiments/quickstart/<timestamp> --trust keys/xaytune.pub": (
        "signed"
    ),
    "xaytune --help": "commands:",
}


@dataclass(frozen=True)
class Line:
    """One command of a page's ```sh block, as written (comment dropped)."""

    page: str
    block: str
    text: str

    @property
    def args(self) -> list[str]:
        return shlex.split(self.text)


def _strip_comment(line: str) -> str:
    """The line without its ``# ...`` comment (a ``#`` inside quotes is kept)."""
    for match in re.finditer(r"(?:^|\s)#", line):
        head = line[: match.start()]
        try:
            shlex.split(head)
        except ValueError:  # an open quote: the `#` is quoted
            continue
        return head.rstrip()
    return line


def _readme_blocks() -> list[str]:
    """README's command blocks: indented (four spaces) after a blank line, opening with
    ``python`` (its other indented blocks are printed output)."""
    blocks, current = [], []
    for line in [*(REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("    ") and (current or not line[4:].startswith(" ")):
            current.append(line[4:])
            continue
        if current and current[0].startswith("python"):
            blocks.append("\n".join(current) + "\n")
        current = []
    return blocks


def _commands(page: str, block: str) -> list[Line]:
    lines = []
    for raw in block.replace("\\\n", " ").splitlines():
        text = " ".join(_strip_comment(raw.strip()).split())
        if text:
            lines.append(Line(page, block, text))
    return lines


def doc_lines() -> list[Line]:
    """Every command line of every ```sh block in docs/, in page order, then README's."""
    lines: list[Line] = []
    for path in sorted(DOCS.rglob("*.md")):
        page = str(path.relative_to(DOCS))
        for match in _FENCE.finditer(path.read_text(encoding="utf-8")):
            if match[1].strip().split(" ")[0] == "sh":
                lines.extend(_commands(page, match[2]))
    for block in _readme_blocks():
        lines.extend(_commands("README.md", block))
    return lines


@functools.cache
def _sections_run_by(test_file: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The texts whose blocks ``test_file`` runs: its functions that return them, or its
    constants naming the file it runs."""
    name = f"_docs_{Path(test_file).stem}"
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / test_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    texts = []
    for attribute in (getattr(module, name) for name in names):
        texts.append(
            attribute.read_text(encoding="utf-8") if isinstance(attribute, Path) else attribute()
        )
    return tuple(texts)


def _run_elsewhere(line: Line) -> bool:
    if line.page not in ELSEWHERE:
        return False
    return any(line.block in text for text in _sections_run_by(*ELSEWHERE[line.page]))


def lines_run_here() -> list[Line]:
    return [line for line in doc_lines() if line.text not in NOT_RUN and not _run_elsewhere(line)]


def test_every_doc_command_is_run_or_says_why_not():
    lines = doc_lines()
    assert len(lines) > 30  # the scan reads the real pages
    texts = {line.text for line in lines}
    stale = sorted(set(NOT_RUN) - texts)
    assert not stale, f"NOT_RUN names lines no page has: {stale}"
    for page, (test_file, _) in ELSEWHERE.items():
        # The mapping is live: the other test runs some block of the page, and every line
        # of the page it does not run is run here or in NOT_RUN.
        assert any(_run_elsewhere(line) for line in lines if line.page == page), (page, test_file)
    for line in lines_run_here():
        assert line.args[0] in ("python", "xaytune"), (
            f"{line.page}: {line.text!r}: no test runs it; make it runnable here or list it "
            "in NOT_RUN with the reason"
        )


def test_the_reasons_name_what_is_missing():
    # A reason is a sentence a reader can act on, never an empty excuse.
    assert all(len(reason.split()) >= 4 for reason in NOT_RUN.values())


@pytest.fixture(scope="module")
def quickstart_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One quickstart tree, run as the docs run it; each page gets a copy."""
    cwd = tmp_path_factory.mktemp("docs-quickstart")
    done = _subprocess(shlex.split(QUICKSTART), cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    (tree,) = (cwd / "experiments" / "quickstart").iterdir()
    return tree


def _env(cwd: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT)
    env.pop("HYDRA_FULL_ERROR", None)
    env["COLUMNS"] = "160"
    # The cache as a user has it (read-write), in the page's directory.
    env["XAYTUNE_CACHE_MODE"] = "read-write"
    env["XDG_CACHE_HOME"] = str(cwd / ".cache")
    return env


def _subprocess(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args[1:]],
        cwd=cwd,
        env=_env(cwd),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _in_process(args: list[str], cwd: Path) -> tuple[int, str]:
    """``python -m xaytune.<command> ...`` or ``xaytune <command> ...`` through the
    console's dispatcher, in ``cwd``; (exit code, stdout + stderr)."""
    argv = args[1:] if args[0] == "xaytune" else [args[2].split(".", 1)[1], *args[3:]]
    out = io.StringIO()
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                code = console_main(argv)
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else 1
    finally:
        os.chdir(previous)
    return code, out.getvalue()


def _newest_tree(cwd: Path) -> str:
    # A tree has a manifest (a viewer's site beside it, `<tree>.view`, has none).
    root = cwd / "experiments" / "quickstart"
    trees = sorted(p.name for p in root.iterdir() if (p / "manifest.json").is_file())
    return trees[-1]


def _pages_run_here() -> list[str]:
    return sorted({line.page for line in lines_run_here()})


@pytest.mark.parametrize("page", _pages_run_here())
def test_the_commands_of_the_page_run_as_written(page: str, quickstart_tree: Path, tmp_path):
    # README's tour starts from its own first command; a page starts from the copy.
    target = tmp_path / "experiments" / "quickstart" / quickstart_tree.name
    shutil.copytree(quickstart_tree, target)
    for line in (line for line in lines_run_here() if line.page == page):
        for name, body in SETUP.get(line.text, {}).items():
            (tmp_path / name).write_text(body, encoding="utf-8")
        args = [arg.replace("<timestamp>", _newest_tree(tmp_path)) for arg in line.args]
        if args[0] == "python" and args[2] not in IN_PROCESS:
            done = _subprocess(args, tmp_path)
            code, output = done.returncode, done.stdout + done.stderr
        else:
            code, output = _in_process(args, tmp_path)
        assert code == 0 and "Traceback" not in output, f"{page}: {line.text}\n{output}"
        assert EXPECT.get(line.text, "") in output, f"{page}: {line.text}\n{output}"
