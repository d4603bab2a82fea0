"""Real endpoints (issue 29): the preflight refuses a bad endpoint before any tree is
written, and the evidence cache never replays a failure or another endpoint's evidence.

Each endpoint is a real aiohttp server on 127.0.0.1 in a thread; the CLI runs as a
subprocess because the exit code and the absence of a tree are the behaviour."""

from __future__ import annotations

import json
import shlex
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from threaded_server import ThreadedServer

pytestmark = pytest.mark.slow

# The quickstart's questions are answered "ANSWER: 0"; what is right does not matter here.
_REPLY = {
    "model": "served-m",
    "system_fingerprint": "fp-one",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ANSWER: 0"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}


class Endpoint(ThreadedServer):
    """A chat-completions endpoint in ``mode``: ``ok``, ``401``, ``404``, ``html`` (an HTML
    page with status 200) or ``no-usage``; ``fingerprint`` is its system_fingerprint.
    ``chats`` counts the chat-completion requests it received."""

    def __init__(self, mode: str = "ok", *, fingerprint: str = "fp-one") -> None:
        self.mode = mode
        self.fingerprint = fingerprint
        self.chats = 0
        super().__init__()

    async def _handle(self, request: web.Request) -> web.Response:
        await request.read()
        if request.path.endswith("/models"):
            return web.Response(status=404)  # tolerated: the completion decides
        self.chats += 1
        if self.mode == "401" or (self.mode == "401-after-preflight" and self.chats > 1):
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        if self.mode == "400-on-2-to-4" and 2 <= self.chats <= 4:
            # A refusal of this one request (not definitive): the task ends model-error.
            return web.json_response({"error": {"message": "bad request"}}, status=400)
        if self.mode == "404":
            return web.json_response({"error": {"message": "model not found"}}, status=404)
        if self.mode == "html":
            return web.Response(text="<html>login</html>", content_type="text/html")
        reply = {**_REPLY, "system_fingerprint": self.fingerprint}
        if self.mode == "no-usage":
            reply.pop("usage")
        return web.json_response(reply)


@pytest.fixture
def endpoints() -> Iterator[list[Endpoint]]:
    made: list[Endpoint] = []
    yield made
    for endpoint in made:
        endpoint.close()


def _start(endpoints: list[Endpoint], mode: str = "ok", **options) -> Endpoint:
    endpoint = Endpoint(mode, **options)
    endpoints.append(endpoint)
    return endpoint


def _overrides(url: str, cache_dir: Path) -> list[str]:
    return [
        "+experiment=quickstart",
        "progress=false",
        "sampling.count=4",
        "seeds=[0]",
        "model=openai_compatible",
        f"model.base_url={url}",
        "model.name=m",
        "model.max_retries=0",
        "cache.mode=read-write",
        f"cache.dir={cache_dir}",
    ]


def _entries(cache_dir: Path) -> list[Path]:
    root = cache_dir / "v2"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


def _trees(cwd: Path) -> list[Path]:
    runs = cwd / "experiments"
    return sorted(p for p in runs.glob("*/*") if p.is_dir()) if runs.is_dir() else []


def test_401_then_fixed_url_calls_the_fixed_endpoint(tmp_path: Path, xaytune, endpoints) -> None:
    cache_dir = tmp_path / "cache"
    bad, good = _start(endpoints, "401"), _start(endpoints, "ok")

    refused = xaytune(tmp_path, *_overrides(bad.url, cache_dir))
    assert refused.returncode == 2, refused.describe()
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()]  # one line
    assert refused.stderr.startswith(f"error: model-auth: model 'm' at {bad.url}")
    assert bad.chats == 1  # the preflight's one request, then nothing
    assert _trees(tmp_path) == [] and _entries(cache_dir) == []

    fixed = xaytune(tmp_path, *_overrides(good.url, cache_dir))
    assert fixed.returncode in (0, 1), fixed.describe()  # a verdict, whatever it is
    # The preflight, then 4 tasks x 2 candidates (one call each: every reply answers).
    assert good.chats == 1 + 8
    assert len(_entries(cache_dir)) == 2  # one per candidate replicate
    # Every run shows each replicate's model-error count, 0 included.
    (counts,) = [x for x in fixed.stdout.splitlines() if x.startswith("model errors")]
    assert counts.count(" seed 0: 0") == 2, counts

    again = xaytune(tmp_path, *_overrides(good.url, cache_dir))
    assert again.returncode == fixed.returncode, again.describe()
    assert good.chats == 1 + 8 + 1  # only the preflight: both replicates reused
    reuses = again.stdout + again.stderr
    assert reuses.count("evidence cache: reused") == 2


def test_two_endpoints_serving_one_model_name_share_no_entries(
    tmp_path: Path, xaytune, endpoints
) -> None:
    cache_dir = tmp_path / "cache"
    first = _start(endpoints, fingerprint="fp-one")
    other = _start(endpoints, fingerprint="fp-two")
    assert xaytune(tmp_path, *_overrides(first.url, cache_dir)).returncode in (0, 1)
    assert len(_entries(cache_dir)) == 2
    second = xaytune(tmp_path, *_overrides(other.url, cache_dir))
    assert second.returncode in (0, 1), second.describe()
    assert other.chats == 1 + 8  # ran everything: the first endpoint's entries are not its
    assert len(_entries(cache_dir)) == 4


def test_same_url_serving_another_model_is_not_reused(tmp_path: Path, xaytune, endpoints) -> None:
    """The served identity is in the key: one URL whose fingerprint changed runs again."""
    cache_dir = tmp_path / "cache"
    endpoint = _start(endpoints, fingerprint="fp-one")
    assert xaytune(tmp_path, *_overrides(endpoint.url, cache_dir)).returncode in (0, 1)
    endpoint.fingerprint = "fp-two"
    assert xaytune(tmp_path, *_overrides(endpoint.url, cache_dir)).returncode in (0, 1)
    assert endpoint.chats == 2 * (1 + 8)
    assert len(_entries(cache_dir)) == 4


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("unreachable", "model-unreachable"),
        ("401", "model-auth"),
        ("404", "model-unknown"),
        ("html", "model-malformed"),
        ("no-usage", "usage-missing"),
    ],
)
def test_preflight_refusal_exits_2_with_no_tree(
    tmp_path: Path, xaytune, endpoints, mode: str, reason: str
) -> None:
    if mode == "unreachable":
        url = f"http://127.0.0.1:{_closed_port()}/v1"
    else:
        url = _start(endpoints, mode).url
    result = xaytune(tmp_path, *_overrides(url, tmp_path / "cache"))
    assert result.returncode == 2, result.describe()
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(f"error: {reason}: model 'm' at {url}")
    assert _trees(tmp_path) == []
    if mode != "unreachable":
        assert endpoints[0].chats == 1  # nothing ran after the preflight


def test_preflight_off_skips_it_and_bypasses_the_cache(tmp_path: Path, xaytune, endpoints) -> None:
    """``preflight: false``: no preflight request, and without a served identity the
    cache is neither read nor written (two runs both call the endpoint)."""
    cache_dir = tmp_path / "cache"
    endpoint = _start(endpoints)
    overrides = [*_overrides(endpoint.url, cache_dir), "model.preflight=false"]
    assert xaytune(tmp_path, *overrides).returncode in (0, 1)
    assert endpoint.chats == 8 and _entries(cache_dir) == []
    assert xaytune(tmp_path, *overrides).returncode in (0, 1)
    assert endpoint.chats == 16


def test_dry_run_stays_offline(tmp_path: Path, xaytune) -> None:
    """A dry run does not preflight: it works with no endpoint at all."""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = xaytune(tmp_path, *_overrides(url, tmp_path / "cache"), "--dry-run")
    assert result.returncode == 0, result.describe()
    assert _trees(tmp_path) == []


def test_cache_key_covers_the_endpoint_and_keeps_the_simulators_key() -> None:
    """In-process: the endpoint term changes the key; without one the key is the
    historical one (the simulator's golden/cache tests depend on it)."""
    from xaytune.experiment.tree.cache import replicate_key

    common = dict(
        suite_digest="sha256:" + "1" * 64,
        assignment_digest="sha256:" + "2" * 64,
        specs=[],
        model={"name": "m"},
        seed=0,
        durability="fsync",
        model_adapter=None,
    )
    plain = replicate_key(**common)
    assert replicate_key(**common, endpoint=None) == plain
    one = replicate_key(**common, endpoint={"base_url": "http://a/v1", "served": None})
    two = replicate_key(**common, endpoint={"base_url": "http://b/v1", "served": None})
    assert len({plain, one, two}) == 3
    json.dumps(one)  # a plain string


def test_mid_run_401_stops_with_the_resume_command_and_stores_nothing(
    tmp_path: Path, xaytune, output_dir, verify, endpoints
) -> None:
    """The key is revoked after the preflight: the first attempt is refused (model-auth),
    the run starts no further task (each would be refused alike) and stops with one error
    line and the resume command, exit 2; nothing reaches the cache. Once fixed, the
    printed command finishes the tree, the tasks never started included."""
    cache_dir = tmp_path / "cache"
    endpoint = _start(endpoints, "401-after-preflight")
    # One task at a time, so the tasks after the refusal are visibly never started.
    stopped = xaytune(tmp_path, *_overrides(endpoint.url, cache_dir), "concurrency=1")
    assert stopped.returncode == 2, stopped.describe()
    error, hint = stopped.stderr.strip().splitlines()
    assert error.startswith(f"error: model-auth: model 'm' at {endpoint.url}")
    assert "1 of 4 tasks" in error and "3 not started" in error
    assert "Traceback" not in stopped.stderr
    assert hint.startswith("resume with: python -m xaytune ")
    # The preflight, then one refused call: model-auth ends the run (no further task).
    assert endpoint.chats == 1 + 1 and _entries(cache_dir) == []
    tree = output_dir(tmp_path, "quickstart")
    sealed = sorted(tree.rglob("001.jsonl"))
    assert len(sealed) == 1 and not list(tree.rglob("002.jsonl"))
    assert all(b'"status":"partial"' in path.read_bytes().splitlines()[-1] for path in sealed)

    endpoint.mode = "ok"
    resumed = xaytune(tmp_path, *shlex.split(hint.removeprefix("resume with: python -m xaytune ")))
    assert resumed.returncode in (0, 1), resumed.describe()
    assert json.loads((tree / "manifest.json").read_text())["complete"] is True
    assert verify(tree).returncode == 0


def test_main_knows_every_definitive_reason() -> None:
    """main.py keeps its own copy (it does not import the models at start-up)."""
    from xaytune.app.main import _RESUMABLE
    from xaytune.models import DEFINITIVE_REASONS

    assert DEFINITIVE_REASONS <= _RESUMABLE


def test_preflight_endpoints_in_process(endpoints) -> None:
    """A judge model is preflighted like any other (main passes every evaluator's
    judge_model; None, an evaluator without one, is skipped); the identity the endpoint
    reported goes into the key; the simulator has neither preflight nor endpoint term."""
    from xaytune.experiment.config import OpenAICompatibleModelConfig, SimulatedModelConfig
    from xaytune.experiment.preflight import endpoint_key, preflight_endpoints, unvouched
    from xaytune.models import ModelError

    bad, good = _start(endpoints, "401"), _start(endpoints, fingerprint="fp-judge")

    def config(url: str, **options) -> OpenAICompatibleModelConfig:
        return OpenAICompatibleModelConfig(
            kind="openai_compatible", base_url=url, name="judge", max_retries=0, **options
        )

    with pytest.raises(ModelError) as refused:
        preflight_endpoints([None, config(bad.url)])
    assert refused.value.reason == "model-auth" and unvouched(config(bad.url))

    preflight_endpoints([config(good.url), config(good.url)])
    assert good.chats == 1  # once per distinct config
    key = endpoint_key(config(good.url))
    assert key is not None and key["base_url"] == good.url
    assert key["served"]["system_fingerprint"] == "fp-judge"
    assert key["served"]["served_model"] == "served-m"

    skipped = config(bad.url, preflight=False)
    preflight_endpoints([skipped])
    assert bad.chats == 1 and unvouched(skipped)  # not asked again, and not vouched for

    simulated = SimulatedModelConfig(kind="simulated")
    assert endpoint_key(simulated) is None and not unvouched(simulated)


def test_error_share_over_the_bound_exits_2_naming_candidate_seed_and_causes(
    tmp_path: Path, xaytune, output_dir, verify, endpoints
) -> None:
    """Requests 2-4 after the preflight are refused with a 400 (a per-request error, so
    the task ends model-error): the first replicate has 3 of 4 tasks in error (0.75 >
    the default bound 0.10); the second has none. Exit 2, the error line names the
    candidate, seed, count and the grouped cause; the errored replicate is not cached;
    the tree still verifies."""
    cache_dir = tmp_path / "cache"
    endpoint = _start(endpoints, "400-on-2-to-4")
    result = xaytune(tmp_path, *_overrides(endpoint.url, cache_dir))
    assert result.returncode == 2, result.describe()
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error: model-errors:")]
    assert " seed 0: 3 of 4 tasks ended model-error (bound 0.1)" in line
    assert "3 x model-error: model 'm' at " + endpoint.url in line
    (counts,) = [x for x in result.stdout.splitlines() if x.startswith("model errors")]
    assert sorted(part.rsplit(": ", 1)[1] for part in counts.split(", ")) == ["0", "3"]
    assert len(_entries(cache_dir)) == 1  # only the error-free replicate
    assert verify(output_dir(tmp_path, "quickstart")).returncode == 0

    # A declared looser bound accepts the same share (0.75 <= 0.8): no model-errors line.
    endpoint.chats = 0  # requests 2-4 are refused again
    (tmp_path / "loose").mkdir()
    loose = xaytune(
        tmp_path / "loose",
        *_overrides(endpoint.url, tmp_path / "cache-loose"),
        "comparison.max_model_error_share=0.8",
    )
    assert loose.returncode in (0, 1), loose.describe()
    assert "model-errors" not in loose.stderr
    (counts,) = [x for x in loose.stdout.splitlines() if x.startswith("model errors")]
    assert sorted(part.rsplit(": ", 1)[1] for part in counts.split(", ")) == ["0", "3"]
