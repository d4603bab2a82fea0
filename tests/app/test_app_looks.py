"""Looks at a run tree: recorded, hash-chained, verified; seed extension; the
optional-stopping warning under the fixed rule. The app runs in-process (the
simulated model, 4 tasks per seed, no cache)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from xaytune.app.main import resolve_config, run_job
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import ConfigError
from xaytune.experiment.tree.looks import LOOKS_FILE, optional_stopping_warning, read_looks


def _run(out: Path, seeds: list[int], *extra: str, resume: bool = False) -> int:
    overrides = [
        "+experiment=quickstart",
        "progress=false",
        "sampling.count=4",
        "cache.mode=off",
        f"seeds=[{','.join(map(str, seeds))}]",
        *extra,
    ]
    if resume:
        overrides.append(f"resume={out}")
    out.mkdir(parents=True, exist_ok=True)  # Hydra makes the run directory, here we do
    with initialize_config_module(config_module="xaytune.conf", version_base="1.3"):
        raw = compose(config_name="config", overrides=overrides)
    cfg, plain = resolve_config(raw)
    return run_job(cfg, plain, out, compare=True)


def _store_bytes(tree: Path, seed: int) -> dict[str, bytes]:
    return {
        str(path.relative_to(tree)): path.read_bytes()
        for path in sorted(tree.glob(f"candidates/*/seed-{seed}/evidence/**/*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """A run over seeds 101-103 extended three times, to 104, 105 and 106; and the
    evidence of seed 101 as the first run left it."""
    out = tmp_path_factory.mktemp("looks") / "run"
    _run(out, [101, 102, 103])
    first = _store_bytes(out, 101)
    for last in (104, 105, 106):
        _run(out, list(range(101, last + 1)), resume=True)
    return out, first


def _rewrite(tree: Path, looks: list[dict]) -> None:
    """Write looks.json and record its digest in the manifest, as a careful forger
    would: only the chain can tell."""
    data = canonical_bytes({"schema": "xaytune.looks/v1", "looks": looks}) + b"\n"
    (tree / LOOKS_FILE).write_bytes(data)
    manifest = json.loads((tree / "manifest.json").read_bytes())
    manifest["reports"][LOOKS_FILE] = sha256_digest(data)
    (tree / "manifest.json").write_bytes(canonical_bytes(manifest) + b"\n")


def test_a_tree_extended_three_times_has_four_chained_looks_that_verify(extended, verify):
    tree, first = extended
    looks = read_looks(tree)
    assert [look["look"] for look in looks] == [1, 2, 3, 4]
    assert [len(look["seeds"]) for look in looks] == [3, 4, 5, 6]
    assert [look["reason"] for look in looks] == ["run", "extension", "extension", "extension"]
    assert looks[0]["previous"] is None
    assert [look["previous"] for look in looks[1:]] == [look["digest"] for look in looks[:-1]]
    # Only the new seeds ran: the first run's evidence of seed 101 is byte for byte as it was.
    assert _store_bytes(tree, 101) == first
    result = verify(tree, in_process=True)
    assert result.returncode == 0, result.describe()


def test_the_fixed_rule_warns_of_optional_stopping_after_an_extension(extended):
    tree, _ = extended
    report = json.loads((tree / "comparison" / "report.json").read_bytes())
    assert report["method"] == "paired-difference/v1"
    assert report["looks"]["count"] == 4
    assert report["looks"]["optional_stopping"] is True
    assert [look["seeds"] for look in report["looks"]["looks"]] == [3, 4, 5, 6]
    markdown = (tree / "comparison" / "report.md").read_text()
    assert "optional stopping: this tree was looked at 4 times" in markdown
    assert "## Looks at this tree (4)" in markdown
    assert "Optional stopping" in (tree / "comparison" / "report.html").read_text()
    assert "looked at 4 times" in optional_stopping_warning(read_looks(tree))


def test_a_tree_whose_middle_look_was_removed_is_refused(extended, verify, tmp_path):
    tree = shutil.copytree(extended[0], tmp_path / "run")
    looks = read_looks(tree)
    _rewrite(tree, [looks[0], *looks[2:]])
    result = verify(tree, in_process=True)
    assert result.returncode != 0
    assert "looks-broken" in result.stdout + result.stderr
    assert "does not chain to look 1" in result.stdout + result.stderr


def test_a_removed_look_is_refused_even_when_the_chain_is_rebuilt(extended, verify, tmp_path):
    # A forger who drops look 2 and re-chains every later look (digests, numbers,
    # previous) still leaves the intent of the 4-seed extension, which the replicates'
    # attempts carry by digest: no look saw its seeds.
    tree = shutil.copytree(extended[0], tmp_path / "run")
    looks = [look for look in read_looks(tree) if look["look"] != 2]
    previous = None
    for number, look in enumerate(looks, start=1):
        look["look"], look["previous"] = number, previous
        look["digest"] = sha256_digest(
            canonical_bytes({k: v for k, v in look.items() if k != "digest"})
        )
        previous = look["digest"]
    _rewrite(tree, looks)
    result = verify(tree, in_process=True)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "looks-broken" in output
    assert "no look saw seeds [101, 102, 103, 104]" in output


def test_an_edited_look_is_refused(extended, verify, tmp_path):
    tree = shutil.copytree(extended[0], tmp_path / "run")
    looks = read_looks(tree)
    looks[0]["decisions"]["b"]["relation"] = "inconclusive"  # the first look said otherwise
    _rewrite(tree, looks)
    result = verify(tree, in_process=True)
    assert result.returncode != 0
    assert "looks-broken" in result.stdout + result.stderr


def test_a_first_look_carries_no_looks_and_no_warning(tmp_path):
    out = tmp_path / "run"
    _run(out, [101, 102, 103])
    report = json.loads((out / "comparison" / "report.json").read_bytes())
    assert "looks" not in report  # a first run's report is as it was before looks
    assert len(read_looks(out)) == 1
    assert optional_stopping_warning(read_looks(out)) is None


def test_the_sequential_method_extends_without_a_warning(tmp_path, verify):
    out = tmp_path / "run"
    _run(out, [101, 102, 103], "comparison=sequential")
    _run(out, [101, 102, 103, 104], "comparison=sequential", resume=True)
    report = json.loads((out / "comparison" / "report.json").read_bytes())
    assert report["method"] == "sequential-paired/v1"
    assert report["looks"]["optional_stopping"] is False
    detail = report["metrics"]["task_success"]["method_detail"]
    assert detail["method"] == "sequential-paired/v1"
    assert detail["n_seeds"] == 4
    assert detail["threshold"] == pytest.approx(80.0)  # 2 / (0.05 / 2 objectives)
    markdown = (out / "comparison" / "report.md").read_text()
    assert "optional stopping" not in markdown
    assert "## Method: sequential-paired/v1" in markdown
    assert "names a side at most 5.0% of the time" in markdown  # alpha, not the k rule's
    assert "No calibration" not in markdown
    result = verify(out, in_process=True)
    assert result.returncode == 0, result.describe()


@pytest.mark.parametrize(
    ("seeds", "extra"),
    [
        ([101, 104], ()),  # drops recorded seeds
        ([102, 101, 103, 104], ()),  # reorders them
        ([101, 102, 103, 50], ("comparison=sequential",)),  # a new seed before the path
    ],
)
def test_a_seed_list_that_does_not_extend_the_tree_is_refused(tmp_path, seeds, extra):
    out = tmp_path / "run"
    _run(out, [101, 102, 103], *extra)
    with pytest.raises(ConfigError) as error:
        _run(out, seeds, *extra, resume=True)
    assert error.value.reason == "resume-mismatch"
    assert len(read_looks(out)) == 1  # nothing was run or recorded


def test_comparing_again_is_a_look_of_its_own(tmp_path, verify):
    from xaytune.audit.recompare import ComparisonOverride, recompare

    out = tmp_path / "run"
    _run(out, [101, 102, 103])
    directory, report = recompare(out, [ComparisonOverride("comparison.k", 3)])
    looks = read_looks(out)
    assert [look["reason"] for look in looks] == ["run", "recompare"]
    assert looks[1]["directory"] == directory.name
    # Two looks at the same seeds: listed, but no optional stopping (no seed was added).
    assert report.looks.count == 2 and report.looks.optional_stopping is False
    result = verify(out, in_process=True)
    assert result.returncode == 0, result.describe()


def test_an_unfinished_tree_is_not_extended(tmp_path):
    out = tmp_path / "run"
    _run(out, [101, 102, 103])
    manifest = json.loads((out / "manifest.json").read_bytes())
    manifest["complete"] = False  # as a run stopped before its comparison leaves it
    (out / "manifest.json").write_bytes(canonical_bytes(manifest) + b"\n")
    with pytest.raises(ConfigError) as error:
        _run(out, [101, 102, 103, 104], resume=True)
    assert error.value.reason == "resume-mismatch"
    assert not list(out.glob("candidates/*/seed-104"))  # nothing ran
