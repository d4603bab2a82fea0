"""The execution sandbox and the ``execution`` scorer: each refusal by its outcome word.

Every case runs a real child process (the sandbox is a process; nothing is mocked).
Limits are small so the time-limited cases end quickly; no assertion is on timing.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
from pathlib import Path

import pytest

from xaytune.core.errors import EvaluationError, PluginError
from xaytune.evaluation.config import MatchRule, ScorerSpec
from xaytune.evaluation.scorers import (
    SandboxLimits,
    _sandbox,
    network_isolation,
    resolve_scorer,
    run_in_sandbox,
)
from xaytune.evaluation.scorers._sandbox import pass_token
from xaytune.evaluation.scorers.execution import execution

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

LIMITS = SandboxLimits(wall_s=20.0, cpu_s=2, memory_mb=256, output_kb=16)
TESTS = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"
GOOD = "def add(a, b):\n    return a + b\n"


def run(solution: str, tests: str = TESTS, *, limits: SandboxLimits = LIMITS):
    return run_in_sandbox(solution, tests, entry_point=None, token="t" * 64, limits=limits)


def test_a_correct_solution_passes():
    result = run(GOOD)
    assert (result.outcome, result.reason) == ("passed", "passed")


def test_a_wrong_solution_fails_naming_the_assertion_line():
    result = run("def add(a, b):\n    return a - b\n")
    # The first assert (tests.py line 1) is the one that fails: 2 - 3 != 5.
    assert result.reason == "failed: AssertionError at tests.py line 1"


def test_a_fork_bomb_is_refused():
    result = run("import os\nwhile True:\n    os.fork()\n" + GOOD)
    assert result.outcome == "forbidden"
    assert result.detail == "process creation or signalling"


def test_a_subprocess_is_refused():
    result = run("import subprocess\nsubprocess.run(['true'])\n" + GOOD)
    assert result.outcome == "forbidden"


def test_a_thread_is_refused():
    result = run("import threading\nthreading.Thread(target=print).start()\n" + GOOD)
    assert (result.outcome, result.detail) == ("forbidden", "thread creation")


def test_an_infinite_loop_times_out_on_cpu_time():
    result = run("while True:\n    pass\n")
    # CPU-bound: RLIMIT_CPU ends it; the detail names both limits, not which one fired.
    assert result.reason == "timeout: over the time limit (CPU 2 s, wall 20 s)"


def test_a_sleeping_solution_times_out_on_wall_time():
    limits = SandboxLimits(wall_s=1.0, cpu_s=2, memory_mb=256, output_kb=16)
    result = run("import time\ntime.sleep(3600)\n", limits=limits)
    assert (result.outcome, result.detail) == ("timeout", "over the time limit (CPU 2 s, wall 1 s)")


def test_a_solution_that_closes_every_pipe_and_sleeps_still_times_out():
    limits = SandboxLimits(wall_s=1.0, cpu_s=2, memory_mb=256, output_kb=16)
    solution = "import os, time\nos.closerange(0, 256)\ntime.sleep(3600)\n"
    result = run(solution, limits=limits)
    assert (result.outcome, result.detail) == ("timeout", "over the time limit (CPU 2 s, wall 1 s)")


def test_limits_outside_their_range_are_refused_when_bound():
    spec = ScorerSpec(name="execution", params={"cpu_s": 0}, code=None)
    with pytest.raises(PluginError) as caught:
        resolve_scorer(spec, MATCH, where="test")
    assert caught.value.reason == "bad-part-params"


def test_a_2_gb_allocation_is_refused_as_memory():
    result = run("block = bytearray(2 * 1024 ** 3)\n" + GOOD)
    assert result.outcome == "memory"
    assert result.detail == "MemoryError at solution.py line 1"


def test_a_write_outside_the_temporary_directory_is_refused(tmp_path: Path):
    target = tmp_path / "escaped.txt"
    result = run(f"open({str(target)!r}, 'w').write('x')\n" + GOOD)
    assert result.outcome == "forbidden"
    assert result.detail == "a write outside the sandbox directory"
    assert not target.exists()


def test_a_caught_refusal_still_makes_the_run_forbidden(tmp_path: Path):
    target = tmp_path / "escaped.txt"
    solution = f"try:\n    open({str(target)!r}, 'w')\nexcept PermissionError:\n    pass\n" + GOOD
    assert run(solution).outcome == "forbidden"


def test_a_removal_outside_the_temporary_directory_is_refused(tmp_path: Path):
    victim = tmp_path / "keep.txt"
    victim.write_text("keep")
    result = run(f"import os\nos.remove({str(victim)!r})\n" + GOOD)
    assert result.outcome == "forbidden"
    assert victim.read_text() == "keep"


def test_writes_inside_the_temporary_directory_work_and_the_directory_is_removed():
    solution = "import os\nopen('scratch.txt', 'w').write('x')\nprint(os.getcwd())\n" + GOOD
    result = run(solution)
    assert result.outcome == "passed"
    directory = Path(result.stdout.decode().strip())
    assert directory.name.startswith("xaytune-sandbox-")
    assert not directory.exists()


def test_a_network_connect_to_a_local_listener_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        solution = f"import socket\nsocket.create_connection(('127.0.0.1', {port}))\n" + GOOD
        result = run(solution)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing ever connected
            listener.accept()
    assert (result.outcome, result.detail) == ("forbidden", "network use")


def test_without_a_network_namespace_the_audit_hook_alone_refuses_a_connect(monkeypatch):
    # The fallback where `unshare -rn` is not allowed: the same outcome, by the hook.
    monkeypatch.setattr(_sandbox, "network_isolation", lambda: "audit-hook")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        result = run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}))\n")
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert (result.outcome, result.detail) == ("forbidden", "network use")


def test_a_name_lookup_is_refused():
    result = run("import socket\nsocket.getaddrinfo('example.com', 80)\n" + GOOD)
    assert (result.outcome, result.detail) == ("forbidden", "network use")


def test_network_isolation_is_one_of_the_documented_modes():
    assert network_isolation() in ("namespace", "audit-hook")


def test_sys_exit_0_before_the_tests_is_not_a_pass():
    result = run("import sys\nsys.exit(0)\n" + GOOD)
    assert result.outcome == "exited"
    assert result.detail == "SystemExit(0) at solution.py line 2 before the tests passed"


def test_os_exit_0_before_the_tests_is_not_a_pass():
    result = run("import os\nos._exit(0)\n" + GOOD)
    assert result.outcome == "exited"


def test_a_forged_pass_marker_on_every_descriptor_is_not_a_pass():
    # The code knows the record's shape but not the token: it writes a fake marker to
    # every descriptor it holds and leaves. (Every one it holds, not a fixed range: the
    # marker pipe has the number it had in the scoring process, above 63 in a long-lived
    # test worker.)
    fake = json.dumps({"outcome": "passed", "token": "guess"}) + "\n"
    solution = (
        "import os\n"
        "for fd in sorted(int(name) for name in os.listdir('/proc/self/fd')):\n"
        f"    try:\n        os.write(fd, {fake!r}.encode()) if fd > 2 else None\n"
        "    except OSError:\n        pass\n"
        "os._exit(0)\n"
    )
    result = run(solution)
    assert result.outcome == "crashed"
    assert result.detail == "a pass marker that is not this run's"


def test_printing_passed_is_not_a_pass():
    result = run("print('passed')\nimport sys\nsys.stdout.flush()\nimport os\nos._exit(0)\n")
    assert result.outcome == "exited"


def test_a_syntax_error_is_named():
    result = run("def add(a, b)\n    return a + b\n")
    assert result.reason == "syntax-error: SyntaxError at solution.py line 1"


def test_a_file_over_the_output_limit_is_refused():
    result = run("open('big.bin', 'wb').write(b'x' * 100_000)\n" + GOOD)
    assert result.outcome == "output-limit"


def test_captured_output_is_capped():
    result = run("print('y' * 100_000)\n" + GOOD)
    assert result.outcome == "passed"
    assert len(result.stdout) == 16 * 1024


def test_the_environment_is_clean_and_the_hash_seed_fixed():
    solution = "import os\nprint(sorted(os.environ))\nprint(hash('xaytune'))\n" + GOOD
    first, second = run(solution), run(solution)
    names, _seeded_hash = first.stdout.decode().splitlines()
    assert names == str(["HOME", "LC_ALL", "PATH", "PYTHONHASHSEED", "TMPDIR"])
    assert second.stdout == first.stdout  # PYTHONHASHSEED=0 in both runs


def test_tests_that_do_not_compile_are_the_suites_fault():
    with pytest.raises(SyntaxError):
        run(GOOD, "assert (\n")


def test_the_pass_token_is_derived_from_answer_and_reference():
    # Independently: sha256 over the domain tag and the two sha256 digests.
    expected = hashlib.sha256(
        b"xaytune-sandbox/v1\0" + hashlib.sha256(b"a").digest() + hashlib.sha256(b"r").digest()
    ).hexdigest()
    assert pass_token("a", "r") == expected
    assert pass_token("a", "r") != pass_token("b", "r")


# --- the scorer -----------------------------------------------------------------


MATCH = MatchRule(strip=True, case_sensitive=False, numeric=True)
HUMANEVAL_STYLE = json.dumps(
    {
        "prompt": "def inc(x):\n    '''x plus one'''\n",
        "test": (
            "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(-1) == 0\n"
        ),
        "entry_point": "inc",
    }
)


def test_the_scorer_calls_check_on_the_entry_point():
    score = execution("def inc(x):\n    return x + 1\n", HUMANEVAL_STYLE)
    assert (score.success, score.reason) == (True, "passed")
    wrong = execution("def inc(x):\n    return x\n", HUMANEVAL_STYLE)
    assert (wrong.success, wrong.reason) == (False, "failed: AssertionError at tests.py line 2")


def test_the_scorer_prepends_the_prompt_for_a_completion():
    score = execution("    return x + 1\n", HUMANEVAL_STYLE, prepend_field="prompt")
    assert score.success


def test_the_scorer_reads_a_list_of_asserts_and_plain_text_tests():
    listed = json.dumps({"test_list": ["assert add(1, 1) == 2", "assert add(0, 0) == 0"]})
    assert execution(GOOD, listed, tests_field="test_list").success
    assert execution(GOOD, TESTS).success


def test_the_scorer_names_a_missing_entry_point():
    score = execution("def other(x):\n    return x\n", HUMANEVAL_STYLE)
    assert score.reason == "error: the solution defines no 'inc'"


def test_a_check_the_solution_defines_is_never_called():
    # Tests without check, a reference with an entry point: the solution's own check
    # must not judge it.
    reference = json.dumps({"test": "x = 1\n", "entry_point": "inc"})
    solution = "def inc(x):\n    return x\ndef check(candidate):\n    pass\n"
    score = execution(solution, reference)
    assert (score.success, score.reason) == (False, "error: check is not defined by the tests")


def test_patching_the_runners_json_does_not_forge_a_pass():
    solution = (
        'import json\njson.dumps = lambda record: \'{"outcome": "passed"}\'\n'
        "def inc(x):\n    return x\n"
    )
    score = execution(solution, HUMANEVAL_STYLE)
    assert score.reason == "failed: AssertionError at tests.py line 2"


def test_a_reference_without_tests_is_scorer_failed():
    scorer = resolve_scorer(ScorerSpec(name="execution", params={}, code=None), MATCH, where="test")
    with pytest.raises(EvaluationError) as caught:
        scorer.score(GOOD, json.dumps({"tests": "assert True"}), task_id="t-1")
    assert caught.value.reason == "scorer-failed"


def test_the_scorer_is_a_built_in_with_its_sandbox_in_its_identity():
    scorer = resolve_scorer(ScorerSpec(name="execution", params={}, code=None), MATCH, where="test")
    assert scorer.code.target == "xaytune.evaluation.scorers.execution.execution"
    assert scorer.params["cpu_s"] == 5 and scorer.params["memory_mb"] == 512
    # The sandbox's parent and runner code are hashed into the scorer's identity.
    assert execution.__xaytune_sources__ == (  # type: ignore[attr-defined]
        "xaytune.evaluation.scorers._sandbox",
        "xaytune.evaluation.scorers._sandbox_runner",
    )
