"""``python -m xaytune.suites``: build or verify a pinned suite.

    python -m xaytune.suites build tasks.jsonl --name my-suite --version 1 --out suites/my-suite
    python -m xaytune.suites verify suites/my-suite
    python -m xaytune.suites generate-arith-tools --out xaytune/suites/data/arith-tools

Each line of the input JSONL is ``{"id", "input", "answer", "attachments"?, "metadata"?}``;
answers go to the held-out reference file only. Errors are one line, exit code 2.

The source is read within the limits of ``xaytune.core.limits`` (the README's
"Limits" table): a line over ``MAX_SUITE_LINE_BYTES``, a file over
``MAX_SUITE_FILE_BYTES`` (``/dev/zero`` is refused, never read whole), nesting over
``MAX_JSON_DEPTH``, an integer over ``MAX_INT_DIGITS`` digits or a task input over
``MAX_TASK_INPUT_BYTES`` is refused in one line naming the file and line or task.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.suites._arith_generator import generate_arith_tools
from xaytune.suites._build import build_suite, build_suite_from_jsonl


def build_arith_tools(out: str) -> SuiteSource:
    """Generate and pin arith-tools; the shipped copy is exactly this output."""
    tasks, references = generate_arith_tools()
    return build_suite(out, name="arith-tools", version="1.0.0", tasks=tasks, references=references)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xaytune.suites",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="pin a JSONL of tasks with answers as a suite")
    build.add_argument("source", help="JSONL: one task a line, with its answer")
    build.add_argument("--name", required=True)
    build.add_argument("--version", required=True)
    build.add_argument("--out", required=True, help="new directory for the pinned suite")
    arith = commands.add_parser(
        "generate-arith-tools", help="regenerate the built-in arith-tools suite (deterministic)"
    )
    arith.add_argument("--out", required=True, help="new directory for the suite")
    verify = commands.add_parser("verify", help="verify a suite directory's digests")
    verify.add_argument("path")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            source = build_suite_from_jsonl(
                args.source, args.out, name=args.name, version=args.version
            )
            _say(
                f"pinned {source.suite.name} {source.suite.version}: "
                f"{len(source.suite.tasks)} tasks, digest {source.digest} -> {args.out}"
            )
        elif args.command == "generate-arith-tools":
            source = build_arith_tools(args.out)
            _say(f"pinned arith-tools: {len(source.suite.tasks)} tasks, digest {source.digest}")
        else:
            source = SuiteSource(args.path)
            source.reference_strings()  # reads and checks the held-out file too
            _say(
                f"ok {source.suite.name} {source.suite.version}: "
                f"{len(source.suite.tasks)} tasks, digest {source.digest}"
            )
    except XaytuneError as error:
        _say(f"error: {error}", sys.stderr)
        return 2
    return 0


def _say(line: str, stream: TextIO | None = None) -> None:
    """Print one line that any terminal encoding can take: a path given as undecodable
    bytes (a lone surrogate in ``argv``) is written escaped, never a crash."""
    safe = line.encode("utf-8", "backslashreplace").decode("utf-8")
    print(safe, file=stream or sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
