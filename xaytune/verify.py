"""``python -m xaytune.verify DIR``: re-verify an output tree from its files alone.

One line per problem; exit 0 only when everything verifies. The command an auditor
runs on a tree someone sends them.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from xaytune.app.audit import audit_tree

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -m xaytune.verify <output dir>", file=sys.stderr)
        return 2
    root = Path(args[0])
    if not root.is_dir():
        print(_one_line(f"error: {root}: not a directory"), file=sys.stderr)
        return 2
    problems, counts, warnings = audit_tree(root)
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
    return 0


def _one_line(text: str) -> str:
    """``text`` with every unprintable character escaped (a file name may hold a
    newline): one problem, one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


if __name__ == "__main__":
    sys.exit(main())
