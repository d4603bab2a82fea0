"""verify checks what a tree claims beyond its evidence (issue 19, attacks 2 and 7):
replicates are exactly seeds x candidates, .hydra/config.yaml is the manifest's config,
the manifest's durability and timing environment are the replicates', and every file
is one a manifest accounts for. Each test keeps the attacker's recipe."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from journal_edits import forget_seal

from xaytune.core.canonical import canonical_bytes
from xaytune.experiment.config import validate_config
from xaytune.experiment.parts import resolve_candidates
from xaytune.experiment.source import load_source
from xaytune.experiment.tree.gather import write_comparison
from xaytune.experiment.tree.manifest import write_manifest

pytestmark = pytest.mark.slow


def problems(verify, tree: Path) -> list[str]:
    result = verify(tree, in_process=True)
    return [] if result.returncode == 0 else result.stdout.strip().splitlines()


def regenerate(tree: Path, config: dict) -> None:
    """What an attacker does with the app's own writers: a new comparison and a final
    manifest from the files left in the tree, under ``config``."""
    cfg = resolve_candidates(validate_config(config))
    source = load_source(cfg)
    write_comparison(tree, cfg, source)
    write_manifest(tree, cfg, config, source, final=True)


def test_a_cherry_picked_seed_is_refused(quickstart_copy: Path, verify) -> None:
    # Recipe: delete candidates/*/seed-103 and regenerate the comparison and manifest.
    config = json.loads((quickstart_copy / "manifest.json").read_text())["config"]
    for seed_dir in quickstart_copy.glob("candidates/*/seed-103"):
        shutil.rmtree(seed_dir)
    regenerate(quickstart_copy, config)
    found = problems(verify, quickstart_copy)
    assert any("replicates-mismatch" in line and "103" in line for line in found), found


def test_a_config_edited_after_the_run_is_refused(quickstart_copy: Path, verify) -> None:
    # Recipe: edit the manifest's config (min_effect), regenerate comparison and manifest.
    config = json.loads((quickstart_copy / "manifest.json").read_text())["config"]
    config["comparison"]["objectives"][0]["min_effect"] = 0.9
    regenerate(quickstart_copy, config)
    found = problems(verify, quickstart_copy)
    hydra, intent = quickstart_copy / ".hydra" / "config.yaml", quickstart_copy / "intent.json"
    assert f"{hydra}: config-mismatch: not the config the manifest records" in found, found
    manifest = quickstart_copy / "manifest.json"
    assert (
        f"{manifest}: intent-mismatch: the manifest's config is not the one {intent} records"
        in found
    ), found


@pytest.mark.parametrize("what", ["min_effect", "disclosure"])
def test_a_config_edited_with_hydra_and_intent_too_is_refused_by_every_attempt(
    quickstart_copy: Path, verify, what: str
) -> None:
    # Recipe: edit the config everywhere it is written (manifest, .hydra/config.yaml,
    # intent.json) and regenerate: only re-chaining every attempt record would pass.
    from omegaconf import OmegaConf

    from xaytune.experiment.tree.intent import INTENT_FILE

    tree = quickstart_copy
    config = json.loads((tree / "manifest.json").read_text())["config"]
    if what == "min_effect":
        config["comparison"]["objectives"][0]["min_effect"] = 0.9
    else:
        config["disclosure"] = "per-task"
    OmegaConf.save(OmegaConf.create(config), tree / ".hydra" / "config.yaml")
    intent = json.loads((tree / INTENT_FILE).read_text())
    intent["config"] = {k: v for k, v in config.items() if k in intent["config"]}
    (tree / INTENT_FILE).write_bytes(canonical_bytes(intent) + b"\n")
    regenerate(tree, config)
    found = problems(verify, tree)
    mismatched = [line for line in found if "intent-mismatch: the evidence was run under" in line]
    assert len(mismatched) == 6, found  # each replicate's evidence names the old intent


@pytest.mark.parametrize(
    ("key", "value"), [("durability", "none"), ("timing_environment", "Elsewhere-1cpu")]
)
def test_a_manifest_claim_the_replicates_contradict_is_refused(
    quickstart_copy: Path, verify, key: str, value: str
) -> None:
    path = quickstart_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest[key] = value
    path.write_bytes(canonical_bytes(manifest) + b"\n")
    found = problems(verify, quickstart_copy)
    assert found and all("claim-mismatch" in line for line in found), found


def test_an_edited_versions_claim_is_refused(quickstart_copy: Path, verify) -> None:
    """The manifest's `versions` are the ones the run's intent recorded before anything
    ran (and every attempt carries the intent's digest): an edit is named."""
    path = quickstart_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    recorded = manifest["versions"]["xaytune"]
    manifest["versions"]["xaytune"] = "9.9.9"
    path.write_bytes(canonical_bytes(manifest) + b"\n")
    found = problems(verify, quickstart_copy)
    assert found == [
        f'{path}: claim-mismatch: versions (xaytune: "{recorded}" -> "9.9.9") are not '
        f"the ones {quickstart_copy / 'intent.json'} records"
    ], found


def test_a_resume_under_other_versions_is_refused_naming_them(quickstart_copy: Path) -> None:
    """A tree is made by one set of versions: resuming it under another is refused, and
    the message names which (here the intent is the recorded one with python changed, as
    an upgrade of the interpreter would make it)."""
    from xaytune.core.errors import ConfigError
    from xaytune.experiment.tree.intent import write_intent

    recorded = json.loads((quickstart_copy / "intent.json").read_text())
    now = {**recorded, "versions": {**recorded["versions"], "python": "3.99.0"}}
    with pytest.raises(ConfigError) as refused:
        write_intent(quickstart_copy, now, resume=True)
    assert refused.value.reason == "resume-mismatch"
    assert f'versions.python: "{recorded["versions"]["python"]}" -> "3.99.0"' in str(refused.value)


@pytest.mark.parametrize("name", ["notes.txt", "candidates/.candidate.json.4242.tmp", ".hydra/x"])
def test_a_file_no_manifest_accounts_for_is_named(quickstart_copy: Path, verify, name: str):
    (quickstart_copy / name).write_text("left behind\n")
    assert problems(verify, quickstart_copy) == [
        f"{quickstart_copy / name}: stray-file: no manifest accounts for this file"
    ]


def test_a_re_roll_of_one_side_is_a_warning_in_the_report(quickstart_copy: Path, xaytune):
    # Attack 1's recipe, deepened: strip the seal line of some of B's attempts and
    # rewrite the seal journal without them (re-chained), remove B's evaluation,
    # published subject and replicate record, and resume. The store then reads as a
    # crash before those commits; the report says one side was re-run.
    replicate = quickstart_copy / "candidates" / "mental" / "seed-101"
    for path in sorted(replicate.glob("evidence/tasks/*/001.jsonl"))[:3]:
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]))
        forget_seal(path)
    shutil.rmtree(replicate / "evaluation")
    for published in (replicate / "evidence" / "published").iterdir():
        published.unlink()
    (replicate / "replicate.restricted.json").unlink()
    result = xaytune(
        quickstart_copy.parent, "+experiment=quickstart", "progress=false",
        f"resume={quickstart_copy}",
    )  # fmt: skip
    assert result.returncode == 0, result.describe()
    warning = "tasks were attempted again 0 time(s) on A (calculator) and 3 on B (mental)"
    assert warning in (quickstart_copy / "comparison" / "report.md").read_text()
