"""``python -m xaytune.view <run dir> [--out DIR] [--serve [--port N]] [--suite DIR]``:
look at a run task by task.

Writes a self-contained static site over the run's *restricted* files (per task, each
candidate's outcome on each seed; filters: regressions, improvements, both wrong,
errors, budget stops, does not verify; a page per task with the candidates'
transcripts side by side, each attempt verified) into ``--out`` (an empty or new
directory, or a site this command wrote before) or, by default, a fresh temporary
directory, and prints where. It never writes inside the run tree. ``--serve`` then
serves the site on 127.0.0.1 (``--port``, default any free port) until Ctrl-C.

Exit 0 when the site is written; 2 with one line on stderr when the directory is not
a run tree, the output directory is refused, or the arguments are not a command; 1
when the site cannot be written (a full disk).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
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
    parser.add_argument("--out", type=Path, help="where to write the site (default: a temp dir)")
    parser.add_argument("--serve", action="store_true", help="serve the site on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="port for --serve (default: any)")
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


def _output(out: Path | None, run: Path) -> Path:
    """The directory to write the site into (created), or ``bad-output``."""
    from xaytune.core.errors import XaytuneError

    if out is None:
        return Path(tempfile.mkdtemp(prefix="xaytune-view-"))
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


def _serve(directory: Path, port: int) -> None:
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # requests are not logged
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    with ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        host, bound = server.server_address[:2]
        print(f"serving http://{host}:{bound}/index.html (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)  # --help exits 0 here, before the imports below
    from xaytune.core.errors import XaytuneError
    from xaytune.report.viewer import open_run, write_site

    try:
        tree = open_run(args.run, suites=tuple(args.suite))
        out = _output(args.out, args.run)
    except XaytuneError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        (out / SITE_MARKER).write_text("a site written by python -m xaytune.view\n")
        site = write_site(tree, out)
    except (XaytuneError, OSError) as error:
        print(f"error: {out}: the site could not be written ({error})", file=sys.stderr)
        return 1
    counts = ", ".join(f"{name} {count}" for name, count in site.counts.items() if name != "all")
    print(f"site: {out / 'index.html'} ({site.tasks} tasks; {counts})", flush=True)
    if args.serve:
        _serve(out, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
