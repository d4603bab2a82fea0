"""``python -m xaytune.suites``: build or verify a pinned suite.

    python -m xaytune.suites build tasks.jsonl --name my-suite --version 1 --out suites/my-suite
    python -m xaytune.suites build qa.csv --input-fields question,context \
        --answer-field answer --name my-qa --version 1 --out suites/my-qa
    python -m xaytune.suites verify suites/my-suite
    python -m xaytune.suites generate-arith-tools --out xaytune/suites/data/arith-tools
    python -m xaytune.suites bfcl          # build (once) and verify the BFCL suites
    python -m xaytune.suites bfcl bfcl-parallel      # ...or only the ones named

The source is JSONL, a JSON array, CSV or Parquet (by extension, or ``--format``). A
row ``{"id", "input", "answer", "attachments"?, "metadata"?}`` is a task as it is; any
other row is mapped: ``--id-field`` (default ``id``; none: rows are numbered
``row-1``, ...), ``--input-fields`` (default: every other field), ``--answer-field``
(default ``answer``), ``--template "Q: {question} C: {context}"`` (the input becomes
``{"question": <text>}``), ``--reference-fields test,entry_point`` (the reference is
the object of those fields, for a scorer such as ``execution``), ``--id-rule
normalise`` (``HumanEval/0`` becomes ``HumanEval-0``; two ids that meet are refused),
``--json-inputs`` (an input field holding an object or a list becomes its JSON text).
A source named ``*.gz`` (or ``*.zst`` with the zstandard package) is decompressed
first. Answers go to the held-out reference file only. Errors are one line naming the
file and row, exit code 2.

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
from xaytune.core.errors import SuiteError, XaytuneError
from xaytune.suites._build import build_suite, build_suite_from_file
from xaytune.suites._mapping import ID_RULES, FieldMapping
from xaytune.suites._readers import FORMATS
from xaytune.suites.arith_generator import generate_arith_tools


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
    build = commands.add_parser(
        "build", help="pin a JSONL, JSON array, CSV or Parquet file of tasks with answers"
    )
    build.add_argument("source", help="one task a row, with its answer")
    build.add_argument("--name", required=True)
    build.add_argument("--version", required=True)
    build.add_argument("--out", required=True, help="new directory for the pinned suite")
    build.add_argument("--format", choices=FORMATS, help="default: from the extension")
    build.add_argument("--id-field", help="the field holding each task's id (default: id)")
    build.add_argument(
        "--input-fields", help="comma-separated fields that make the input (default: all)"
    )
    build.add_argument("--answer-field", default="answer", help="default: answer")
    build.add_argument("--template", help='e.g. "Q: {question} C: {context}"')
    build.add_argument(
        "--reference-fields",
        help="comma-separated fields that make the reference, as one object "
        "(e.g. test,entry_point; instead of --answer-field)",
    )
    build.add_argument(
        "--json-inputs",
        action="store_true",
        help="write an input field holding an object or a list as its JSON text",
    )
    build.add_argument(
        "--id-rule",
        choices=ID_RULES,
        default="strict",
        help="strict: refuse an id with other characters than letters, digits, '.', '_', "
        "'-'; normalise: replace each run of them with '-' (HumanEval/0 -> HumanEval-0)",
    )
    arith = commands.add_parser(
        "generate-arith-tools", help="regenerate the built-in arith-tools suite (deterministic)"
    )
    arith.add_argument("--out", required=True, help="new directory for the suite")
    verify = commands.add_parser("verify", help="verify a suite directory's digests")
    verify.add_argument("path")
    bfcl = commands.add_parser(
        "bfcl", help="build the BFCL suites from the installed wheel (once) and verify them"
    )
    bfcl.add_argument("names", nargs="*", help="suites to build (default: every category)")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            source = build_suite_from_file(
                args.source,
                args.out,
                name=args.name,
                version=args.version,
                fmt=args.format,
                mapping=_mapping(args),
            )
            _say(
                f"pinned {source.suite.name} {source.suite.version}: "
                f"{len(source.suite.tasks)} tasks, digest {source.digest} -> {args.out}"
            )
        elif args.command == "bfcl":
            from xaytune.suites.bfcl import BFCL_SUITES, bfcl_suite_path

            for name in args.names or BFCL_SUITES:
                source = SuiteSource(bfcl_suite_path(name))
                source.reference_strings()
                _say(
                    f"ok {name} {source.suite.version}: {len(source.suite.tasks)} tasks, "
                    f"digest {source.digest} ({source.path})"
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


def _mapping(args: argparse.Namespace) -> FieldMapping:
    fields = None
    if args.input_fields is not None:
        fields = tuple(field.strip() for field in args.input_fields.split(","))
        if not all(fields):
            raise SuiteError("bad-record", f"--input-fields {args.input_fields!r}: an empty name")
    references = None
    if args.reference_fields is not None:
        references = tuple(field.strip() for field in args.reference_fields.split(","))
        if not all(references):
            raise SuiteError(
                "bad-record", f"--reference-fields {args.reference_fields!r}: an empty name"
            )
    return FieldMapping(
        id_field=args.id_field,
        input_fields=fields,
        answer_field=args.answer_field,
        template=args.template,
        reference_fields=references,
        id_rule=args.id_rule,
        json_inputs=args.json_inputs,
    )


def _say(line: str, stream: TextIO | None = None) -> None:
    """Print one line that any terminal encoding can take: a path given as undecodable
    bytes (a lone surrogate in ``argv``) is written escaped, never a crash."""
    safe = line.encode("utf-8", "backslashreplace").decode("utf-8")
    print(safe, file=stream or sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
