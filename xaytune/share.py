"""``python -m xaytune.share <run dir> --out <dir>``: write what may be shared of a
finished run under its disclosure, scanned for held-out references
(:mod:`xaytune.release.share`). ``--out`` must not exist or be an empty directory, outside
the run; a leak or any refusal leaves nothing there.

``python -m xaytune.share --check <bundle> [--trust <public key PEM>]`` checks a bundle
on its own: its index, its manifests' digests, its evidence and evaluations' subjects;
with ``--trust``, its signature too (a bundle signed with ``python -m xaytune.sign``).

One line per refusal or problem; exit 0 when written (or every check holds), 1 when a
check fails, 2 on a refusal or a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]

USAGE = (
    "usage: python -m xaytune.share <run dir> --out <dir>\n"
    "       python -m xaytune.share --check <bundle dir> [--trust <ed25519 public key PEM>]"
)


def _wants_help(args: list[str]) -> bool:
    """``-h``/``--help`` anywhere: the usage and this module's description go to
    stdout, exit 0 (asking for help is not a usage error)."""
    return any(arg in ("-h", "--help") for arg in args)


def _help() -> str:
    return f"{USAGE}\n\n{__doc__.strip()}"


def _options(args: list[str]) -> tuple[list[str], dict[str, str]] | None:
    """Positional arguments and ``--name value`` options; None when malformed."""
    positional, options, rest = [], {}, list(args)
    while rest:
        arg = rest.pop(0)
        if arg in ("--out", "--check", "--trust") and rest and arg not in options:
            options[arg] = rest.pop(0)
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
    return positional, options


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if _wants_help(args):
        print(_help())
        return 0
    from xaytune.core.errors import XaytuneError

    parsed = _options(args)
    if parsed is not None:
        positional, options = parsed
        try:
            if set(options) == {"--out"} and len(positional) == 1:
                return _share(Path(positional[0]), Path(options["--out"]))
            if "--check" in options and "--out" not in options and not positional:
                trust = options.get("--trust")
                return _check(Path(options["--check"]), None if trust is None else Path(trust))
        except XaytuneError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    print(USAGE, file=sys.stderr)
    return 2


def _share(run: Path, out: Path) -> int:
    from xaytune.release.share import share_run

    bundle = share_run(run, out)
    print(
        f"bundle written to {bundle.path}: {bundle.files} files, disclosure {bundle.disclosure}; "
        f"scanned for {bundle.references} references and {bundle.answers} answers: none found"
    )
    print(f"check it with: python -m xaytune.share --check {bundle.path}")
    return 0


def _check(bundle: Path, trust: Path | None) -> int:
    from xaytune.release.share import check_bundle
    from xaytune.release.signing import check_signature, load_public_key

    if not bundle.is_dir():
        print(f"error: not-a-bundle: {bundle}: not a directory", file=sys.stderr)
        return 2
    public_key = None if trust is None else load_public_key(trust)
    problems = check_bundle(bundle.absolute())
    if public_key is not None:
        problems += check_signature(bundle.absolute(), public_key)
    for problem in problems:
        print(problem)
    if problems:
        print(f"FAILED: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    signed = "" if public_key is None else "; every file is as signed by the trusted key"
    print(f"ok: the bundle {bundle} is whole{signed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
