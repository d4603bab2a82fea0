"""``python -m xaytune.verify DIR [--trust PUBLIC_KEY_PEM] [--suite SUITE_DIR ...]``:
re-verify an output tree from its files alone (and the suite, found by the path the
manifest records or among the ``--suite`` directories by its digest).

One line per problem; exit 0 only when everything verifies, 1 when something does not,
2 on a usage error or an unreadable key. The command an auditor runs on a tree someone
sends them. With ``--trust``, the tree's signature (``signature.dsse.json``, written by
``python -m xaytune.sign``) must verify with that ed25519 public key and cover exactly
the tree's files, byte for byte (:func:`xaytune.release.signing.check_signature`), in
addition to every other check. Without it a signature present is reported as signed,
not checked.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]

USAGE = (
    "usage: python -m xaytune.verify <output dir> [--trust <ed25519 public key PEM>] "
    "[--suite <suite dir> ...]"
)


def _wants_help(args: list[str]) -> bool:
    """``-h``/``--help`` anywhere: the usage and this module's description go to
    stdout, exit 0 (asking for help is not a usage error)."""
    return any(arg in ("-h", "--help") for arg in args)


def _help() -> str:
    return f"{USAGE}\n\n{__doc__.strip()}"


def _parse(args: list[str]) -> tuple[Path, Path | None, tuple[Path, ...]] | None:
    """(tree, trusted key, suite dirs) from the arguments, or None when they are not a
    command. ``--suite`` (repeatable) names a suite to use instead of the path a
    manifest records, matched by digest (a tree verified on another machine)."""
    positional: list[str] = []
    trust: str | None = None
    suites: list[Path] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            return None
        if arg == "--trust" and rest and trust is None:
            trust = rest.pop(0)
        elif arg.startswith("--trust=") and trust is None:
            trust = arg.removeprefix("--trust=")
        elif arg == "--suite" and rest:
            suites.append(Path(rest.pop(0)))
        elif arg.startswith("--suite=") and arg != "--suite=":
            suites.append(Path(arg.removeprefix("--suite=")))
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            positional.append(arg)
    if len(positional) != 1 or trust == "":
        return None
    return Path(positional[0]), None if trust is None else Path(trust), tuple(suites)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if _wants_help(args):
        print(_help())
        return 0
    parsed = _parse(args)
    if parsed is None:
        print(USAGE, file=sys.stderr)
        return 2
    root, trust, suites = parsed
    if not root.is_dir():
        print(_one_line(f"error: {root}: not a directory"), file=sys.stderr)
        return 2
    from xaytune.core.collector import command_collector

    with command_collector():  # off while the audit's modules are imported
        return _audit(root, trust, suites)


def _audit(root: Path, trust: Path | None, suites: tuple[Path, ...]) -> int:
    # Before any other import: the worker imports scipy while this process imports the
    # audit and verifies the evidence (xaytune.report.plot_worker, without matplotlib).
    # Not started (no core free) or unable to answer: the comparison is computed here.
    from xaytune.report.plot_worker import lent, start_plot_worker

    worker = start_plot_worker(draw=False)
    if worker is None:
        return _verify(root, trust, suites)
    with lent(worker):  # the comparison (sent ahead) and the pages made there
        return _verify(root, trust, suites)


def _verify(root: Path, trust: Path | None, suites: tuple[Path, ...]) -> int:
    from xaytune.audit.verify import audit_tree, refuse_busy_tree
    from xaytune.core.collector import resume_collector
    from xaytune.core.errors import XaytuneError
    from xaytune.release.signing import SIGNATURE_FILE, check_signature, load_public_key

    resume_collector()  # the audit's modules are imported: its work is collected as usual

    try:
        refuse_busy_tree(root, command="verify")
        public_key = None if trust is None else load_public_key(trust)
    except XaytuneError as error:
        print(_one_line(f"error: {error}"), file=sys.stderr)
        return 2
    problems, counts, warnings = audit_tree(root, suites=suites)
    signed = (root / SIGNATURE_FILE).exists()
    if public_key is not None:
        problems = problems + check_signature(root.absolute(), public_key)
    for warning in warnings:
        print(_one_line(f"warning: {warning}"))
    for problem in problems:
        print(_one_line(problem))
    if problems:
        print(f"FAILED: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(
        f"ok: {counts['stores']} evidence stores, {counts['subjects']} published subjects, "
        f"{counts['reports']} reports verified"
    )
    if public_key is not None:
        print(f"signature: every file is as signed by the trusted key ({trust})")
    elif signed:
        print(
            _one_line(
                f"signed, not checked: {root / SIGNATURE_FILE} "
                "(give --trust <public key PEM> to check it)"
            )
        )
    return 0


def _one_line(text: str) -> str:
    """``text`` with every unprintable character escaped (a file name may hold a
    newline): one problem, one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


if __name__ == "__main__":
    sys.exit(main())
