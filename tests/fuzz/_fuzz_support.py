"""Strategies and checks shared by the fuzz tests (imported by name, like
``tests/harness/_fixtures_run.py``: pytest puts ``tests/fuzz`` on ``sys.path``).

The strategies produce what hostile or broken input looks like: JSON of random shape,
and raw JSON *text* that no Python value serialises to — nesting 100,000 deep built as
a string, integers of thousands of digits, lone surrogates, NaN/Infinity literals,
duplicate keys, truncations. The checks state the property every boundary keeps: one
line or success, never an uncaught exception, bounded memory, nothing written outside
the output tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

# Registered in conftest.py; XAYTUNE_FUZZ=long selects the long profile.
FUZZ = settings.get_profile(
    "xaytune-fuzz-long" if os.environ.get("XAYTUNE_FUZZ") == "long" else "xaytune-fuzz"
)
LONG = os.environ.get("XAYTUNE_FUZZ") == "long"
# Each fuzz module sets ``pytestmark = FUZZ_TIMEOUT``: the long profile outlasts the
# project's 300 s per-test timeout.
FUZZ_TIMEOUT = pytest.mark.timeout(4 * 3600 if LONG else 300)

# ---------------------------------------------------------------- JSON values

# A few integers that sit on a boundary: 2^53 (canonical JSON), 2^64, and 4300 digits
# (Python's int-to-string limit; one past it cannot even be repr'd in a report, so the
# tests give it as explicit examples).
EDGE_INTEGERS = st.one_of(
    st.sampled_from([0, -1, 2**53 - 1, 2**53, -(2**53), 2**63, 2**64, 10**30]),
    st.integers(4_290, 4_300).map(lambda digits: -(10 ** (digits - 1))),
)
TEXT = st.text(st.characters(exclude_categories=()), max_size=40)  # lone surrogates too
KEYS = st.one_of(
    st.sampled_from(["id", "input", "answer", "metadata", "expression", "question", "a", ""]),
    TEXT,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    EDGE_INTEGERS,
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)
    ),
    max_leaves=12,
)

# ---------------------------------------------------------------- JSON text

DEPTHS = st.sampled_from([1, 2, 63, 64, 65, 199, 200, 1_000, 100_000])
HOSTILE_TEXT = st.one_of(
    DEPTHS.map(lambda n: "[" * n + "]" * n),
    DEPTHS.map(lambda n: '{"a":' * n + "1" + "}" * n),
    DEPTHS.map(lambda n: "[" * n),  # never closed: a recursive parser still descends
    DEPTHS.map(lambda n: '[{"k":' * (n // 2) + "0" + "}]" * (n // 2)),
    st.integers(4_290, 5_000).map(lambda k: "9" * k),
    st.integers(4_290, 5_000).map(lambda k: "-" + "1" * k),
    st.integers(300, 5_000).map(lambda k: "0." + "1" * k),
    st.sampled_from(
        [
            "NaN",
            "Infinity",
            "-Infinity",
            "1e400",
            "-1e999",
            "1e-400",
            "1" + "0" * 400 + ".5",
            '"\\ud800"',
            '"\\udfff tail"',
            '"\\ud800\\udc00"',  # a valid pair
            '"\\u0000"',
            '"\x00"',
            '"unterminated',
            "tru",
            "",
            " ",
            "{}",
            "[]",
            "null",
        ]
    ),
)


def _serialised(value: Any, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)  # NaN and Infinity as literals


@st.composite
def _objects(draw: st.DrawFn, children: st.SearchStrategy[str]) -> str:
    # Object text with keys that may repeat: no Python dict says that.
    keys = draw(st.lists(KEYS, max_size=4))
    if keys and draw(st.booleans()):
        keys.append(keys[0])
    members = [f"{json.dumps(key)}:{draw(children)}" for key in keys]
    return "{" + ",".join(members) + "}"


_INSERTS = [*'[]{}",:\\0-e.', "\ud800"]


@st.composite
def _mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    text = draw(base)
    at = draw(st.integers(0, len(text)))
    kind = draw(st.sampled_from(["cut", "insert", "drop"]))
    if kind == "cut":
        return text[:at]
    if kind == "insert":
        return text[:at] + draw(st.sampled_from(_INSERTS)) + text[at:]
    return text[:at] + text[at + 1 :]


def _json_text_tree(leaves: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
            _objects(children),
        ),
        max_leaves=6,
    )


JSON_TEXT = st.one_of(
    st.builds(_serialised, JSON_VALUES, st.booleans()),
    HOSTILE_TEXT,
    _json_text_tree(st.one_of(HOSTILE_TEXT, st.builds(_serialised, SCALARS, st.booleans()))),
    _mutated(st.builds(_serialised, JSON_VALUES, st.just(True))),
)


def embedded(template: str) -> st.SearchStrategy[str]:
    """``template`` with ``{}`` replaced by fuzzed JSON text (a field of a real record)."""
    return JSON_TEXT.map(lambda text: template.replace("{}", text, 1))


def json_paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indexes) into ``value``, shallowest first (``()`` too)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += json_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += json_paths(item, (*prefix, index))
    return found


def to_bytes(text: str) -> bytes:
    """UTF-8, with lone surrogates written as the (invalid) bytes they would be."""
    return text.encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------- checks

REPO_ROOT = Path(__file__).resolve().parents[2]


def cli_env() -> dict[str, str]:
    """The environment for ``python -m ...`` subprocesses: the repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.pop("HYDRA_FULL_ERROR", None)
    return env


def one_line(text: str) -> bool:
    """A message of one line: no line break of any kind inside it."""
    return len(text.splitlines()) <= 1


def rss_kb() -> int:
    """The resident set size of this process now, in KiB (Linux /proc)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@contextlib.contextmanager
def bounded_memory(mib: int = 256) -> Iterator[None]:
    """Fails when the peak RSS, or the RSS left behind, grows by more than ``mib``."""
    peak, now = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rss_kb()
    yield
    grown_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    grown_now = rss_kb() - now
    assert grown_peak < mib * 1024, f"peak RSS grew by {grown_peak} KiB"
    assert grown_now < mib * 1024, f"RSS grew by {grown_now} KiB and stayed"


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: relative path -> (size, mtime_ns)."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file() or path.is_symlink():
            stat = path.lstat()
            found[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return found


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    """Run with ``path`` as the working directory (a relative write would land there)."""
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


# ---------------------------------------------------------------- a raw HTTP server


class RawServer:
    """A real HTTP server on 127.0.0.1 answering scripted raw bytes, in order.

    Like ``tests/models/conftest.py``'s ``ScriptedServer``, but a body is bytes sent as
    they are (invalid UTF-8 included), with a Content-Length or chunked.
    """

    def __init__(self) -> None:
        self.script: deque[tuple[int, bytes, bool]] = deque()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, body, chunked = (
                    server.script.popleft() if server.script else (500, b"{}", False)
                )
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    if chunked:
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        for at in range(0, len(body), 65_536):
                            piece = body[at : at + 65_536]
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def respond(self, status: int, body: bytes, *, chunked: bool = False) -> None:
        self.script.append((status, body, chunked))

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
