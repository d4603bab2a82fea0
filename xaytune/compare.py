"""``python -m xaytune.compare <run dir> [comparison.KEY=VALUE ...]``: compare a
finished run again under other comparison settings (objectives, min_effect, k), from
its replicate records, into a new ``comparison-<timestamp>/`` of the tree.

One line per refusal (exit 2); the original comparison is never overwritten.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]

USAGE = (
    "usage: python -m xaytune.compare <run dir> [comparison.KEY=VALUE ...]\n"
    "  e.g. comparison.objectives.0.min_effect=0.2 comparison.k=3"
)


def _wants_help(args: list[str]) -> bool:
    """``-h``/``--help`` anywhere: the usage and this module's description go to
    stdout, exit 0 (asking for help is not a usage error)."""
    return any(arg in ("-h", "--help") for arg in args)


def _help() -> str:
    return f"{USAGE}\n\n{__doc__.strip()}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if _wants_help(args):
        print(_help())
        return 0
    from xaytune.app.overrides import comparison_overrides
    from xaytune.audit.recompare import recompare
    from xaytune.core.errors import XaytuneError
    from xaytune.experiment.reports import terminal_table

    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    tree = Path(args[0])
    if not tree.is_dir():
        print(f"error: not-a-run: {tree}: not a directory", file=sys.stderr)
        return 2
    try:
        # The command line's grammar is checked before the tree is read.
        directory, report = recompare(tree, comparison_overrides(args[1:]))
    except XaytuneError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import json

    from xaytune.experiment.attempt_errors import ERRORS_FILE

    # The errors at this comparison's bound: a challenger over it shows no verdict.
    errors = json.loads((directory / ERRORS_FILE).read_bytes())
    terminal_table(report.released(), errors=errors)
    print(f"comparison written to {directory} (recorded in {tree / 'manifest.json'})")
    print(f"report: {directory / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
