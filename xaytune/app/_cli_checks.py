"""Checks of the command line made before Hydra sees it, and the hints that say what
to type instead (issue 29): an output directory that cannot be made, an option Hydra
does not know, a config group given the wrong way. Each refusal is one line on stderr
and exit 2; the decisions are made from the parsed arguments and the config groups on
disk, not from Hydra's English text.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["check_arguments", "check_output_argument", "config_groups", "group_hint"]


def config_groups(argv: list[str]) -> set[str]:
    """The config groups (``model``, ``experiment``, ...): the packaged conf/'s
    directories and those of a ``--config-dir`` the command gives."""
    from hydra._internal.utils import get_args_parser

    import xaytune.conf

    roots = [Path(xaytune.conf.__file__).parent]
    config_dir = get_args_parser().parse_known_args(argv)[0].config_dir
    if config_dir:
        roots.append(Path(config_dir))
    return {p.name for root in roots if root.is_dir() for p in root.iterdir() if p.is_dir()}


def group_hint(group: str, argv: list[str]) -> str:
    """What to type instead of ``group=value`` when Hydra cannot apply it: a group no
    default selects (``experiment``) is added with ``+``; a mapping given for a group
    (``model={_target_: ...}``) replaces the selected option only after ``~group``."""
    values = [a.split("=", 1)[1] for a in argv if a.split("=", 1)[0] == group and "=" in a]
    value = values[-1] if values else "<option>"
    if value.lstrip().startswith("{"):
        return (
            f"{group}={value}: {group} is a config group, so a mapping cannot replace its "
            f"option; drop the option first: ~{group} '+{group}={value}' (or write it to "
            f"<config dir>/{group}/<name>.yaml and give --config-dir <config dir> {group}=<name>)"
        )
    packaged = _packaged_defaults(group)
    if packaged:
        choices = " or ".join(f"{entry}={value}" for entry in packaged)
        return f"{group}={value}: the group {group} is chosen per place; give {choices}"
    return f"{group}={value}: no default selects the group {group}; add it with +{group}={value}"


def _packaged_defaults(group: str) -> list[str]:
    """The root config's defaults that choose ``group`` at a place of its own
    (``candidate@candidates.a``): overridden by that name, not by the group's."""
    import yaml

    import xaytune.conf

    root = Path(xaytune.conf.__file__).parent / "config.yaml"
    defaults = yaml.safe_load(root.read_text()).get("defaults", [])
    names = [key for entry in defaults if isinstance(entry, dict) for key in entry]
    return [name for name in names if name.startswith(f"{group}@")]


def _probe_directory(path: Path) -> OSError | None:
    """Whether ``path`` can be made: its missing parts are created, then removed again
    (nothing is left behind); the error that stops it, or None."""
    made: list[Path] = []
    try:
        for part in reversed([path, *path.parents]):
            if not part.exists():
                part.mkdir()
                made.append(part)
            elif not part.is_dir():
                raise NotADirectoryError(20, "Not a directory", str(part))
        return None
    except OSError as error:
        return error
    finally:
        for part in reversed(made):
            part.rmdir()


def check_output_argument(argv: list[str]) -> None:
    """Refuse an explicit ``hydra.run.dir``/``hydra.sweep.dir`` that cannot be made (a
    pseudo file system such as /proc, a file where a directory is expected, no
    permission) with one line naming it, before Hydra fails on it with a traceback."""
    for key in ("hydra.run.dir=", "hydra.sweep.dir="):
        values = [arg.removeprefix(key) for arg in argv if arg.startswith(key)]
        if not values or not values[-1]:
            continue
        error = _probe_directory(Path(values[-1]).absolute())
        if error is not None:
            failed = error.filename or values[-1]
            print(
                f"error: bad-output: {key[:-1]}={values[-1]}: {failed}: "
                f"{error.strerror or type(error).__name__}",
                file=sys.stderr,
            )
            sys.exit(2)


# Options users bring from other tools, and the override that does it here.
_FLAG_HINTS = {"limit": "sampling.count", "model": "model", "seed": "seed", "seeds": "seeds"}


def check_arguments(argv: list[str]) -> argparse.Namespace:
    """``argv`` as Hydra's own parser reads it (what ``@hydra.main`` will see); what it
    refuses is one ``bad-override`` line (exit 2) instead of its usage text: an option
    Hydra does not know (``--limit 5``: named, with the override that does it), an
    override placed after an option's value with options between it and the other
    overrides, a value an option does not take (``--cfg jobs``)."""
    from hydra._internal.utils import get_args_parser  # Hydra's own parser, not a copy

    parser = get_args_parser()
    parser.error = _refuse  # type: ignore[method-assign]  # argparse refuses through error()
    args, unknown = parser.parse_known_args(argv)
    for i, arg in enumerate(unknown):
        if not arg.startswith("-"):
            continue
        name, equals, value = arg.lstrip("-").partition("=")
        if not equals:
            following = unknown[i + 1] if i + 1 < len(unknown) else ""
            value = following if following and not following.startswith("-") else "<value>"
        key = _FLAG_HINTS.get(name.replace("-", "_"))
        hint = (
            f"use the override {key}={value}"
            if key is not None
            else "settings are Hydra overrides (key=value); `python -m xaytune --help` lists them"
        )
        _refuse(f"unknown option {arg}: {hint}")
    if unknown:  # overrides argparse could not take: an option stands among them
        _refuse(
            f"{' '.join(unknown)}: give every override together, before or after the "
            "options (python -m xaytune [options] key=value ...)"
        )
    return args


def _refuse(message: str) -> NoReturn:
    print(f"error: bad-override: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(2)
