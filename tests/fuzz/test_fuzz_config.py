"""Fuzzing the app's config validation: a config or one line naming the key.

``validate_config`` takes random overrides of the real quickstart config (the one its
manifest records); a handful of hostile overrides go through the real CLI too.
Numeric bounds come from ``xaytune.core.limits``: a latency of 1e308 seconds used to
hang the run; now it is refused before anything runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from _fuzz_support import (
    FUZZ,
    FUZZ_TIMEOUT,
    JSON_VALUES,
    KEYS,
    bounded_memory,
    cli_env,
    json_paths,
    one_line,
)
from hypothesis import example, given
from hypothesis import strategies as st

from xaytune.core import limits
from xaytune.core.errors import ConfigError
from xaytune.experiment.config import ExperimentConfig, validate_config

pytestmark = FUZZ_TIMEOUT

# Keys with an upper bound, and the bound (from xaytune.core.limits).
BOUNDED = {
    ("model", "latency_s"): limits.MAX_LATENCY_S,
    ("model", "context_window"): limits.MAX_CONTEXT_WINDOW,
    ("candidates", "a", "max_turns"): limits.MAX_TURNS,
    ("candidates", "a", "token_budget"): limits.MAX_TOKEN_BUDGET,
    ("candidates", "b", "tool_call_budget"): limits.MAX_TOOL_CALL_BUDGET,
    ("candidates", "b", "context_window"): limits.MAX_CONTEXT_WINDOW,
    ("candidates", "a", "max_output_tokens"): limits.MAX_CONTEXT_WINDOW,
    ("candidates", "b", "model_retries"): limits.MAX_RETRIES,
    ("candidates", "a", "attempts_per_task"): limits.MAX_ATTEMPTS_PER_TASK,
    ("candidates", "b", "tool_timeout_s"): limits.MAX_TIMEOUT_S,
}


def _set(config: dict, path: tuple, value: Any) -> dict:
    copy = json.loads(json.dumps(config))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return copy


def _base(manifest: dict) -> dict:
    return manifest["config"]


def _validated_or_refused(config: dict) -> ExperimentConfig | ConfigError:
    with bounded_memory():
        try:
            return validate_config(config)
        except ConfigError as error:
            assert error.reason == "bad-config" and one_line(str(error)), error
            return error


@FUZZ
@given(data=st.data(), count=st.integers(1, 3))
def test_fuzzed_overrides_validate_or_are_refused_in_one_line(quickstart_manifest, data, count):
    config = _base(quickstart_manifest)
    for _ in range(count):
        kind = data.draw(st.sampled_from(["replace", "add"]))
        paths = [path for path in json_paths(config) if path]
        path = data.draw(st.sampled_from(paths))
        if kind == "add":
            parent = path[:-1]
            path = (*parent, data.draw(KEYS)) if parent else (data.draw(KEYS),)
            try:
                config = _set(config, path, data.draw(JSON_VALUES))
            except (TypeError, IndexError):  # the parent is a list or a scalar
                continue
        else:
            config = _set(config, path, data.draw(JSON_VALUES))
    _validated_or_refused(config)


@FUZZ
@given(
    key=st.sampled_from(sorted(BOUNDED)),
    value=st.one_of(
        st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e308])
    ),
)
@example(key=("model", "latency_s"), value=1e308)  # issue 23: hung the run
@example(key=("model", "latency_s"), value=10**5000)
@example(key=("candidates", "a", "max_turns"), value=10**30)
def test_every_bounded_key_refuses_a_value_past_its_limit(quickstart_manifest, key, value):
    outcome = _validated_or_refused(_set(_base(quickstart_manifest), key, value))
    if isinstance(value, int | float) and value == value and value > BOUNDED[key]:
        assert isinstance(outcome, ConfigError), f"{key} = {value!r} was accepted"
        assert ".".join(key) in str(outcome)


CLI_CASES = {
    "latency": ("model.latency_s=1e308", "model.latency_s"),
    "turns": ("candidates.a.max_turns=1000000000000", "candidates.a.max_turns"),
    "digits": ("model.context_window=" + "9" * 5_000, None),
    "deep": ("candidates.a.name=" + "[" * 10_000 + "]" * 10_000, None),
}


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess]:
    """Every CLI case started together (each is a fresh interpreter), then collected."""
    cwd = tmp_path_factory.mktemp("fuzz-cli")
    started = {
        case: subprocess.Popen(
            [sys.executable, "-m", "xaytune", "+experiment=quickstart", "progress=false", override],
            cwd=cwd,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for case, (override, _) in CLI_CASES.items()
    }
    runs = {}
    for case, process in started.items():
        stdout, stderr = process.communicate(timeout=240)
        runs[case] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert not (cwd / "experiments").exists() or not any((cwd / "experiments").rglob("*.jsonl"))
    return runs


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_a_hostile_override_is_one_line_exit_2_before_any_run(cli_runs, case: str) -> None:
    run = cli_runs[case]
    stderr = run.stderr.decode("utf-8", "replace")
    assert run.returncode == 2, stderr[-2_000:]
    assert "Traceback" not in stderr
    assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr[:2_000]
    key = CLI_CASES[case][1]
    if key is not None:
        assert stderr.startswith("error: bad-config: ") and key in stderr
