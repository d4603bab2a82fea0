"""Every look at a run tree, recorded and hash-chained (``looks.json``).

A *look* is each time a comparison is written for a tree: the first run, each
extension with more seeds (``resume=<tree>`` with a longer ``seeds`` list), each
comparison made again (``python -m xaytune.compare``). One record per look, in
``{"schema": "xaytune.looks/v1", "looks": [...]}``: its number, the seeds it saw, the
method, the directory written, each challenger's relation and the objective verdicts
its released report shows, the digest of the previous look's record (``previous``)
and its own ``digest`` (sha256 of the canonical record without it).
So a look cannot be dropped, reordered or edited without ``python -m xaytune.verify``
refusing the tree with ``looks-broken`` (and the manifest digests the file, so an
edit that is not re-chained is a ``digest-mismatch`` too).

Why: under the fixed paired-difference/v1 rule, adding seeds until a verdict appears
inflates the false-favor rate (optional stopping; issue 30 measured 32% for a
nominal 8%). The looks make that visible: a tree whose seeds grew after a comparison
was written carries :func:`optional_stopping_warning`. sequential-paired/v1 holds
its alpha over any number of looks, so it carries none.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from xaytune.comparison.compare import ComparisonReport, Look, Looks
from xaytune.core.canonical import canonical_bytes, sha256_digest
from xaytune.core.errors import XaytuneError
from xaytune.experiment.tree.intent import read_intent
from xaytune.harness.evidence.store import atomic_write

__all__ = [
    "LOOKS_FILE",
    "LOOKS_REPORT",
    "LOOKS_SCHEMA",
    "append_look",
    "looks_before",
    "looks_problems",
    "looks_table",
    "optional_stopping_warning",
    "read_looks",
    "record_look",
    "with_looks",
]

LOOKS_FILE = "looks.json"
LOOKS_SCHEMA = "xaytune.looks/v1"


def _digest(record: dict[str, Any]) -> str:
    return sha256_digest(canonical_bytes({k: v for k, v in record.items() if k != "digest"}))


def read_looks(tree: Path) -> list[dict[str, Any]]:
    """The looks recorded in ``tree`` (none before its first comparison); refuses a
    file that is not a looks record with ``looks-broken``."""
    path = tree / LOOKS_FILE
    if not path.exists():
        return []
    try:
        document = json.loads(path.read_bytes())
    except ValueError:
        raise XaytuneError("looks-broken", f"{path}: not JSON") from None
    looks = document.get("looks") if isinstance(document, dict) else None
    if document.get("schema") != LOOKS_SCHEMA or not isinstance(looks, list):
        raise XaytuneError("looks-broken", f"{path}: not a {LOOKS_SCHEMA} record")
    for number, look in enumerate(looks, start=1):
        if not isinstance(look, dict):
            raise XaytuneError("looks-broken", f"{path}: look {number} is not a look record")
    return looks


def looks_problems(tree: Path, seeds: Sequence[int]) -> list[str]:
    """Why the looks of ``tree`` do not verify (empty when they do): each record's
    digest is its content's, each names the previous one's, numbers run 1, 2, ...,
    each look saw a subset of the tree's ``seeds`` and no fewer seeds than the one
    before, and the last saw all of them."""
    path = tree / LOOKS_FILE
    try:
        looks = read_looks(tree)
    except XaytuneError as error:
        return [str(error)]
    except OSError as error:
        return [f"looks-broken: {path}: unreadable ({error.strerror})"]
    problems, previous, seen = [], None, 0
    for index, look in enumerate(looks, start=1):
        where = f"looks-broken: {path}: look {index}"
        if look.get("digest") != _digest(look):
            problems.append(f"{where}: its digest is not its content's (edited)")
        if look.get("previous") != previous:
            problems.append(f"{where}: does not chain to look {index - 1} (a look was removed?)")
        if look.get("look") != index:
            problems.append(f"{where}: is numbered {look.get('look')!r}")
        look_seeds = look.get("seeds")
        if not isinstance(look_seeds, list) or not set(look_seeds) <= set(seeds):
            problems.append(f"{where}: saw seeds {look_seeds!r}, not the tree's {list(seeds)}")
        elif len(look_seeds) < seen:
            problems.append(f"{where}: saw fewer seeds than the look before it")
        else:
            seen = len(look_seeds)
        previous = look.get("digest")
    if looks and sorted(looks[-1].get("seeds") or []) != sorted(seeds):
        problems.append(f"looks-broken: {path}: the last look did not see every seed of the tree")
    problems.extend(_unlooked_extensions(tree, looks))
    return problems


def _unlooked_extensions(tree: Path, looks: Sequence[dict[str, Any]]) -> list[str]:
    """Every intent the tree was run under (the ones its extensions kept whole in
    ``previous``, which its replicates' attempts carry by digest) was compared when it
    finished, so each one's seeds are the seeds of some look. This anchors the chain:
    a look dropped and the file re-chained is still refused. A tree with no looks
    predates them (the manifest lists ``looks.json`` when it was written)."""
    if not looks:
        return []
    try:
        intent, _ = read_intent(tree)
    except (XaytuneError, OSError, ValueError):
        return []  # the intent's own problems are the audit's, reported there
    earlier = intent.get("previous")
    earlier = earlier if isinstance(earlier, list) else []
    seen = {tuple(sorted(look.get("seeds") or [])) for look in looks}
    problems = []
    for number, stage in enumerate([*earlier, intent], start=1):
        seeds = stage.get("seeds") if isinstance(stage, dict) else None
        if isinstance(seeds, list) and tuple(sorted(seeds)) not in seen:
            problems.append(
                f"looks-broken: {tree / LOOKS_FILE}: no look saw seeds {sorted(seeds)}, "
                f"the seeds of the run's intent {number} (a look was removed)"
            )
    return problems


def append_look(
    tree: Path,
    directory: str,
    written: Sequence[tuple[str, ComparisonReport]],
    reason: str,
    *,
    withheld: Collection[str] = (),
) -> dict[str, Any]:
    """Record a look: ``written`` is (challenger label, report) per comparison just
    written into ``directory`` (relative to ``tree``); ``reason`` says why (run,
    extension, resume, recompare); ``withheld``: the challengers not compared (their
    model errors, xaytune.experiment.attempt_errors), recorded ``not-compared`` with no
    verdict, as their reports show them. Returns the record."""
    looks = read_looks(tree)
    first = written[0][1]
    # What the released reports show, nothing more: a look is shareable as they are.
    record: dict[str, Any] = {
        "look": len(looks) + 1,
        "reason": reason,
        "directory": directory,
        "method": first.method,
        "seeds": sorted(first.seeds),
        "decisions": {
            label: {"relation": "not-compared", "verdicts": {}}
            if label in withheld
            else {
                "relation": report.relation,
                "verdicts": {
                    o.metric: released.metrics[o.metric].verdict
                    for o in report.spec.objectives
                    if o.metric in (released := report.released()).metrics
                },
            }
            for label, report in written
        },
        "previous": looks[-1]["digest"] if looks else None,
    }
    record["digest"] = _digest(record)
    document = {"schema": LOOKS_SCHEMA, "looks": [*looks, record]}
    atomic_write(tree / LOOKS_FILE, canonical_bytes(document) + b"\n")
    return record


def optional_stopping_warning(looks: Sequence[dict[str, Any]]) -> str | None:
    """The warning for a tree whose seeds grew after a comparison was written under
    the fixed paired-difference/v1 rule; None otherwise."""
    if not looks or looks[-1].get("method") != "paired-difference/v1":
        return None
    counts = [len(look.get("seeds") or []) for look in looks]
    if counts[-1] <= counts[0]:
        return None
    return (
        f"optional stopping: this tree was looked at {len(looks)} times as its seeds grew "
        f"from {counts[0]} to {counts[-1]}; under paired-difference/v1 adding seeds until a "
        "verdict appears raises the false-favor rate above the A/A rate stated for one "
        "look. Use comparison=sequential to extend a tree safely."
    )


def looks_table(looks: Sequence[dict[str, Any]]) -> str:
    """The looks as a markdown table, with the optional-stopping warning if any."""
    lines = [
        f"# Looks at this tree ({len(looks)})",
        "",
        "| look | reason | seeds | method | directory | relation |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for look in looks:
        relations = ", ".join(
            f"{label}: {decision['relation']}"
            for label, decision in sorted(look.get("decisions", {}).items())
        )
        lines.append(
            f"| {look.get('look')} | {look.get('reason')} | {len(look.get('seeds') or [])} | "
            f"{look.get('method')} | {look.get('directory')} | {relations} |"
        )
    warning = optional_stopping_warning(looks)
    if warning:
        lines += ["", f"**Warning** — {warning}"]
    return "\n".join(lines) + "\n"


LOOKS_REPORT = "looks.md"


def record_look(
    tree: Path,
    directory: str,
    written: Sequence[tuple[str, ComparisonReport]],
    *,
    withheld: Collection[str] = (),
) -> str:
    """Append the look of comparisons just written (the reason: ``run`` for the first,
    ``extension`` when the seeds grew, ``again`` otherwise; ``withheld``: challengers
    not compared), rewrite ``looks.md``, and return the optional-stopping warning, if
    any."""
    looks = read_looks(tree)
    seeds = len(written[0][1].seeds)
    if not looks:
        reason = "run"
    elif directory != "comparison":
        reason = "recompare"
    else:
        reason = "extension" if seeds > len(looks[-1].get("seeds") or []) else "again"
    append_look(tree, directory, written, reason, withheld=withheld)
    looks = read_looks(tree)
    atomic_write(tree / LOOKS_REPORT, looks_table(looks).encode())
    return optional_stopping_warning(looks) or ""


def looks_before(looks: Sequence[dict[str, Any]], directory: str) -> list[dict[str, Any]]:
    """The looks recorded before the last one that wrote ``directory`` (what its
    report was written with; all of them when none wrote it)."""
    last = max(
        (i for i, look in enumerate(looks) if look.get("directory") == directory), default=None
    )
    return list(looks if last is None else looks[:last])


def with_looks(report: ComparisonReport, before: Sequence[dict[str, Any]]) -> ComparisonReport:
    """``report`` with the looks at its tree (``before`` it, and itself) when it is not
    the first look; unchanged when it is."""
    if not before:
        return report
    rows = [
        Look(
            look=int(look.get("look", i)),
            seeds=len(look.get("seeds") or []),
            method=look.get("method", "paired-difference/v1"),
            relation=", ".join(
                str(d.get("relation")) for _, d in sorted((look.get("decisions") or {}).items())
            ),
        )
        for i, look in enumerate(before, start=1)
    ]
    rows.append(
        Look(
            look=len(rows) + 1,
            seeds=len(report.seeds),
            method=report.method,
            relation=report.relation,
        )
    )
    stopping = report.method == "paired-difference/v1" and rows[-1].seeds > rows[0].seeds
    return report.model_copy(
        update={"looks": Looks(count=len(rows), looks=tuple(rows), optional_stopping=stopping)}
    )
