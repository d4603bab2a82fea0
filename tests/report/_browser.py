"""Headless Chromium for the report and viewer tests, and a small DOM to query.

Debian's ``chromium`` (installed by ``scripts/setup-browser.sh``) is driven through
its command line: ``--dump-dom`` prints the DOM the browser built (after layout, and
after scripts when a page has any), ``--screenshot`` renders a page to PNG. Without
chromium a test is skipped, except under ``CI=true``, where a missing browser is a
broken setup step and fails (as the real-model tests do for a missing model).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

# Flags for a root user in a container: no sandbox, no GPU, no first-run chatter.
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-extensions",
    "--mute-audio",
)


def chromium() -> str:
    """The chromium executable; a skip without it (a failure under CI=true)."""
    found = shutil.which("chromium")
    if found is None:
        message = "chromium is not installed: run `bash scripts/setup-browser.sh`"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), *_FLAGS, *args],
        cwd=cwd,
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(cwd)},  # chromium writes its profile under HOME
    )


def dump_dom(page: Path, *, budget_ms: int | None = None) -> str:
    """The DOM chromium builds for ``page`` (a file), serialised."""
    args = ["--dump-dom"]
    if budget_ms is not None:
        args.append(f"--virtual-time-budget={budget_ms}")
    done = _run([*args, page.resolve().as_uri()], page.parent)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode()


def screenshot(page: Path, out: Path, *, width: int = 1280, height: int = 1600) -> Path:
    """Render ``page`` to the PNG ``out``; returns it."""
    done = _run(
        [f"--screenshot={out}", f"--window-size={width},{height}", page.resolve().as_uri()],
        out.parent,
    )
    assert done.returncode == 0 and out.is_file(), done.stderr.decode(errors="replace")[-2000:]
    return out


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG from its IHDR chunk; AssertionError if not a PNG."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), "not a PNG signature"
    assert data[12:16] == b"IHDR", "no IHDR chunk first"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 0 and height > 0
    return width, height


@dataclass
class Node:
    """An element of a parsed DOM."""

    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        """The text content, whitespace collapsed."""
        parts: list[str] = []

        def walk(node: Node) -> None:
            for child in node.children:
                if isinstance(child, str):
                    parts.append(child)
                else:
                    walk(child)

        walk(self)
        return " ".join("".join(parts).split())

    def iter(self):
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.iter()

    def find_all(self, tag: str | None = None, *, cls: str | None = None, **attrs: str):
        """Descendants with this tag, class and attribute values (``data_x`` = data-x)."""
        wanted = {key.replace("_", "-"): value for key, value in attrs.items()}
        return [
            node
            for node in self.iter()
            if (tag is None or node.tag == tag)
            and (cls is None or cls in node.classes)
            and all(node.attrs.get(k) == v for k, v in wanted.items())
        ]

    def find(self, tag: str | None = None, *, cls: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, cls=cls, **attrs)
        assert found, f"no <{tag}> class={cls} {attrs}"
        return found[0]

    def rows(self) -> list[list[str]]:
        """A table's body rows, as the text of their cells."""
        body = self.find("tbody")
        return [
            [cell.text() for cell in row.children if isinstance(cell, Node)]
            for row in body.children
            if isinstance(row, Node) and row.tag == "tr"
        ]


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    """The DOM of ``html`` (serialised by a browser: well formed)."""
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root
