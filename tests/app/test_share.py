"""``python -m xaytune.share``: the release bundle holds no held-out reference and no
answer, refuses one planted in a file it would bundle, and never writes into the run.

The meaningful case is a suite whose references are unique large numbers that the
simulated model computes: they are all over the raw tree (seals, trajectories,
published statements: the leak issue 19 found) and nowhere in the bundle. The checks
here are independent of the module's scan: raw bytes, with letter-and-digit
boundaries so a digit run inside a hex digest is no match.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from entry_runs import call

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.release.share import check_bundle, share_run
from xaytune.share import main as share_main
from xaytune.sign import main as sign_main
from xaytune.suites import build_suite, builtin_suite_path
from xaytune.suites.arith_generator import generate_arith_tools

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run(main, *args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(arg) for arg in args])
    return code, out.getvalue(), err.getvalue()


def _snapshot(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in tree.rglob("*") if p.is_file()}


def _found(root: Path, needles: set[str]) -> dict[str, set[str]]:
    """Which of ``needles`` occur in which files under ``root`` (raw bytes, bounded by
    characters that are not letters or digits)."""
    alternatives = b"|".join(re.escape(n.encode()) for n in sorted(needles, key=len, reverse=True))
    pattern = re.compile(rb"(?<![0-9A-Za-z])(" + alternatives + rb")(?![0-9A-Za-z])")
    found: dict[str, set[str]] = collections.defaultdict(set)
    for path in root.rglob("*"):
        if path.is_file():
            for match in pattern.finditer(path.read_bytes()):
                found[match.group(1).decode()].add(str(path.relative_to(root)))
    return dict(found)


def _answers(tree: Path) -> dict[str, list[tuple[str, str]]]:
    """Every attempt's answer in the run's published statements, by candidate:
    (task id, answer)."""
    answers = collections.defaultdict(list)
    for statement in tree.glob("candidates/*/seed-*/evidence/published/*.intoto.json"):
        candidate = statement.parts[-5]
        for entry in json.loads(statement.read_bytes())["predicate"]["entries"]:
            for attempt in entry["attempts"]:
                outcome = attempt["outcome"] or {}
                if outcome.get("answer") is not None:
                    answers[candidate].append((entry["task_id"], outcome["answer"]))
    return answers


# -- the quickstart ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def quickstart_bundle(quickstart, tmp_path_factory) -> Path:
    before = _snapshot(quickstart.out)
    out = tmp_path_factory.mktemp("shared") / "bundle"
    code, stdout, stderr = _run(share_main, quickstart.out, "--out", out)
    assert code == 0, stdout + stderr
    assert "disclosure aggregate" in stdout and "240 references and 120 answers" in stdout
    assert _snapshot(quickstart.out) == before  # nothing written in the run
    return out


def test_the_bundle_holds_only_released_files(quickstart, quickstart_bundle: Path) -> None:
    names = {str(p.relative_to(quickstart_bundle)) for p in quickstart_bundle.rglob("*")}
    files = {n for n in names if (quickstart_bundle / n).is_file()}
    assert not [n for n in files if "restricted" in n or n.endswith((".jsonl", ".intoto.json"))]
    assert not [n for n in files if n.startswith(".hydra") or n.endswith(".log")]
    replicates = [
        f"candidates/{c}/seed-{s}" for c in ("calculator", "mental") for s in (101, 102, 103)
    ]
    expected = {
        "bundle.json",
        "manifest.json",
        "looks.json",  # the looks at the tree (xaytune.experiment.tree.looks)
        "looks.md",
        "comparison/report.json",
        "comparison/errors.json",  # counts and causes: no answer, no reference
        "comparison/report.md",
        "comparison/report.html",
        "comparison/paired_differences.png",
        "comparison/success_vs_tokens.png",
        "candidates/calculator/candidate.json",
        "candidates/mental/candidate.json",
        *(f"{r}/evaluation/outcome/evaluation.json" for r in replicates),
    }
    released = {n for n in files if n.endswith(".released.json")}
    assert files == expected | released
    assert sorted(n.rsplit("/evidence/", 1)[0] for n in released) == sorted(replicates)
    # Copies are the run's bytes; the manifest is the run's, its reports limited to the
    # bundle's (a restricted file's digest could be matched by trying success bits).
    for name in expected - {"bundle.json", "manifest.json"}:
        assert (quickstart_bundle / name).read_bytes() == (quickstart.out / name).read_bytes()
    manifest = json.loads((quickstart_bundle / "manifest.json").read_bytes())
    run_manifest = quickstart.manifest()
    assert manifest["reports"] == {
        k: v for k, v in run_manifest["reports"].items() if "restricted" not in k
    }
    assert {k: v for k, v in manifest.items() if k != "reports"} == {
        k: v for k, v in run_manifest.items() if k != "reports"
    }
    assert check_bundle(quickstart_bundle) == []


def test_released_evidence_holds_spend_and_digests_never_answers(quickstart_bundle: Path):
    (path,) = quickstart_bundle.glob("candidates/calculator/seed-101/evidence/*.released.json")
    released = json.loads(path.read_bytes())
    assert released["subject"]["digest"] == "sha256:" + path.name.split(".")[0]
    assert len(released["entries"]) == 20
    (attempt,) = released["entries"][0]["attempts"]
    assert set(attempt) == {
        "attempt",
        "status",
        "recovered",
        "record_digest",
        "trajectory_events",
        "spend",
    }
    assert {"input_tokens", "output_tokens", "turns", "tool_calls", "model_time_us"} <= set(
        attempt["spend"]
    )
    forbidden = {"answer", "outcome", "detail", "seal_digest", "trajectory_head", "terminal"}
    forbidden |= {"text", "content", "input", "question", "arguments", "reply"}
    assert not _keys(released) & forbidden
    assert released["withheld"] == [
        "answer",
        "outcome-detail",
        "seal-digest",
        "trajectory-head",
        "trajectory",
        "task-input",
    ]


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_the_quickstart_bundle_holds_no_reference_or_answer(quickstart, quickstart_bundle):
    source = SuiteSource(builtin_suite_path("arith-tools"))
    references = {source.reference(t).answer for t in source.suite.task_ids}
    answers = {answer for pairs in _answers(quickstart.out).values() for _, answer in pairs}
    # Short numbers ("4", "12") are everywhere as measurements: the independent check
    # looks for those of 5 characters and more, which the raw tree does hold.
    distinctive = {s for s in references | answers if len(s) >= 5}
    raw = _found(quickstart.out, distinctive)
    leaked_in_raw = {s for s, files in raw.items() if any("restricted" not in f for f in files)}
    assert leaked_in_raw, "the raw tree should hold some (the scan is meaningful)"
    assert _found(quickstart_bundle, distinctive) == {}
    # No JSON string value of the bundle is a reference or an answer, whatever its length
    # (part versions "1" excepted: identifiers, not output).
    for path in quickstart_bundle.rglob("*.json"):
        for key, value in _string_values(json.loads(path.read_bytes())):
            if key != "version":
                assert value not in references | answers, (path, key, value)


def _string_values(value, key=None):
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _string_values(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _string_values(v, key)


# -- a suite of large unique numbers: in the raw tree, never in the bundle -----------------


@pytest.fixture(scope="module")
def big_number_run(tmp_path_factory, xaytune, output_dir) -> tuple[Path, dict[str, str]]:
    tasks, references = generate_arith_tools()
    counts = collections.Counter(r["answer"] for r in references)
    chosen = [
        (task, ref)
        for task, ref in zip(tasks, references, strict=True)
        if len(ref["answer"]) >= 5 and counts[ref["answer"]] == 1
    ]
    assert len(chosen) >= 30
    root = tmp_path_factory.mktemp("big-suite") / "big"
    build_suite(
        root,
        name="big-numbers",
        version="1",
        tasks=[t for t, _ in chosen],
        references=[r for _, r in chosen],
    )
    cwd = tmp_path_factory.mktemp("big-run")
    result = xaytune(
        cwd,
        "+experiment=quickstart",
        "suite.builtin=null",
        f"suite.path={root}",
        "sampling.count=10",
        "progress=false",
    )
    assert result.returncode == 0, result.describe()
    return output_dir(cwd, "quickstart"), {r["id"]: r["answer"] for _, r in chosen}


def test_large_references_fill_the_raw_tree_and_none_reaches_the_bundle(
    big_number_run, tmp_path
) -> None:
    tree, references = big_number_run
    answers = _answers(tree)
    solved = {task for task, answer in answers["calculator"] if answer == references[task]}
    assert len(solved) >= 10  # the calculator candidate answers with the reference
    raw = _found(tree, set(references.values()))
    # Outside restricted files, in the attempt files and the published statements.
    for task in solved:
        files = raw[references[task]]
        assert any(f.endswith(".jsonl") for f in files), task
        assert any(f.endswith(".intoto.json") for f in files), task
    out = tmp_path / "bundle"
    code, stdout, stderr = _run(share_main, tree, "--out", out)
    assert code == 0, stdout + stderr
    every_answer = {answer for pairs in answers.values() for _, answer in pairs}
    assert _found(out, set(references.values()) | every_answer) == {}


def test_a_model_reply_planted_in_the_manifest_is_a_reference_leak(big_number_run, tmp_path):
    """The very text that leaked (a reply ending ``ANSWER: <reference>``), copied into a
    file the bundle carries, is found and refused."""
    tree, references = big_number_run
    run = tmp_path / "run"
    _copy(tree, run)
    attempt = next(run.glob("candidates/calculator/seed-101/evidence/tasks/000000/*.jsonl"))
    task = json.loads(attempt.read_bytes().splitlines()[1])["attribution"]["task_id"]
    replies = [
        json.loads(line)["v"]["text"]
        for line in attempt.read_bytes().splitlines()
        if b'"type":"model_reply"' in line
    ]
    reply = next(text for text in reversed(replies) if text)
    assert references[task] in reply
    _edit_json(run / "manifest.json", lambda m: m.update(note=reply))
    _refused(run, tmp_path / "out", "manifest.json", f"the reference of task {task}")


# -- a weak model echoing its prompt is no leak ---------------------------------------------

_ECHO_MODEL = """
from xaytune.models import ModelIdentity, ModelReply, ModelRequest, Usage


class PromptEcho:
    \"\"\"Answers with the prompt's own answer template, as a weak model does.\"\"\"

    def __init__(self, *, seed: int) -> None:
        self.seed = seed

    @property
    def identity(self) -> ModelIdentity:
        return ModelIdentity(provider="test", model="prompt-echo", revision="1", parameters={})

    async def complete(self, request: ModelRequest) -> ModelReply:
        usage = Usage(input_tokens=10, output_tokens=5)
        return ModelReply(text="ANSWER: <number>", tool_calls=(), usage=usage, finish_reason="stop")
"""


def test_an_answer_copied_from_the_prompt_is_not_a_leak(tmp_path, xaytune, output_dir):
    """Every answer is "<number>", which the candidates' prompts hold: it reveals nothing
    the prompt does not, and the bundle is written (its whole value is still a secret)."""
    (tmp_path / "echo_parts.py").write_text(_ECHO_MODEL)
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "echo.yaml").write_text("_target_: echo_parts.PromptEcho\n")
    result = xaytune(
        tmp_path,
        "--config-dir",
        "conf",
        "+experiment=quickstart",
        "model=echo",
        "sampling.count=3",
        "progress=false",
    )
    assert result.returncode == 0, result.describe()
    tree = output_dir(tmp_path, "quickstart")
    answers = {answer for pairs in _answers(tree).values() for _, answer in pairs}
    assert answers == {"<number>"}
    bundle = share_run(tree, tmp_path / "bundle")
    assert bundle.answers == 18
    _edit_json(tree / "manifest.json", lambda m: m.update(note="<NUMBER>"))
    _refused(tree, tmp_path / "again", "manifest.json", "the answer of task")


# -- planted leaks are refused, and nothing is left ----------------------------------------


def _copy(tree: Path, to: Path) -> None:
    import shutil

    shutil.copytree(tree, to, symlinks=True)


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_bytes())
    edit(data)
    path.write_bytes(canonical_bytes(data) + b"\n")


def _plant(tree: Path, name: str, data: bytes) -> None:
    """Write a report and keep the manifest's digest in step (as a consistent editor would)."""
    (tree / name).write_bytes(data)
    _edit_json(
        tree / "manifest.json", lambda m: m["reports"].__setitem__(name, sha256_digest(data))
    )


def _refused(tree: Path, out: Path, *words: str) -> str:
    with pytest.raises(XaytuneError) as caught:
        share_run(tree, out)
    assert caught.value.reason == "reference-leak"
    message = str(caught.value)
    assert all(word in message for word in words), message
    assert "\n" not in message
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.partial-")]
    return message


def _unique_reference(length: range) -> tuple[str, str]:
    """(task id, reference): the first arith-tools task whose reference no other task has,
    with a length in ``length``."""
    source = SuiteSource(builtin_suite_path("arith-tools"))
    refs = {t: source.reference(t).answer for t in source.suite.task_ids}
    counts = collections.Counter(refs.values())
    return next((t, r) for t, r in sorted(refs.items()) if counts[r] == 1 and len(r) in length)


def test_a_short_reference_as_a_string_value_is_refused(quickstart_copy, tmp_path) -> None:
    task, reference = _unique_reference(range(2, 4))
    name = "candidates/calculator/seed-101/evaluation/outcome/evaluation.json"
    data = json.loads((quickstart_copy / name).read_bytes())
    data["note"] = f" {reference} "
    _plant(quickstart_copy, name, canonical_bytes(data))
    _refused(quickstart_copy, tmp_path / "out", name, f"the reference of task {task}")


def test_a_long_reference_in_report_prose_is_refused(quickstart_copy, tmp_path) -> None:
    task, reference = _unique_reference(range(6, 20))
    name = "comparison/report.md"
    text = (quickstart_copy / name).read_text() + f"\nThe model said {reference}.\n"
    _plant(quickstart_copy, name, text.encode())
    _refused(quickstart_copy, tmp_path / "out", name, f"the reference of task {task}")


def test_a_wrong_answer_is_refused_too(quickstart_copy, tmp_path) -> None:
    """Next to a released score an answer tells about the reference, right or wrong."""
    source = SuiteSource(builtin_suite_path("arith-tools"))
    references = {source.reference(t).answer for t in source.suite.task_ids}
    task, answer = next(
        (t, a) for t, a in _answers(quickstart_copy)["mental"] if a not in references
    )
    name = "candidates/mental/candidate.json"
    data = json.loads((quickstart_copy / name).read_bytes())
    data["note"] = answer
    _plant(quickstart_copy, name, canonical_bytes(data))
    _refused(quickstart_copy, tmp_path / "out", name, f"the answer of task {task}")


def test_the_command_refuses_a_leak_in_one_line(quickstart_copy, tmp_path) -> None:
    task, reference = _unique_reference(range(6, 20))
    _edit_json(quickstart_copy / "manifest.json", lambda m: m.update(note=reference))
    out = tmp_path / "out"
    done = call("xaytune.share", [str(quickstart_copy), "--out", str(out)], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: reference-leak: manifest.json holds the reference of task {task}; "
        "nothing was shared"
    ]
    assert not out.exists()


# -- where the bundle may go -------------------------------------------------------------------


def test_out_inside_the_run_or_not_empty_is_refused(quickstart_copy, tmp_path) -> None:
    before = _snapshot(quickstart_copy)
    for out in (quickstart_copy / "shared", quickstart_copy, quickstart_copy / "comparison" / "x"):
        code, _, err = _run(share_main, quickstart_copy, "--out", out)
        assert code == 2 and err.startswith("error: out-inside-run:"), err
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    code, _, err = _run(share_main, quickstart_copy, "--out", full)
    assert code == 2 and err.startswith("error: out-not-empty:"), err
    assert [p.name for p in full.iterdir()] == ["keep.txt"]
    assert _snapshot(quickstart_copy) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = _run(share_main, quickstart_copy, "--out", empty)
    assert code == 0, err
    assert (empty / "bundle.json").is_file()


def test_missing_parents_of_out_are_made_and_a_file_in_the_way_is_refused(
    quickstart_copy, tmp_path
) -> None:
    """`share --out shared/quickstart` pasted into a fresh folder works (mkdir -p); a
    parent that is a file is refused in one line and nothing is written beside it."""
    nested = tmp_path / "shared" / "deeper" / "quickstart"
    code, _, err = _run(share_main, quickstart_copy, "--out", nested)
    assert code == 0, err
    assert (nested / "bundle.json").is_file()
    blocker = tmp_path / "a-file"
    blocker.write_text("mine")
    code, _, err = _run(share_main, quickstart_copy, "--out", blocker / "out")
    assert code == 2 and err.startswith("error: out-parent-missing:"), err
    assert "\n" not in err.strip() and blocker.read_text() == "mine"


def test_a_bundle_checks_on_its_own_and_can_be_signed(quickstart_bundle, tmp_path) -> None:
    _copy(quickstart_bundle, bundle := tmp_path / "bundle")
    assert _run(sign_main, "--generate-key", tmp_path / "key")[0] == 0
    assert _run(sign_main, bundle, "--key", tmp_path / "key")[0] == 0
    code, out, err = _run(share_main, "--check", bundle, "--trust", tmp_path / "key.pub")
    assert code == 0, out + err
    report = bundle / "comparison" / "report.json"
    report.write_bytes(report.read_bytes().replace(b"trade-off", b"favors-a"))
    code, out, _ = _run(share_main, "--check", bundle, "--trust", tmp_path / "key.pub")
    assert code == 1
    assert f"bundle-mismatch: {report}" in out and f"signature-mismatch: {report}" in out


# -- disclosure ----------------------------------------------------------------------------------


def test_per_task_disclosure_adds_terminal_words_and_scores(tmp_path, xaytune, output_dir):
    result = xaytune(
        tmp_path,
        "+experiment=quickstart",
        "disclosure=per-task",
        "sampling.count=4",
        "progress=false",
    )
    assert result.returncode == 0, result.describe()
    tree = output_dir(tmp_path, "quickstart")
    bundle = share_run(tree, tmp_path / "bundle").path
    (path,) = bundle.glob("candidates/mental/seed-101/evidence/*.released.json")
    released = json.loads(path.read_bytes())
    assert released["disclosure"] == "per-task"
    assert {a["terminal"] for e in released["entries"] for a in e["attempts"]} <= {
        "answer",
        "budget-stop",
        "context-overflow",
        "model-error",
        "cancelled",
    }
    assert not _keys(released) & {"answer", "outcome", "detail", "seal_digest", "trajectory_head"}
    evaluation = json.loads(
        (bundle / "candidates/mental/seed-101/evaluation/outcome/evaluation.json").read_bytes()
    )
    assert "task_success" in {c["metric"] for c in evaluation["task_columns"]}
    assert check_bundle(bundle) == []


def test_an_evaluation_released_per_task_in_an_aggregate_run_is_refused(
    tmp_path, xaytune, output_dir
):
    result = xaytune(
        tmp_path,
        "+experiment=quickstart",
        "evaluators.outcome.config.metadata.disclosure=per-task",
        "sampling.count=4",
        "progress=false",
    )
    assert result.returncode == 0, result.describe()
    tree = output_dir(tmp_path, "quickstart")
    with pytest.raises(XaytuneError) as caught:
        share_run(tree, tmp_path / "bundle")
    assert caught.value.reason == "disclosure-mismatch"
    assert not (tmp_path / "bundle").exists()
