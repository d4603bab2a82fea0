"""A release bundle: what may be shared of a run under its disclosure, scanned for references.

``python -m xaytune.share <run dir> --out <dir>`` writes, at paths as in the run::

    bundle.json                     the index: disclosure, every file's sha256, what was
                                    withheld, what the scan looked for
    manifest.json                   each manifest of the run (a sweep's root and jobs), its
                                    ``reports`` limited to the bundled files
    comparison*/report.{json,md,html}, *.png   the released comparison (and any made
                                    again); never report.restricted.json
    candidates/<c>/candidate.json
    <replicate>/evaluation/<label>/evaluation.json   each released evaluation
    <replicate>/evidence/<hex>.released.json         the released form of a published
                                    evidence subject (below)

Nothing whose path holds ``restricted`` is bundled, nor the attempt files, the published
statements (their predicate holds every answer), ``.hydra/`` or logs. The manifest is
not copied whole: its digests of the restricted files would let a reader who can
rebuild such a file but for its success bits find those bits by trying them.

**Released evidence.** Per replicate: the subject digest (the manifest's and the
evaluations' ``subject_digest``), suite, assignment, seed, harness and model; per task
its position, id, spec fingerprint and status; per attempt its number, status,
``recovered``, record digest (the record is attribution only), trajectory length and
spend (turns, model and tool calls, tool errors, retries, tokens, peak context, model
and tool time). Never an answer, a model reply, a tool call or result, a task input,
an outcome detail, or a seal digest or chain head: a seal and a chain head are digests
of the answer next to the spend released here, so for a short answer (a number, a
one-line reply) trying candidate answers finds it. Under ``per-task`` disclosure
(per-task scores are released there by definition) each attempt also gives its
terminal word (``answer``, ``budget-stop``, ...); answers still reveal references and
stay out.

**The reference scan** (``xaytune.reference-scan/v1``, its rules in
:mod:`xaytune.release.reference_scan`) runs over the written bundle, in a temporary directory
beside ``--out``, before it is renamed into place. A leak refuses the bundle
(``reference-leak``, naming the file and the task) and nothing is left at ``--out``.

Other refusals, one line each: not a finished run (``not-a-run``, ``bad-manifest``,
``incomplete-run``), a link in it (``symlink``), its suite not here or not the one
recorded (``suite-missing``, ``suite-mismatch``), a listed report missing or not the
recorded bytes (``report-missing``, ``digest-mismatch``: verify the tree first), a
published statement refused (``subject-missing``, ``subject-tampered``), an evaluation
released per-task in an aggregate run (``disclosure-mismatch``), and an ``--out`` inside
the run, not empty, or whose parent is not a directory and cannot be made (``out-inside-run``,
``out-not-empty``, ``out-parent-missing``; missing parents are created, as ``mkdir -p``).
The run is only read.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import XaytuneError
from xaytune.core.version import __version__
from xaytune.experiment.tree.layout import find_links
from xaytune.experiment.tree.manifest_view import (
    ManifestView,
    inside,
    read_manifest,
    recorded_suite,
)
from xaytune.harness.evidence import HarnessRunEvidence
from xaytune.harness.evidence.publish import PublishedSubject, load_published
from xaytune.harness.evidence.store import SpendRecord
from xaytune.release.reference_scan import SCAN_RULES, Scanner, strings_of, tokens_of

__all__ = ["BUNDLE_INDEX", "BUNDLE_SCHEMA", "Bundle", "check_bundle", "share_run"]

BUNDLE_INDEX = "bundle.json"
BUNDLE_SCHEMA = "xaytune.release-bundle/v1"
RELEASED_EVIDENCE_SCHEMA = "xaytune.released-evidence/v1"
RELEASED_SUFFIX = ".released.json"
MANIFEST = (
    "manifest.json"  # xaytune.experiment.tree.manifest.MANIFEST (not imported: it pulls scipy in)
)
SIGNATURE_FILE = "signature.dsse.json"  # a bundle may be signed (python -m xaytune.sign)
# What the released evidence never gives (recorded in each file, for its reader).
WITHHELD_EVIDENCE = (
    "answer",
    "outcome-detail",
    "seal-digest",
    "trajectory-head",
    "trajectory",
    "task-input",
)

Disclosure = Literal["aggregate", "per-task"]


@dataclass(frozen=True)
class Bundle:
    """A bundle written: where, under which disclosure, and what the scan covered."""

    path: Path
    disclosure: Disclosure
    files: int
    references: int
    answers: int


def share_run(run: Path, out: Path) -> Bundle:
    """Write the release bundle of the finished run ``run`` at ``out`` (absent or an
    empty directory, outside the run), whole and scanned, or refuse and leave nothing."""
    run, out = run.absolute(), out.absolute()
    _check_out(run, out)
    plan = _plan(run)
    try:  # `--out shared/quickstart` in a fresh folder: its parents are made, as mkdir -p
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise XaytuneError(
            "out-parent-missing", f"{out.parent}: cannot be created ({error.strerror})"
        ) from None
    partial = out.parent / f".{out.name}.partial-{secrets.token_hex(6)}"
    partial.mkdir()  # the umask's mode, as any directory the user makes (not mkdtemp's 0700)
    try:
        files = _write(plan, partial)
        plan.scanner.scan(partial)
        try:
            os.rename(partial, out)  # replaces an empty directory, never a full one
        except OSError as error:
            raise XaytuneError(
                "out-not-empty", f"{out}: cannot be replaced ({error.strerror})"
            ) from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return Bundle(out, plan.disclosure, files, plan.scanner.references, plan.scanner.answers)


def _check_out(run: Path, out: Path) -> None:
    if not (run / MANIFEST).is_file():
        raise XaytuneError("not-a-run", f"{run}: no {MANIFEST}; not an xaytune output tree")
    real_run, real_out = run.resolve(), out.resolve()
    if real_out == real_run or real_run in real_out.parents:
        raise XaytuneError("out-inside-run", f"{out}: inside the run {run}; write it elsewhere")
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise XaytuneError("out-not-empty", f"{out}: exists and is not an empty directory")
    for parent in (out.parent, *out.parent.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise XaytuneError("out-parent-missing", f"{parent}: not a directory")
            break


# ---------------------------------------------------------------- what is bundled


@dataclass
class _Plan:
    disclosure: Disclosure
    copies: dict[str, Path] = field(default_factory=dict)  # bundle name -> run file
    written: dict[str, bytes] = field(default_factory=dict)  # bundle name -> content
    withheld: dict[str, list[str]] = field(default_factory=dict)  # manifest -> reports
    scanner: Scanner = field(default_factory=lambda: Scanner())


def _plan(run: Path) -> _Plan:
    links = find_links(run)
    if links:
        raise XaytuneError("symlink", f"{links[0]}: an output tree holds no links; not shared")
    manifests = [(path, read_manifest(path)) for path in sorted(run.rglob(MANIFEST))]
    plan = _Plan(disclosure=_disclosure(manifests))
    sources: dict[str, SuiteSource] = {}
    evidence: dict[str, HarnessRunEvidence] = {}
    for path, view in manifests:
        base = path.parent
        prefix = "" if base == run else base.relative_to(run).as_posix()
        if view.suite.digest not in sources:
            sources[view.suite.digest] = _suite_source(view, path)
        bundled = {}
        for name, digest in view.reports.items():
            if "restricted" in name:
                plan.withheld.setdefault(_join(prefix, MANIFEST), []).append(name)
                continue
            plan.copies[_join(prefix, name)] = _report(base, name, digest, path)
            bundled[name] = digest
        for replicate in view.replicates:
            directory = inside(base, replicate.path)
            if directory is None:
                raise XaytuneError("bad-manifest", f"{path}: replicate {replicate.path!r}")
            for digest in replicate.evidence_digests:
                hexdigest = digest.removeprefix("sha256:")
                if len(hexdigest) != 64 or not set(hexdigest) <= set("0123456789abcdef"):
                    raise XaytuneError("bad-manifest", f"{path}: evidence digest {digest!r}")
                name = _join(prefix, f"{replicate.path}/evidence/{hexdigest}{RELEASED_SUFFIX}")
                if name not in evidence:
                    evidence[name] = _published(directory / "evidence", digest)
        raw = json.loads(path.read_bytes())
        raw["reports"] = bundled
        plan.written[_join(prefix, MANIFEST)] = canonical_bytes(raw) + b"\n"
    for name, record in evidence.items():
        plan.written[name] = canonical_bytes(_released(record, plan.disclosure)) + b"\n"
    _check_disclosure(plan)
    for source in sources.values():
        for task_id in source.suite.task_ids:
            plan.scanner.add_reference(source.reference(task_id).model_dump(), task_id)
    shown = [
        tokens_of(text)
        for _, view in manifests
        for text in strings_of(view.config.get("candidates"))
    ]
    for name, record in evidence.items():
        where = name.removesuffix(RELEASED_SUFFIX).rsplit("/evidence/", 1)[0]
        for entry in record.entries:
            for attempt in entry.attempts:
                if attempt.outcome is not None and attempt.outcome.answer is not None:
                    plan.scanner.add_answer(
                        attempt.outcome.answer,
                        f"the answer of task {entry.task_id} ({where}, attempt {attempt.attempt})",
                        shown,
                    )
    return plan


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _disclosure(manifests: list[tuple[Path, ManifestView]]) -> Disclosure:
    """The run's disclosure: aggregate when any manifest says so (the stricter one)."""
    if not manifests:
        raise XaytuneError("not-a-run", "no manifest.json; not an xaytune output tree")
    found = set()
    for path, view in manifests:
        disclosure = view.config.get("disclosure", "aggregate")
        if disclosure not in ("aggregate", "per-task"):
            raise XaytuneError("bad-manifest", f"{path}: disclosure {disclosure!r}")
        found.add(disclosure)
    return "aggregate" if "aggregate" in found else "per-task"


def _suite_source(view: ManifestView, path: Path) -> SuiteSource:
    """The manifest's suite, pinned by its digest: the scan needs its references."""
    return recorded_suite(view, path)


def _report(base: Path, name: str, digest: str, manifest: Path) -> Path:
    """A report the manifest lists, if it is a regular file inside the run with the
    digest recorded (the bundle's manifest claims that digest)."""
    report = inside(base, name)
    if report is None:
        raise XaytuneError("bad-manifest", f"{manifest}: report {name!r} is not inside the run")
    try:
        data = report.read_bytes()
    except OSError as error:
        raise XaytuneError("report-missing", f"{report}: {error.strerror}") from None
    if sha256_digest(data) != digest:
        raise XaytuneError(
            "digest-mismatch",
            f"{report}: not the file {manifest} records; run python -m xaytune.verify",
        )
    return report


def _published(store_root: Path, digest: str) -> HarnessRunEvidence:
    statement = store_root / "published" / f"{digest.removeprefix('sha256:')}.intoto.json"
    subject = PublishedSubject(digest=digest, path=str(statement), store_root=str(store_root))
    return load_published(subject)


def _released(evidence: HarnessRunEvidence, disclosure: Disclosure) -> dict[str, Any]:
    """The released form of one replicate's evidence (module docstring)."""
    entries = []
    for entry in evidence.entries:
        attempts = []
        for attempt in entry.attempts:
            released: dict[str, Any] = {
                "attempt": attempt.attempt,
                "status": attempt.status,
                "recovered": attempt.recovered,
                "record_digest": attempt.record_digest,
                "trajectory_events": attempt.trajectory_events,
                "spend": {key: getattr(attempt.spend, key) for key in SpendRecord.model_fields},
            }
            if disclosure == "per-task" and attempt.outcome is not None:
                released["terminal"] = attempt.outcome.terminal
            attempts.append(released)
        entries.append(
            {
                "position": entry.position,
                "task_id": entry.task_id,
                "spec_fingerprint": entry.spec_fingerprint,
                "status": entry.status,
                "attempts": attempts,
            }
        )
    return {
        "schema": RELEASED_EVIDENCE_SCHEMA,
        "disclosure": disclosure,
        "subject": {"kind": "agent_run_evidence", "digest": evidence.digest},
        "suite_name": evidence.suite_name,
        "suite_digest": evidence.suite_digest,
        "sampling": evidence.sampling.model_dump(mode="json"),
        "assignment_digest": evidence.assignment_digest,
        "seed": evidence.seed,
        "replicate": evidence.replicate,
        "harness_fingerprint": evidence.harness_fingerprint,
        "model": evidence.model.model_dump(mode="json"),
        "withheld": list(WITHHELD_EVIDENCE),
        "entries": entries,
    }


def _check_disclosure(plan: _Plan) -> None:
    """Under aggregate, no bundled report was released per-task (an evaluator configured
    with its own ``metadata.disclosure``): refused, never silently dropped."""
    if plan.disclosure != "aggregate":
        return
    for name, path in plan.copies.items():
        if not name.endswith(".json"):
            continue
        data = json.loads(path.read_bytes())
        header = (data.get("evaluation") or data.get("spec")) if isinstance(data, dict) else None
        if isinstance(header, dict) and header.get("disclosure") == "per-task":
            raise XaytuneError(
                "disclosure-mismatch",
                f"{path}: released per-task, but the run's disclosure is aggregate",
            )


def _write(plan: _Plan, root: Path) -> int:
    """Every bundled file and the index under ``root``; the number of files."""
    digests = {}
    contents = {name: path.read_bytes() for name, path in plan.copies.items()} | plan.written
    for name, data in sorted(contents.items()):
        target = inside(root, name)
        if target is None:  # names come from the manifest: never outside the bundle
            raise XaytuneError("bad-manifest", f"{name!r} is not a path inside the bundle")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        digests[name] = sha256_digest(data)
    index = {
        "schema": BUNDLE_SCHEMA,
        "disclosure": plan.disclosure,
        "xaytune": __version__,
        "files": digests,
        "withheld": plan.withheld,
        "released_evidence_withholds": list(WITHHELD_EVIDENCE),
        "scan": {
            "rules": SCAN_RULES,
            "references": plan.scanner.references,
            "answers": plan.scanner.answers,
        },
    }
    (root / BUNDLE_INDEX).write_bytes(canonical_bytes(index) + b"\n")
    return len(digests) + 1


# ---------------------------------------------------------------- checking a bundle


def check_bundle(bundle: Path) -> list[str]:
    """Problems (one line each) of a bundle read on its own: its index lists exactly its
    files with their digests; each manifest lists exactly the bundled reports, with
    their digests; each released evidence and each evaluation is of evidence its
    manifest records for that replicate. (The scan needs the references, which a
    reader does not have: it ran when the bundle was written.)"""
    try:
        index = json.loads((bundle / BUNDLE_INDEX).read_bytes())
        listed = dict(index["files"])
        if index["schema"] != BUNDLE_SCHEMA:
            raise ValueError(index["schema"])
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        return [f"bundle-mismatch: {bundle / BUNDLE_INDEX}: not a {BUNDLE_SCHEMA} index"]
    problems = []
    present = {
        p.relative_to(bundle).as_posix(): p
        for p in bundle.rglob("*")
        if p.is_file() or p.is_symlink()
    }
    for name in sorted(set(listed) | set(present) - {BUNDLE_INDEX, SIGNATURE_FILE}):
        path = bundle / name
        if name not in present or path.is_symlink():
            problems.append(f"bundle-mismatch: {path}: listed in {BUNDLE_INDEX}, missing")
        elif name not in listed:
            problems.append(f"bundle-mismatch: {path}: not listed in {BUNDLE_INDEX}")
        elif sha256_digest(path.read_bytes()) != listed[name]:
            problems.append(f"bundle-mismatch: {path}: not the file {BUNDLE_INDEX} records")
    for path in sorted(bundle.rglob(MANIFEST)):
        try:
            problems += _manifest_problems(path.parent, read_manifest(path))
        except XaytuneError as error:
            problems.append(str(error))
    return problems


def _manifest_problems(base: Path, view: ManifestView) -> list[str]:
    from xaytune.experiment.tree.manifest import report_files

    problems = []
    for name, digest in view.reports.items():
        report = inside(base, name)
        if report is None or not report.is_file():
            problems.append(f"bundle-mismatch: {base / MANIFEST}: lists {name}, not bundled")
        elif sha256_digest(report.read_bytes()) != digest:
            problems.append(f"bundle-mismatch: {report}: not the file {base / MANIFEST} records")
    for report in report_files(base):
        if report.relative_to(base).as_posix() not in view.reports:
            problems.append(f"bundle-mismatch: {report}: a report {base / MANIFEST} does not list")
    for replicate in view.replicates:
        directory = inside(base, replicate.path)
        if directory is None:
            problems.append(f"bad-manifest: {base / MANIFEST}: replicate {replicate.path!r}")
            continue
        recorded = set(replicate.evidence_digests)
        for digest in recorded:
            path = directory / "evidence" / f"{digest.removeprefix('sha256:')}{RELEASED_SUFFIX}"
            try:
                released = json.loads(path.read_bytes())
                ok = (
                    released["subject"]["digest"] == digest
                    and released["seed"] == replicate.seed
                    and released["assignment_digest"] == replicate.assignment_digest
                )
            except (OSError, ValueError, RecursionError, KeyError, TypeError):
                ok = False
            if not ok:
                problems.append(f"bundle-mismatch: {path}: not the released evidence {digest}")
        for path in sorted(directory.glob("evaluation/*/evaluation.json")):
            try:
                subject = json.loads(path.read_bytes())["evaluation"]["subject_digest"]
            except (OSError, ValueError, RecursionError, KeyError, TypeError):
                subject = None
            if subject not in recorded:
                problems.append(
                    f"bundle-mismatch: {path}: not an evaluation of evidence "
                    f"{base / MANIFEST} records for {replicate.path}"
                )
    return problems
