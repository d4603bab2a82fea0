"""``xaytune <command> ...``: one console script for every entry point.

Each subcommand is the ``python -m`` module of the same name, called with the rest of
the arguments; those forms stay. ``xaytune run ...`` takes exactly what
``python -m xaytune ...`` takes (Hydra overrides, ``-m``, ``--cfg``, ``--help``).
``xaytune``, ``xaytune -h`` and ``xaytune --help`` list the subcommands on stdout and
exit 0; an unknown subcommand is one line on stderr naming it, exit 2.

Every subcommand's module is imported only when it is called, so listing them costs
nothing.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["COMMANDS", "Command", "main"]


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: the module whose ``main`` runs it, and one line of help."""

    module: str
    summary: str


COMMANDS: dict[str, Command] = {
    "run": Command("xaytune.app.cli", "run an experiment (e.g. +experiment=quickstart)"),
    "verify": Command("xaytune.verify", "re-verify an output tree from its files alone"),
    "view": Command("xaytune.view", "look at a run task by task (--serve: live, as it runs)"),
    "compare": Command("xaytune.compare", "compare a finished run again under other settings"),
    "share": Command("xaytune.share", "copy the shareable part of a tree (no references)"),
    "sign": Command("xaytune.sign", "sign a tree (ed25519), or generate a key"),
    "suites": Command("xaytune.suites.__main__", "build, verify or list pinned suites"),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: xaytune <command> [arguments ...]",
        "",
        "Honest, local evaluation of LLM agent harnesses on pinned benchmarks.",
        "",
        "commands:",
        *(f"  {name.ljust(width)}  {command.summary}" for name, command in COMMANDS.items()),
        "",
        "`xaytune <command> --help` describes one; `python -m xaytune` is `xaytune run`,",
        "`python -m xaytune.<command>` the others.",
    ]
    return "\n".join(lines)


def _entry(command: Command) -> Callable[..., object]:
    module = importlib.import_module(command.module)
    return module.run if command.module == "xaytune.app.cli" else module.main


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv`` (default ``sys.argv[1:]``) to its subcommand; its exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    name, rest = args[0], args[1:]
    command = COMMANDS.get(name)
    if command is None:
        known = ", ".join(COMMANDS)
        hint = " (Hydra overrides go after `xaytune run`)" if "=" in name else ""
        print(f"error: unknown-command: {name!r}: one of {known}{hint}", file=sys.stderr)
        return 2
    entry = _entry(command)
    if name == "run":
        # Hydra reads sys.argv itself; the program name stays the script's.
        sys.argv = [sys.argv[0], *rest]
        entry()
        return 0
    code = entry(rest)
    return code if isinstance(code, int) else 0


def script() -> None:
    """The ``xaytune`` console script (``[project.scripts]``)."""
    sys.exit(main())
