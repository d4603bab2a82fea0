"""``python -m xaytune.view <run dir> [--out DIR] [--serve [--port N]] [--suite DIR]``:
look at a run task by task.

Writes a self-contained static site over the run's *restricted* files (the published
comparison's verdicts and the tasks behind each; errors grouped by cause; a task
explorer with search, sort and a filter for every objective; a page per task with its
reference and the candidates' transcripts side by side, each attempt verified; a copy
of each report page linking to it; :mod:`xaytune.viewer`) for a run, finished
or not (an unfinished one is marked), or a models run's root (one site, a model
switcher and a summary across models) into ``--out`` (an empty or new directory, or a
site this command wrote before) or, by default, beside the run: ``<run dir>.view/``
(replaced when this command wrote it before), and prints where. It never writes inside the run tree.

``--serve`` serves the viewer on 127.0.0.1 (``--port``, default any free port) and
follows the tree, which may still be being written by a run
(:mod:`xaytune.viewer._serve`): the site is rebuilt as attempts seal, into a
temporary directory removed on exit, and the pages show the running counts and the
verdicts once the comparison lands. It writes nothing beside the run (with ``--out``,
a snapshot is written there first). Ctrl-C or SIGTERM stop it: exit 0.

Exit 0 when the site is written; 2 with one line on stderr when the directory is not
a run tree, the output directory is refused, or the arguments are not a command; 1
when the site cannot be written (a full disk) or the port cannot be bound.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

__all__ = ["main"]

# Marks an output directory as a site of this command (so a later run may replace it).
SITE_MARKER = ".xaytune-view"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m xaytune.view",
        description="Write (or serve) a static site over a run's restricted per-task files.",
    )
    parser.add_argument("run", type=Path, help="the run's output directory")
    parser.add_argument(
        "--out", type=Path, help="where to write the site (default: beside the run, <run>.view)"
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="serve the viewer on 127.0.0.1, following a run still being written",
    )
    parser.add_argument("--port", type=_port, default=0, help="port for --serve (default: any)")
    parser.add_argument(
        "--suite",
        type=Path,
        action="append",
        default=[],
        help="a suite directory to use instead of the path the manifest records",
    )
    return parser


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def default_output(run: Path) -> Path:
    """Where the site goes without ``--out``: beside the run, ``<run>.view``."""
    resolved = run.resolve()
    return resolved.with_name(resolved.name + ".view")


def _output(out: Path | None, run: Path) -> Path:
    """The directory to write the site into (created), or ``bad-output``."""
    from xaytune.core.errors import XaytuneError

    if out is None:
        out = default_output(run)
    target, tree = out.resolve(), run.resolve()
    if _inside(target, tree) or _inside(tree, target):
        raise XaytuneError(
            "bad-output", f"{out}: the site is never written inside the run tree (or around it)"
        )
    if target.exists():
        if not target.is_dir():
            raise XaytuneError("bad-output", f"{out}: not a directory")
        if any(target.iterdir()):
            if not (target / SITE_MARKER).is_file():
                raise XaytuneError(
                    "bad-output", f"{out}: not empty and not a site this command wrote"
                )
            shutil.rmtree(target)  # a site written here before: replaced whole
    target.mkdir(parents=True, exist_ok=True)
    return target


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text}: a port is 0 (any free one) to 65535")
    return port


def followable(run: Path) -> None:
    """``not-a-run`` unless a run has started writing ``run`` (its manifest, intent or
    lock file is there): ``--serve`` follows a tree mid-run, not any directory."""
    from xaytune.core.errors import XaytuneError

    started = ("manifest.json", "intent.json", ".xaytune.lock")
    if not run.is_dir() or not any((run / name).is_file() for name in started):
        raise XaytuneError(
            "not-a-run",
            f"{run}: no run has written it (no manifest, intent or lock file); "
            "not an xaytune run tree",
        )


def _serve_live(args: argparse.Namespace) -> int:
    """Follow the tree live (:func:`xaytune.viewer.serve_live`)."""
    from xaytune.core.errors import XaytuneError
    from xaytune.viewer import serve_live

    try:
        followable(args.run)
    except XaytuneError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        return serve_live(args.run, suites=tuple(args.suite), port=args.port)
    except XaytuneError as error:  # the port cannot be bound
        print(f"error: {error}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)  # --help exits 0 here, before the imports below
    if args.serve and args.out is None:
        return _serve_live(args)  # a tree mid-run is followed, not refused
    from xaytune.core.errors import XaytuneError
    from xaytune.viewer import open_tree, write_report_pages, write_tree_site

    try:
        tree = open_tree(args.run, suites=tuple(args.suite))  # a run, or a models run
        out = _output(args.out, args.run)
    except XaytuneError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # e.g. the run's parent directory is read-only
        where = args.out or default_output(args.run)
        print(f"error: {where}: cannot be created ({error.strerror}); pass --out", file=sys.stderr)
        return 1
    try:
        (out / SITE_MARKER).write_text("a site written by python -m xaytune.view\n")
        site = write_tree_site(tree, out)
        write_report_pages(tree.root, out)
    except (XaytuneError, OSError) as error:
        print(f"error: {out}: the site could not be written ({error})", file=sys.stderr)
        return 1
    counts = ", ".join(f"{name} {n}" for name, n in site.outcome_counts.items() if name != "all")
    if site.models:  # a models run: one site, a summary page and a site per model
        counts = "models " + ", ".join(site.models)
    print(f"site: {out / 'index.html'} ({site.tasks} tasks; {counts})", flush=True)
    if args.serve:  # --out kept the snapshot above; the served site follows the tree
        return _serve_live(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
