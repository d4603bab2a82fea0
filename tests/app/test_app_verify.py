"""``python -m xaytune.verify``: a tampered output tree is refused, naming the file."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil

import pytest

from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.store import STORE_MARKER

pytestmark = pytest.mark.slow

# What a flipped event byte breaks: an early byte (the first event's "prev") or a
# middle one breaks the chain; a byte of the last event only moves the chain's head
# away from the one its seal names.
FLIP_REASONS = {"start": "chain-broken", "middle": "chain-broken", "end": "chain-head-mismatch"}


def _attempt_files(tree):
    """Every attempt file of every evidence store in an output tree."""
    return sorted(tree.glob("candidates/*/seed-*/evidence/tasks/*/*.jsonl"))


def _parts(path):
    return AttemptParts.of(path.read_bytes(), str(path))


def _flip_one_event_byte(path, offset):
    """Flip one bit of the byte at ``offset`` into the attempt's events (its chain)."""
    parts = _parts(path)
    events = bytearray(b"".join(parts.events))
    events[offset] ^= 0x01
    path.write_bytes(
        dataclasses.replace(parts, events=tuple(bytes(events).splitlines(keepends=True))).join()
    )


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_one_flipped_byte_in_a_trajectory_is_refused(quickstart_copy, verify, where):
    attempts = _attempt_files(quickstart_copy)
    assert len(attempts) == 120
    target = attempts[len(attempts) // 2]
    size = sum(map(len, _parts(target).events))
    offset = {"start": 2, "middle": size // 2, "end": size - 3}[where]
    _flip_one_event_byte(target, offset)

    # One case runs the command a user runs; the others call its main in-process.
    result = verify(quickstart_copy, in_process=where != "middle")
    assert result.returncode == 1, result.describe()
    attempt = target.relative_to(quickstart_copy)
    problems = result.stdout.strip().splitlines()
    assert len(problems) == 1, result.describe()
    # The line names the attempt file and why its trajectory (the hash-chained events
    # in it) is refused: a broken chain, or a chain head its seal does not name.
    assert str(attempt) in problems[0], result.describe()
    assert FLIP_REASONS[where] in problems[0], result.describe()
    assert "FAILED" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_edited_report_is_a_digest_mismatch(quickstart_copy, verify):
    report = quickstart_copy / "comparison" / "report.md"
    report.write_text(report.read_text().replace("trade-off", "favors-a"))
    result = verify(quickstart_copy, in_process=True)
    assert result.returncode == 1, result.describe()
    assert "digest-mismatch" in result.stdout
    assert "comparison/report.md" in result.stdout
    assert "Traceback" not in result.stderr


def test_a_deleted_seal_is_refused(quickstart_copy, verify):
    attempt = _attempt_files(quickstart_copy)[7]
    parts = _parts(attempt)
    assert parts.seal is not None
    attempt.write_bytes(dataclasses.replace(parts, seal=None).join())  # remove the seal line
    result = verify(quickstart_copy, in_process=True)
    assert result.returncode == 1, result.describe()
    assert str(attempt.parent.relative_to(quickstart_copy)) in result.stdout


def test_verify_usage_errors(tmp_path, verify):
    result = verify(tmp_path / "missing", in_process=True)
    assert result.returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = verify(empty, in_process=True)
    assert result.returncode == 1
    assert "not an xaytune output tree" in result.stdout


# -- the manifest ties the tree together ----------------------------------------------


def _edit_manifest(tree, edit):
    path = tree / "manifest.json"
    manifest = json.loads(path.read_bytes())
    edit(manifest)
    path.write_text(json.dumps(manifest))


def _refused(verify, tree, *words):
    """verify fails on ``tree``; every problem is one line; some line holds all ``words``."""
    result = verify(tree, in_process=True)
    assert result.returncode == 1, result.describe()
    assert "Traceback" not in result.stderr
    lines = result.stdout.strip().splitlines()
    assert any(all(word in line for word in words) for line in lines), result.describe()
    return lines


def test_evidence_swapped_between_candidates_is_refused(quickstart_copy, verify):
    a = quickstart_copy / "candidates/calculator/seed-101/evidence"
    b = quickstart_copy / "candidates/mental/seed-101/evidence"
    shutil.rmtree(a)
    shutil.copytree(b, a)
    _refused(verify, quickstart_copy, "evidence-mismatch", str(a))


@pytest.mark.parametrize("remove", ["store", "marker"])
def test_a_removed_store_or_marker_is_refused(quickstart_copy, verify, remove):
    store = quickstart_copy / "candidates/mental/seed-103/evidence"
    if remove == "store":
        shutil.rmtree(store)
    else:
        (store / STORE_MARKER).unlink()
    _refused(verify, quickstart_copy, "store-missing", str(store))


def test_a_store_no_manifest_lists_is_refused(quickstart_copy, verify):
    _edit_manifest(quickstart_copy, lambda m: m["replicates"].pop())
    _refused(verify, quickstart_copy, "unlisted-store", "seed-103/evidence")


def test_a_tree_without_its_manifest_is_refused(quickstart_copy, verify):
    (quickstart_copy / "manifest.json").rename(quickstart_copy / "comparison" / "manifest.json")
    lines = _refused(verify, quickstart_copy, "unlisted-store")
    assert sum("unlisted-store" in line for line in lines) == 6


def test_a_report_edited_and_dropped_from_the_manifest_is_refused(quickstart_copy, verify):
    report = quickstart_copy / "comparison" / "report.md"
    report.write_text(report.read_text().replace("trade-off", "favors-a"))
    _edit_manifest(quickstart_copy, lambda m: m["reports"].pop("comparison/report.md"))
    _refused(verify, quickstart_copy, "report-unlisted", str(report))


@pytest.mark.parametrize(
    "name", ["../../../../../../etc/hostname", "/etc/hostname", "comparison/../../x"]
)
def test_a_report_path_outside_the_tree_is_refused(quickstart_copy, verify, name):
    _edit_manifest(quickstart_copy, lambda m: m["reports"].update({name: "sha256:" + "0" * 64}))
    _refused(verify, quickstart_copy, "bad-manifest", "is not inside")


def test_a_replicate_path_outside_the_tree_is_refused(quickstart_copy, verify):
    _edit_manifest(quickstart_copy, lambda m: m["replicates"][0].update(path="../elsewhere"))
    _refused(verify, quickstart_copy, "bad-manifest", "'../elsewhere' is not inside")


def test_an_incomplete_run_is_refused(quickstart_copy, verify):
    _edit_manifest(quickstart_copy, lambda m: m.update(complete=False))
    _refused(verify, quickstart_copy, "incomplete-run", "manifest.json")


def _manifest_edit(edit):
    def write(path):
        manifest = json.loads(path.read_bytes())
        edit(manifest)
        path.write_text(json.dumps(manifest))

    return write


MALFORMED = {
    "truncated": lambda path: path.write_bytes(b'{"suite":'),
    "not utf-8": lambda path: path.write_bytes(b"\xff\xfe"),
    "a list": lambda path: path.write_bytes(b"[]"),
    "empty object": lambda path: path.write_bytes(b"{}"),
    "deep": lambda path: path.write_bytes(b"[" * 100_000 + b"]" * 100_000),
    "a directory": lambda path: (path.unlink(), path.mkdir()),
    "reports a list": _manifest_edit(lambda m: m.update(reports=[])),
    "a float seed": _manifest_edit(lambda m: m["replicates"][0].update(seed=101.0)),
    "suite null": _manifest_edit(lambda m: m.update(suite=None)),
    "another schema": _manifest_edit(lambda m: m.update(schema="xaytune.experiment-manifest/v0")),
}


@pytest.mark.parametrize("malformed", sorted(MALFORMED))
def test_a_malformed_manifest_is_one_line_not_a_traceback(quickstart_copy, verify, malformed):
    path = quickstart_copy / "manifest.json"
    MALFORMED[malformed](path)
    _refused(verify, quickstart_copy, "bad-manifest", str(path))


def test_a_symlink_in_the_tree_is_refused(quickstart_copy, verify, tmp_path):
    report = quickstart_copy / "comparison" / "report.md"
    outside = tmp_path / "report.md"
    shutil.copy(report, outside)
    report.unlink()
    report.symlink_to(outside)
    _refused(verify, quickstart_copy, "symlink", str(report))


def test_a_problem_line_escapes_a_newline_in_a_file_name(quickstart_copy, verify):
    stray = quickstart_copy / "candidates" / "mental" / "seed-101" / "evaluation" / "odd\nname"
    stray.write_text("not a report the manifest lists")
    lines = _refused(verify, quickstart_copy, "report-unlisted", "odd\\nname")
    assert all("report-unlisted" in line or "odd" not in line for line in lines)


def test_an_evaluation_of_other_evidence_is_refused_even_with_the_manifest_rewritten(
    quickstart_copy, verify
):
    # The calculator's replicate record swapped for the mental one's, the manifest's
    # digest of it rewritten to match: its evaluations name another subject.
    mine = quickstart_copy / "candidates/calculator/seed-101/replicate.restricted.json"
    other = quickstart_copy / "candidates/mental/seed-101/replicate.restricted.json"
    shutil.copy(other, mine)
    name = str(mine.relative_to(quickstart_copy))
    digest = "sha256:" + hashlib.sha256(mine.read_bytes()).hexdigest()
    _edit_manifest(quickstart_copy, lambda m: m["reports"].update({name: digest}))
    lines = _refused(verify, quickstart_copy, "evaluation-mismatch", str(mine))
    # The comparison recomputed from the swapped record differs too.
    assert sum("evaluation-mismatch" in line for line in lines) == 1, lines
    assert any("report-mismatch" in line for line in lines), lines


def _rewrite_with_digest(tree, path, text_edit):
    """Edit a report and rewrite the manifest's digest of it to match (what someone
    with write access to the tree can do: the manifest is not signed)."""
    data = path.read_bytes()
    edited = text_edit(data)
    assert edited != data
    path.write_bytes(edited)
    name = str(path.relative_to(tree))
    digest = "sha256:" + hashlib.sha256(edited).hexdigest()
    _edit_manifest(tree, lambda m: m["reports"].update({name: digest}))


@pytest.mark.parametrize(
    "name", ["report.md", "report.html", "report.json", "report.restricted.json"]
)
def test_a_comparison_edited_with_its_digest_is_refused(quickstart_copy, verify, name):
    # The verdict changed, and the manifest made to agree: the comparison the
    # replicates give, recomputed, is not this one.
    path = quickstart_copy / "comparison" / name
    _rewrite_with_digest(quickstart_copy, path, lambda d: d.replace(b"trade-off", b"favors-a"))
    lines = _refused(verify, quickstart_copy, "report-mismatch", str(path))
    assert len(lines) == 1, lines


def test_a_replicate_record_edited_with_its_digest_is_refused(quickstart_copy, verify):
    # One task's success flipped in the record the comparison reads (and the
    # manifest made to agree): the comparison recomputed from it differs.
    path = quickstart_copy / "candidates/mental/seed-102/replicate.restricted.json"
    _rewrite_with_digest(
        quickstart_copy, path, lambda d: d.replace(b'"value":1}', b'"value":0}', 1)
    )
    lines = _refused(verify, quickstart_copy, "report-mismatch", "comparison")
    # And the record itself is not what the evidence gives (its evaluation recomputed).
    assert any("evaluation-mismatch" in line and str(path) in line for line in lines), lines


def _redigest(tree):
    """Rewrite the manifest's report digests to match the files (what someone with
    write access can do after editing reports)."""
    from xaytune.experiment.tree.manifest import report_files

    digests = {
        str(path.relative_to(tree)): "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        for path in report_files(tree)
    }
    _edit_manifest(tree, lambda m: m.update(reports=digests))


def _recompare(tree):
    """Rewrite the comparison from the replicate records as the app does."""
    from xaytune.experiment.config import validate_config
    from xaytune.experiment.source import load_source
    from xaytune.experiment.tree.gather import write_comparison

    cfg = validate_config(json.loads((tree / "manifest.json").read_bytes())["config"])
    write_comparison(tree, cfg, load_source(cfg))


def test_candidate_labels_swapped_are_refused_even_recompared(quickstart_copy, verify):
    # a and b swapped in candidate.json: the comparison's verdicts would invert.
    for name, label in (("calculator", "b"), ("mental", "a")):
        path = quickstart_copy / "candidates" / name / "candidate.json"
        path.write_text(json.dumps({**json.loads(path.read_bytes()), "label": label}))
    _recompare(quickstart_copy)
    _redigest(quickstart_copy)
    _refused(verify, quickstart_copy, "candidate-mismatch", "calculator/candidate.json")


def test_a_replicate_without_evidence_is_refused_even_recompared(quickstart_copy, verify):
    # A made-up seed-104 record, no store: it would enter the comparison.
    for name in ("calculator", "mental"):
        seed_dir = quickstart_copy / "candidates" / name / "seed-104"
        seed_dir.mkdir()
        record = json.loads(
            (seed_dir.parent / "seed-103" / "replicate.restricted.json").read_bytes()
        )
        record["seed"] = 104
        for evaluation in record["evaluations"]:
            evaluation["seed"] = 104
        (seed_dir / "replicate.restricted.json").write_text(json.dumps(record))
    # The app's writer refuses it already: a comparison's errors record is read from
    # the evidence each record names (xaytune.experiment.attempt_errors), and it has none.
    from xaytune.core.errors import EvidenceError

    with pytest.raises(EvidenceError) as refused:
        _recompare(quickstart_copy)
    assert refused.value.reason == "subject-missing"
    _redigest(quickstart_copy)
    _refused(verify, quickstart_copy, "unlisted-replicate", "seed-104")


@pytest.mark.parametrize(
    ("edit", "word"),
    [
        (lambda m: m["reports"].update({"x" * 300: "sha256:" + "0" * 64}), "report-missing"),
        (lambda m: m["replicates"][0].update(path="y" * 300), "store-missing"),
    ],
    ids=["report", "replicate"],
)
def test_a_name_too_long_is_a_problem_not_a_crash(quickstart_copy, verify, edit, word):
    _edit_manifest(quickstart_copy, edit)
    _refused(verify, quickstart_copy, word)


def test_a_relative_tree_path_names_files_in_full(quickstart_copy, verify, monkeypatch):
    report = quickstart_copy / "comparison" / "report.md"
    report.write_text(report.read_text() + "\n")
    monkeypatch.chdir(quickstart_copy)
    result = verify(type(quickstart_copy)("."), in_process=True)
    assert result.returncode == 1
    assert f"{report}: digest-mismatch" in result.stdout, result.describe()


@pytest.mark.parametrize(
    ("edit", "word"),
    [
        (lambda r: r["evaluations"][0].update(subject_digest=[]), "evaluation-mismatch"),
        (
            lambda r: r["task_observations"]["task_success"][0].update(value=1e308),
            "report-mismatch",
        ),
    ],
    ids=["a list subject", "an overflowing value"],
)
def test_a_malformed_replicate_record_is_a_problem_not_a_crash(quickstart_copy, verify, edit, word):
    path = quickstart_copy / "candidates/mental/seed-101/replicate.restricted.json"
    record = json.loads(path.read_bytes())
    edit(record)
    path.write_text(json.dumps(record))
    _redigest(quickstart_copy)
    _refused(verify, quickstart_copy, word)


def test_an_observation_edited_everywhere_but_the_evidence_is_refused(quickstart_copy, verify):
    # One task's success flipped in the record, the comparison recomputed from it and
    # the manifest made to agree: the outcome evaluation, recomputed from the
    # evidence, says otherwise.
    path = quickstart_copy / "candidates/mental/seed-102/replicate.restricted.json"
    record = json.loads(path.read_bytes())
    observation = record["task_observations"]["task_success"][0]
    observation["value"] = 1 - observation["value"]
    path.write_text(json.dumps(record))
    _recompare(quickstart_copy)
    _redigest(quickstart_copy)
    lines = _refused(verify, quickstart_copy, "evaluation-mismatch", "observations of", str(path))
    assert all("evaluation-mismatch" in line for line in lines), lines


@pytest.mark.parametrize("change", ["edited", "deleted"])
def test_an_evaluation_report_edited_with_its_digest_is_refused(quickstart_copy, verify, change):
    path = quickstart_copy / "candidates/calculator/seed-101/evaluation/outcome/evaluation.json"
    if change == "edited":
        path.write_bytes(path.read_bytes().replace(b'"attested_tasks":20', b'"attested_tasks":19'))
    else:
        path.unlink()
    _redigest(quickstart_copy)
    _refused(verify, quickstart_copy, "evaluation-mismatch", str(path))


def test_a_run_level_value_edited_everywhere_but_the_evidence_is_refused(quickstart_copy, verify):
    # A run-level value of the replicate record's evaluation changed, the comparison
    # recomputed from it and the manifest made to agree: the evaluation recomputed
    # from the evidence (compared as the JSON data the record holds) says otherwise.
    path = quickstart_copy / "candidates/calculator/seed-103/replicate.restricted.json"
    record = json.loads(path.read_bytes())
    metrics = record["evaluations"][0]["metrics"]
    (metric,) = [m for m in metrics if (m["metric"], m["slice"]) == ("output_tokens", "all-tasks")]
    metric["value"] += 1
    path.write_text(json.dumps(record))
    _recompare(quickstart_copy)
    _redigest(quickstart_copy)
    lines = _refused(verify, quickstart_copy, "evaluation-mismatch", "is not the evidence's")
    assert [line for line in lines if "evaluation-mismatch" in line] == [
        f"{path}: evaluation-mismatch: evaluation outcome is not the evidence's"
    ], lines
