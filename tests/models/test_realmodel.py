"""A real model: SmolLM2-135M-Instruct on a local llama.cpp server (xllamacpp).

Needs ``bash scripts/setup-local-model.sh``. Without it, the tests that need the
model skip with that hint; with ``XAYTUNE_REQUIRE_REALMODEL=1`` or ``CI=true`` they fail
instead, so a broken install step cannot pass as a green run. The refusal tests
(missing model or runtime) run either way.

Golden values come from the server itself by an independent route: the prompt's
token count from ``/apply-template`` + ``/tokenize``, the GGUF digest from hashlib
over the file.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.harness import (
    Harness,
    HarnessRunner,
    Toolbox,
    compile_replicate,
)
from xaytune.harness.evidence import (
    HarnessEvidenceStore,
    assemble_evidence,
    verify_run_evidence,
)
from xaytune.models import (
    ContextOverflowError,
    Message,
    ModelError,
    ModelRequest,
    TransientModelError,
    _llama_server,
)
from xaytune.models.llama_cpp_local import (
    SETUP_HINT,
    LlamaCppLocalModel,
    LocalLlamaServer,
    LocalServerSettings,
    llama_cpp_local_model,
    locate_gguf,
    stop_shared_servers,
)
from xaytune.suites import builtin_suite_path

pytestmark = [pytest.mark.realmodel, pytest.mark.usefixtures("machine_to_itself")]

REPO = Path(__file__).resolve().parents[2]
ADDITION = ModelRequest(
    messages=(
        Message("system", "Be brief."),
        Message("user", "What is 17+25? Answer with the number only."),
    ),
    max_output_tokens=32,
)
STORY = ModelRequest(messages=(Message("user", "Tell me a long story about a dragon."),))


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def _complete(model: LlamaCppLocalModel, request: ModelRequest):
    async def once():
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(once())


@pytest.fixture(scope="module")
def gguf() -> Path:
    """The installed GGUF, or a skip (a failure under XAYTUNE_REQUIRE_REALMODEL=1)."""
    problem = None
    if importlib.util.find_spec("xllamacpp") is None:
        problem = "the llama.cpp runtime (xllamacpp) is not installed"
    else:
        try:
            return locate_gguf()
        except ModelError as error:
            problem = str(error)
    message = f"{problem}; install with: bash scripts/setup-local-model.sh"
    # CI (CI=true) installs the model with the README's test command: there a missing
    # model is a broken install step, never a silent skip.
    if os.environ.get("XAYTUNE_REQUIRE_REALMODEL") == "1" or os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def server(gguf):
    """One server for the module; it must be gone once the block is left."""
    with LocalLlamaServer(LocalServerSettings(model_path=str(gguf))) as running:
        pid = running.pid
        yield running
    assert pid is not None and _gone_within(pid, 1.0)


def _model(server: LocalLlamaServer, **options) -> LlamaCppLocalModel:
    return llama_cpp_local_model(seed=101, base_url=server.base_url, **options)


# ------------------------------------------------------------ the adapter
def test_chat_reply_counts_the_prompt_and_reply_tokens(server):
    reply = _complete(_model(server), ADDITION)

    root = server.base_url.removesuffix("/v1")
    messages = [{"role": m.role, "content": m.content} for m in ADDITION.messages]
    prompt = httpx.post(f"{root}/apply-template", json={"messages": messages}).json()["prompt"]
    prompt_tokens = httpx.post(
        f"{root}/tokenize", json={"content": prompt, "parse_special": True}
    ).json()["tokens"]
    assert isinstance(reply.text, str) and reply.text.strip()
    assert reply.usage.input_tokens == len(prompt_tokens)
    text_tokens = httpx.post(f"{root}/tokenize", json={"content": reply.text}).json()["tokens"]
    if reply.finish_reason == "stop":  # the text, plus the end-of-turn token
        assert reply.usage.output_tokens in (len(text_tokens), len(text_tokens) + 1)
    else:
        assert reply.finish_reason == "length" and reply.usage.output_tokens == 32
    assert reply.extra["served_model"] == "SmolLM2-135M-Instruct.Q4_1"


def test_max_output_tokens_is_respected(server):
    reply = _complete(_model(server), ModelRequest(messages=STORY.messages, max_output_tokens=7))
    assert reply.usage.output_tokens == 7
    assert reply.finish_reason == "length"


def test_pinned_max_tokens_caps_a_larger_request(server):
    model = _model(server, parameters={"max_tokens": 5})
    reply = _complete(model, ModelRequest(messages=STORY.messages, max_output_tokens=100))
    assert reply.usage.output_tokens == 5
    assert model.identity.parameters["max_tokens"] == 5


def test_default_max_tokens_caps_an_unbounded_request(server):
    model = _model(server, parameters={"max_tokens": 9})
    reply = _complete(model, STORY)  # the harness sets no limit: the pinned cap holds
    assert reply.usage.output_tokens <= 9


def test_timeout_is_a_transient_error_and_the_server_recovers(server):
    slow = _model(server, timeout_s=0.2, max_retries=0)
    request = ModelRequest(messages=STORY.messages, max_output_tokens=400)
    with pytest.raises(TransientModelError) as caught:
        _complete(slow, request)
    assert caught.value.reason == "model-transient" and "no reply within 0.2s" in str(caught.value)
    started = time.monotonic()
    reply = _complete(_model(server), ADDITION)  # the abandoned request does not hold the slot
    assert reply.usage.output_tokens > 0
    assert time.monotonic() - started < 30


def test_a_prompt_beyond_the_context_is_a_context_overflow(server):
    long = ModelRequest(messages=(Message("user", "word " * 2100),), max_output_tokens=4)
    with pytest.raises(ContextOverflowError) as caught:
        _complete(_model(server), long)
    assert caught.value.reason == "context-overflow"


# ------------------------------------------------------ identity and lifecycle
def test_identity_pins_the_gguf_digest_and_the_server_is_started_once(gguf):
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    try:
        first = llama_cpp_local_model(seed=7)
        second = llama_cpp_local_model(seed=8)
        identity = first.identity
        assert (identity.provider, identity.model) == ("llama.cpp", "SmolLM2-135M-Instruct.Q4_1")
        assert identity.revision == f"sha256:{digest}"
        assert identity.parameters["seed"] == 7 and second.identity.parameters["seed"] == 8
        assert identity.parameters["temperature"] == 0.0
        assert identity.parameters["server"] == {
            "runtime": f"xllamacpp=={importlib.metadata.version('xllamacpp')}",
            "context": 2048,
            "parallel": 1,
            "threads": 1,
        }
        assert first.server is second.server and first.server is not None
        pid = first.server.pid
        assert pid is not None and _alive(pid)
        assert _complete(second, ADDITION).usage.output_tokens > 0
    finally:
        stop_shared_servers()
    assert _gone_within(pid, 1.0)


def test_base_url_uses_the_running_server_and_pins_the_file_it_serves(server, gguf):
    model = _model(server)
    assert model.server is None
    assert model.identity.revision == f"sha256:{hashlib.sha256(gguf.read_bytes()).hexdigest()}"
    assert model.identity.parameters["server"]["context"] == 2048


def test_server_is_stopped_when_the_block_raises(gguf):
    with (
        pytest.raises(RuntimeError, match="boom"),
        LocalLlamaServer(LocalServerSettings(model_path=str(gguf))) as running,
    ):
        pid = running.pid
        assert httpx.get(running.base_url.removesuffix("/v1") + "/health").status_code == 200
        raise RuntimeError("boom")
    assert not running.running and _gone_within(pid, 1.0)


_PARENT = textwrap.dedent(
    """
    import sys, time
    from xaytune.models.llama_cpp_local import LocalServerSettings, shared_server
    server = shared_server(LocalServerSettings(model_path=sys.argv[1]))
    print(server.pid, flush=True)
    time.sleep(120)
    """
)


def _parent_with_a_server(gguf: Path) -> tuple[subprocess.Popen[str], int]:
    # A process that starts a shared server and waits; Ctrl-C behaves as in a terminal.
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(gguf)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert parent.stdout is not None
    line = parent.stdout.readline()
    assert line.strip().isdigit(), f"the parent printed {line!r}"
    return parent, int(line)


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda sig: sig.name
)
def test_server_does_not_outlive_its_parent(gguf, sig):
    # SIGINT: KeyboardInterrupt, atexit stops it. SIGTERM/SIGKILL: no Python cleanup
    # runs; the child sees its stdin reach EOF and its parent change, and exits.
    parent, pid = _parent_with_a_server(gguf)
    try:
        assert _alive(pid)
        parent.send_signal(sig)
        parent.wait(timeout=30)
        assert _gone_within(pid, 5.0), f"server {pid} outlived its parent ({sig.name})"
    finally:
        if parent.poll() is None:
            parent.kill()
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------- refusals (no model needed)
def test_missing_model_is_a_one_line_refusal_with_the_setup_hint():
    with pytest.raises(ModelError) as caught:
        locate_gguf("xaytune-no-such-model")
    assert caught.value.reason == "local-model-missing"
    assert "\n" not in str(caught.value) and SETUP_HINT in str(caught.value)


def test_missing_runtime_is_refused_before_any_process_starts(monkeypatch, tmp_path):
    monkeypatch.setattr(_llama_server, "RUNTIME_DISTRIBUTION", "xaytune-no-such-runtime")
    server = LocalLlamaServer(LocalServerSettings(model_path=str(tmp_path / "m.gguf")))
    with pytest.raises(ModelError) as caught:
        server.start()
    assert caught.value.reason == "local-runtime-missing" and SETUP_HINT in str(caught.value)
    assert server.pid is None


def test_cli_prints_one_line_when_the_model_is_missing(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "xaytune",
            "+experiment=smollm2_local",
            "model.distribution=xaytune-no-such-model",
            f"hydra.run.dir={tmp_path / 'out'}",
            "progress=false",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("error: local-model-missing:") and SETUP_HINT in lines[-1]
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------- real runs
def test_five_task_real_run_is_assembled_verified_and_evaluated(server, tmp_path):
    source = SuiteSource(builtin_suite_path("arith-tools"))
    suite = source.suite
    harness = Harness(
        name="smol-steps-short",
        system_prompt="Work step by step. End with a final line of the form ANSWER: <number>.",
        max_turns=1,
        max_output_tokens=64,
        token_budget=1024,
        context_window=2048,
    )
    model = _model(server)
    store = HarnessEvidenceStore(tmp_path / "evidence")
    sampling = SeededSample(count=5)
    assignment = record_assignment(suite, sampling, seed=101)
    runner = HarnessRunner()
    specs = compile_replicate(
        harness,
        suite=suite,
        assignment=assignment,
        store=store,
        authorized_tools=(),
        model=model.identity,
    )

    async def run_all():
        try:
            return await runner.run_many(
                specs, model=model, toolbox=Toolbox.default(), authorized_tools=(), concurrency=1
            )
        finally:
            await model.aclose()

    runs = asyncio.run(run_all())
    evidence = assemble_evidence(specs, suite, sampling, assignment, source, store)
    verify_run_evidence(evidence, suite, source, store)
    subject = publish_evidence(evidence, store)
    evaluator = HarnessOutcomeEvaluator(source)
    spec = bind_evaluation(
        evaluator,
        EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=outcome_config())),
    )
    evaluation = run_harness_evaluation(
        evaluator, spec, subject, source=source, output_uri=str(tmp_path / "eval"), seed=101
    )

    assert evidence.model.revision == model.identity.revision
    assert [run.last.status for run in runs] == ["complete"] * 5
    assert all(entry.status == "attested" for entry in evidence.entries)
    assert all(entry.attested.outcome.terminal == "answer" for entry in evidence.entries)
    spends = [entry.attested.spend for entry in evidence.entries]
    assert all(s.input_tokens > 0 and 0 < s.output_tokens <= 64 for s in spends)
    # An independent count: the extracted answer equals the held-out reference.
    matches = sum(
        source.reference(e.task_id).answer == e.attested.outcome.answer for e in evidence.entries
    )
    assert evaluation.result is not None
    assert evaluation.result.metric("task_success").value == matches / 5


def test_cli_writes_the_full_output_tree_from_the_real_model(gguf, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "xaytune",
            "+experiment=smollm2_local",
            "sampling.count=2",
            "seeds=[101,102]",
            f"hydra.run.dir={out}",
            "progress=false",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "manifest.json").is_file()
    assert (out / "comparison" / "report.md").is_file()
    for name in ("smol-terse", "smol-steps"):
        for seed in (101, 102):
            replicate = out / "candidates" / name / f"seed-{seed}" / "replicate.restricted.json"
            facets = json.loads(replicate.read_text())["facets"]
            assert facets["model"]["provider"] == "llama.cpp"
            assert facets["model"]["revision"].startswith("sha256:")
    assert "\n" in done.stdout and "relation:" in done.stdout


@pytest.mark.parametrize(("argv", "code"), [(["--help"], 0), (["-h"], 0), (["--serve"], 2)])
def test_the_server_command_answers_help_and_refuses_a_stray_flag_without_starting(
    argv, code, capsys
) -> None:
    """`--help` prints the usage and a flag other than --check is one line, exit 2; neither
    looks for the weights or starts a server (no runtime is needed for this test)."""
    from xaytune.models.llama_cpp_local import _main

    assert _main(argv) == code
    out, err = capsys.readouterr()
    if code == 0:
        assert out.startswith("usage: python -m xaytune.models.llama_cpp_local") and not err
    else:
        assert err.startswith("error: bad-argument: --serve:") and err.count("\n") == 1
