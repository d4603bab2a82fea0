"""``xaytune.run(config)``: an experiment from a dict, without Hydra (issue 28 item 1).

The API's tree is checked against the CLI's: the session's quickstart tree
(``python -m xaytune +experiment=quickstart progress=false``, the ``quickstart``
fixture) and the API's run of the same composed config must hold byte-identical
comparisons, since the comparison is computed from the replicates on disk with
no time metric in the quickstart's catalog (v1). Composition uses Hydra here, in the
test; the guide's blocks run in a fresh interpreter that must never load Hydra.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web
from hydra import compose, initialize_config_module
from threaded_server import ThreadedServer

import xaytune
from xaytune.app.main import plain_config
from xaytune.audit.verify import audit_tree
from xaytune.core.errors import ConfigError
from xaytune.experiment.results import ExperimentResult, RunComparison, SilentObserver

REPO_ROOT = Path(__file__).resolve().parents[2]
GUIDE = REPO_ROOT / "docs" / "guides" / "python-api.md"
RELATIONS = ["favors-a", "favors-b", "trade-off", "inconclusive", "not-comparable"]


def _config(*overrides: str) -> dict:
    """The composed config of the quickstart with ``overrides``, as the CLI hands it to
    the API (Hydra's node left out, interpolations resolved)."""
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        raw = compose(config_name="config", overrides=["+experiment=quickstart", *overrides])
    return plain_config(raw)


def _small(*overrides: str) -> dict:
    return _config("progress=false", "sampling.count=4", "seeds=[1,2,3]", *overrides)


@pytest.fixture(scope="module")
def api_run(tmp_path_factory: pytest.TempPathFactory) -> ExperimentResult:
    """The quickstart exactly as the session's CLI run composed it, run by the API."""
    out = tmp_path_factory.mktemp("api") / "quickstart"
    return xaytune.run(_config("progress=false"), out=out)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _time_metrics(report: dict) -> set[str]:
    return {key for key, metric in report["metrics"].items() if metric["time_metric"]}


def _without(data: dict, keys: set[str]) -> dict:
    return {**data, "metrics": {k: v for k, v in data["metrics"].items() if k not in keys}}


def _markdown_without(text: str, names: set[str]) -> str:
    """report.md without the bullet of each metric in ``names`` (and its sub-bullets)."""
    kept, skipping = [], False
    for line in text.splitlines():
        if line.startswith("- **"):
            skipping = line[4:].split("**")[0] in names
        elif not line.startswith("  "):
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def test_the_api_writes_the_comparison_the_cli_writes(quickstart, api_run):
    """Byte for byte, but for the time metrics: model_time and tool_time are measured
    (wall clock), so two runs of one config never share them, CLI or API; they are
    reported, never compared (not-an-objective). Every other number, the relation and
    the errors record are the same bytes; report.html renders report.md's content."""
    cli = _files(quickstart.out / "comparison")
    api = _files(api_run.out / "comparison")
    assert sorted(api) == sorted(cli)
    report = json.loads(cli["report.json"])
    timed = _time_metrics(report)
    assert {"model_time", "tool_time"} <= timed
    assert all(report["metrics"][key]["verdict"] == "not-compared" for key in timed)
    compared_as_data = {"report.json", "report.restricted.json", "report.md", "report.html"}
    for name in set(cli) - compared_as_data:
        assert api[name] == cli[name], name
    for name in ("report.json", "report.restricted.json"):
        mine, theirs = json.loads(api[name]), json.loads(cli[name])
        timed_here = {k for k in mine["metrics"] if k.split("@")[0] in timed}
        assert timed_here == {k for k in theirs["metrics"] if k.split("@")[0] in timed}
        assert _without(mine, timed_here) == _without(theirs, timed_here), name
    assert _markdown_without(api["report.md"].decode(), timed) == _markdown_without(
        cli["report.md"].decode(), timed
    )


def test_the_api_tree_is_the_cli_tree_but_hydra_s_own_files(quickstart, api_run):
    def names(root: Path) -> set[str]:
        # A published statement is named by its digest, which covers measured times.
        return {
            re.sub(r"[0-9a-f]{64}", "<sha256>", str(p.relative_to(root)))
            for p in root.rglob("*")
            if p.is_file() and p.relative_to(root).parts[0] not in (".hydra", "main.log")
        }

    assert names(api_run.out) == names(quickstart.out)
    cli_manifest = json.loads((quickstart.out / "manifest.json").read_bytes())
    api_manifest = json.loads((api_run.out / "manifest.json").read_bytes())
    assert api_manifest["config"] == cli_manifest["config"]
    problems, _, _ = audit_tree(api_run.out)
    assert problems == []


def test_the_result_says_what_the_tree_holds(quickstart, api_run):
    report = json.loads((api_run.out / "comparison" / "report.json").read_bytes())
    # The quickstart has one challenger, b (mental), against the baseline a.
    assert api_run.relations == {"b": report["relation"]} == {"b": quickstart.report()["relation"]}
    assert api_run.exit_code == 0 and api_run.estimate == () and not api_run.dry_run
    (comparison,) = api_run.comparisons
    (challenger,) = comparison.challengers
    assert challenger.directory == api_run.out / "comparison"
    assert challenger.report.released().relation == report["relation"]
    assert comparison.gated == () and comparison.summary is None
    errors = json.loads((api_run.out / "comparison" / "errors.json").read_bytes())
    assert dict(comparison.errors) == errors
    with pytest.raises(AttributeError):  # frozen
        api_run.exit_code = 1  # type: ignore[misc]


def test_a_tree_that_holds_a_run_is_refused(api_run):
    before = (api_run.out / "manifest.json").read_bytes()
    with pytest.raises(ConfigError) as refused:
        xaytune.run(_config("progress=false"), out=api_run.out)
    assert refused.value.reason == "run-dir-exists"
    assert (api_run.out / "manifest.json").read_bytes() == before


def test_a_bad_key_is_refused_with_its_reason_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = _small()
    config["candidates"]["a"]["max_turn"] = 3
    with pytest.raises(ConfigError) as refused:
        xaytune.run(config)
    assert refused.value.reason == "bad-config"
    assert "candidates.a.max_turn" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_an_interpolation_left_in_a_value_is_refused_naming_its_key(tmp_path, monkeypatch):
    """The API takes resolved values (the CLI resolves, in app/main.py): a value that is
    still an interpolation would otherwise be validated as text."""
    monkeypatch.chdir(tmp_path)
    config = _small()
    config["evaluators"]["outcome"]["config"]["metadata"]["disclosure"] = "${disclosure}"
    with pytest.raises(ConfigError) as refused:
        xaytune.run(config)
    assert refused.value.reason == "bad-config"
    assert str(refused.value).split(": ")[1] == ("evaluators.outcome.config.metadata.disclosure")
    assert list(tmp_path.iterdir()) == []


def test_resume_of_a_directory_that_holds_no_run_is_refused(tmp_path):
    stranger = tmp_path / "notes"
    stranger.mkdir()
    with pytest.raises(ConfigError) as refused:
        xaytune.run(_small(f"resume={stranger}"))
    assert refused.value.reason == "resume-mismatch"
    assert list(stranger.iterdir()) == []


def test_a_dry_run_returns_the_estimate_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = xaytune.run(_small("dry_run=true"))
    assert result.dry_run and result.out is None and result.exit_code == 0
    assert result.estimate[-1] == "dry run: nothing was run and no output directory was kept"
    assert result.notes == ()
    assert list(tmp_path.iterdir()) == []


def test_a_sample_larger_than_the_suite_is_noted_not_printed(tmp_path, monkeypatch, capsys):
    # arith-tools holds 240 tasks (task_count in xaytune/suites/data/arith-tools/suite.json).
    monkeypatch.chdir(tmp_path)
    result = xaytune.run(_small("sampling.count=500", "dry_run=true"))
    assert result.notes == (
        "note: sampling asks for 500 tasks; suite arith-tools has 240: every task runs "
        "(sampling.larger_than_suite=all)",
    )
    assert capsys.readouterr() == ("", "")


def test_a_validated_experiment_config_is_taken_as_its_dict(tmp_path, monkeypatch):
    from xaytune.experiment.api import check, resolve_config

    cfg, _ = resolve_config(_small())
    assert check(cfg).cfg == cfg
    monkeypatch.chdir(tmp_path)
    dry = xaytune.run(cfg.model_copy(update={"dry_run": True}))
    assert dry.dry_run and dry.estimate == xaytune.run(_small("dry_run=true")).estimate
    assert list(tmp_path.iterdir()) == []


class _Recorder(SilentObserver):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def warning(self, message: str) -> None:
        self.events.append(("warning", message))

    def compared(self, comparison: RunComparison) -> None:
        self.events.append(("compared", comparison))


def test_a_gate_exits_as_the_cli_does_and_the_observer_sees_the_comparison(tmp_path):
    # Every relation is in fail_on, so whatever the relation, the gate fails: exit 1.
    recorder = _Recorder()
    every = f"comparison.fail_on=[{','.join(RELATIONS)}]"
    result = xaytune.run(_small(every), out=tmp_path / "run", observer=recorder)
    assert result.exit_code == 1
    (comparison,) = result.comparisons
    assert comparison.gated == ("b",) and comparison.exit_code == 1
    assert [kind for kind, _ in recorder.events] == ["compared"]
    assert recorder.events[0][1] is comparison


def test_several_models_run_each_in_its_own_tree_and_are_summarized(tmp_path):
    recorder = _Recorder()
    config = _small()
    config["models"] = {
        "careful": {"kind": "simulated", "mental_error_base": 0.04},
        "sloppy": {"kind": "simulated", "mental_error_base": 0.16},
    }
    result = xaytune.run(config, out=tmp_path / "run", observer=recorder)
    assert [c.model for c in result.comparisons] == ["careful", "sloppy"]
    assert [c.out for c in result.comparisons] == [
        tmp_path / "run" / "models" / label for label in ("careful", "sloppy")
    ]
    assert set(result.relations) == {"careful/b", "sloppy/b"}
    for comparison in result.comparisons:
        report = json.loads((comparison.out / "comparison" / "report.json").read_bytes())
        assert comparison.relations == {"b": report["relation"]}
    written = json.loads((tmp_path / "run" / "comparison" / "models.json").read_bytes())
    assert dict(result.models_summary) == written
    assert [kind for kind, _ in recorder.events] == ["compared", "compared"]
    problems, _, _ = audit_tree(tmp_path / "run")
    assert problems == []


def test_import_xaytune_stays_light_until_run_is_used(tmp_path, cli_env):
    """``xaytune.run`` is loaded on first use (the package's ``__getattr__``)."""
    script = (
        "import json, sys, xaytune\n"
        "before = sorted(m for m in sys.modules if m.startswith(('xaytune', 'pydantic')))\n"
        "run = xaytune.run\n"
        "print(json.dumps([before, run.__module__, 'hydra' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    before, module, hydra = json.loads(done.stdout)
    assert before == ["xaytune", "xaytune.core", "xaytune.core.version"]
    assert module == "xaytune.experiment.api" and hydra is False


class _ChatEndpoint(ThreadedServer):
    """A chat-completions endpoint on 127.0.0.1 that answers every request
    "ANSWER: 0" with usage, under ``fingerprint``; ``chats`` counts the requests."""

    def __init__(self) -> None:
        self.fingerprint = "fp-one"
        self.chats = 0
        super().__init__()

    async def _handle(self, request: web.Request) -> web.Response:
        await request.read()
        if request.path.endswith("/models"):
            return web.Response(status=404)  # tolerated: the completion decides
        self.chats += 1
        return web.json_response(
            {
                "id": "c",
                "object": "chat.completion",
                "model": "m",
                "system_fingerprint": self.fingerprint,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ANSWER: 0"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
            }
        )


def test_each_run_in_one_process_asks_the_endpoint_again(tmp_path):
    """The second ``xaytune.run`` preflights again: the endpoint now reports another
    fingerprint, so the cached evidence of the first model is not reused (4 tasks x 2
    candidates run again, one request each, after the preflight's one)."""
    endpoint = _ChatEndpoint()
    try:
        config = _small(
            "seeds=[0]",
            "model=openai_compatible",
            f"model.base_url={endpoint.url}",
            "model.name=m",
            "model.max_retries=0",
            "cache.mode=read-write",
            f"cache.dir={tmp_path / 'cache'}",
        )
        xaytune.run(config, out=tmp_path / "first")
        assert endpoint.chats == 1 + 8
        xaytune.run(config, out=tmp_path / "same")
        assert endpoint.chats == 1 + 8 + 1  # the preflight only: both replicates reused
        endpoint.fingerprint = "fp-two"
        xaytune.run(config, out=tmp_path / "other")
        assert endpoint.chats == 2 * (1 + 8) + 1
    finally:
        endpoint.close()


def _guide_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), re.S | re.M)


def test_the_guide_runs_as_written_without_hydra(tmp_path, cli_env):
    """The page's Python blocks, in order, in a fresh interpreter: they run, the run
    verifies, the observer counts every attempt (2 candidates x 3 seeds x 4 tasks), and
    neither Hydra nor rich (the CLI's terminal) is loaded."""
    blocks = _guide_blocks()
    assert len(blocks) == 2
    script = "\n".join(
        [
            *blocks,
            "import json, sys",
            "print(json.dumps({'out': str(result.out), 'more': str(more.out),"
            " 'hydra': sorted(m for m in sys.modules if m.split('.')[0] in ('hydra', 'rich')),"
            " 'codes': [result.exit_code, more.exit_code], 'attempts': watching.finished}))",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.splitlines()[-1])
    assert facts["hydra"] == []
    assert facts["codes"] == [0, 0]
    assert facts["attempts"] == 24
    assert "24 attempts" in done.stdout
    for tree in (facts["out"], facts["more"]):
        path = tmp_path / tree
        assert path.parent == tmp_path / "experiments" / "python-api"
        problems, _, _ = audit_tree(path)
        assert problems == []
