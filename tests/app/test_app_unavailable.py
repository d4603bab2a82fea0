"""An endpoint that is down: the run stops with its attempts partial, and a resume
finishes every task once the endpoint is back (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import shlex
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Answering(BaseHTTPRequestHandler):
    """A chat-completions endpoint that answers every question with ANSWER: 0."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.dumps(
            {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ANSWER: 0"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def port() -> Iterator[int]:
    yield free_port()


def serve(port: int) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), Answering)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    ).start()
    return server


def test_a_run_against_a_down_endpoint_resumes_to_a_complete_tree(
    tmp_path: Path, xaytune, verify, output_dir, port: int
) -> None:
    overrides = [
        "+experiment=quickstart",
        "progress=false",
        "sampling.count=3",
        "model=openai_compatible",
        f"model.base_url=http://127.0.0.1:{port}/v1",
        "model.name=answers-zero",
        "model.max_retries=0",
        # The mid-run path: with the preflight on, a down endpoint is refused before any
        # tree is written (tests/app/test_app_endpoints.py).
        "model.preflight=false",
        "candidates.a.model_retries=1",
        "candidates.b.model_retries=1",
    ]
    down = xaytune(tmp_path, *overrides)
    assert down.returncode == 2, down.describe()
    error, hint = down.stderr.strip().splitlines()
    assert (
        error.startswith("error: model-unavailable: 3 of 3 tasks")
        and "Traceback" not in down.stderr
    )
    assert hint.startswith("resume with: python -m xaytune ")
    tree = output_dir(tmp_path, "quickstart")
    partial = sorted(tree.rglob("001.jsonl"))
    assert len(partial) == 3  # the first replicate's tasks, each sealed partial
    assert all(b'"status":"partial"' in path.read_bytes().splitlines()[-1] for path in partial)

    server = serve(port)
    try:
        resumed = xaytune(
            tmp_path, *shlex.split(hint.removeprefix("resume with: python -m xaytune "))
        )
    finally:
        server.shutdown()
        server.server_close()
    assert resumed.returncode == 0, resumed.describe()
    manifest = json.loads((tree / "manifest.json").read_text())
    assert manifest["complete"] is True and len(manifest["replicates"]) == 6
    # Every task of every replicate is attested: the down ones by a second attempt.
    assert len(sorted(tree.rglob("002.jsonl"))) == 3
    assert verify(tree).returncode == 0
