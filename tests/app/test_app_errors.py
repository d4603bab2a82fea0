"""A bad override is one line on stderr and exit 2; --help and --cfg work as in Hydra."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

BAD_OVERRIDES = [
    # (overrides, words the one line must contain)
    (["model=nonexistent"], ["model/nonexistent", "simulated"]),
    (["samplin.count=3"], ["samplin.count"]),
    (["sampling.count=abc"], ["sampling.count"]),
    (["+candidates.a.max_turn=3"], ["candidates.a.max_turn", "unknown key"]),
    (["candidates.a.max_turn=3"], ["candidates.a.max_turn: no such key (a typo?"]),
    (["model=openai_compatible"], ["model.base_url"]),
    (["comparison.fail_on=[favours-a]"], ["comparison.fail_on"]),
    (["experiment.name=../escape"], ["experiment.name"]),
]


@pytest.mark.parametrize(
    ("overrides", "words"), BAD_OVERRIDES, ids=[o[0] for o, _ in BAD_OVERRIDES]
)
def test_a_bad_override_is_one_line_and_exit_2(tmp_path, xaytune, overrides, words):
    result = xaytune(tmp_path, "+experiment=quickstart", *overrides, "progress=false")
    assert result.returncode == 2, result.describe()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.describe()
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0], result.describe()
    assert "Traceback" not in result.stderr
    assert "relation:" not in result.stdout
    # Nothing escapes the output root, whatever the experiment name says.
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["experiments"])
    assert not list(tmp_path.rglob("manifest.json"))


def test_help_mentions_xaytune(tmp_path, xaytune):
    result = xaytune(tmp_path, "--help")
    assert result.returncode == 0, result.describe()
    assert "xaytune" in result.stdout
    assert "experiment: " in result.stdout  # the config groups are listed
    assert not (tmp_path / "experiments").exists()


def test_cfg_job_prints_the_composed_config(tmp_path, xaytune):
    result = xaytune(tmp_path, "+experiment=quickstart", "--cfg", "job")
    assert result.returncode == 0, result.describe()
    assert "candidates:" in result.stdout
    assert "name: quickstart" in result.stdout
    assert "max_turns:" in result.stdout
    assert not (tmp_path / "experiments").exists()


def test_a_malformed_candidate_yaml_is_one_line_naming_file_and_line(tmp_path, xaytune):
    candidates = tmp_path / "conf" / "candidate"
    candidates.mkdir(parents=True)
    (candidates / "broken.yaml").write_text(
        'defaults:\n  - base\n  - _self_\nname: broken\nsystem_prompt: "unclosed\n'
    )
    result = xaytune(
        tmp_path, "--config-dir", "conf", "+experiment=quickstart", "candidate@candidates.b=broken"
    )
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: bad-yaml: ScannerError: ") and "Traceback" not in line
    assert "broken.yaml" in line and "line 5" in line
    assert not list(tmp_path.rglob("manifest.json"))


def test_a_candidate_given_as_a_string_says_how_to_choose_a_file(tmp_path, xaytune):
    result = xaytune(tmp_path, "+experiment=quickstart", "candidates.b=terse")
    assert result.returncode == 2, result.describe()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: bad-config: candidates.b:")
    assert "candidate@candidates.b=terse" in line


def test_two_seeds_say_why_the_verdict_is_inconclusive(tmp_path, xaytune):
    result = xaytune(
        tmp_path, "+experiment=quickstart", "seeds=[101,102]", "sampling.count=4", "progress=false"
    )
    assert result.returncode == 0, result.describe()
    (why,) = [line for line in result.stdout.splitlines() if line.startswith("why inconclusive:")]
    assert "task_success: 2 seed(s): the rule needs at least 3 (add seeds)" in why
