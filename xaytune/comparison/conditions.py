"""Comparability: pairing (refused when unpaired), C1–C4, timing, config diffs.

spec: Comparing two candidates — C1 the same benchmark cohort; C2 matched
assignments, one replicate per seed on both sides (unpaired designs are refused);
C3 equal evaluation fingerprints; C4 equal declared execution facets. Time metrics
are compared only under one declared timing environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from xaytune.comparison.report import (
    ConditionFailure,
    ConfigChange,
    Difference,
    TimingCheck,
)
from xaytune.core.canonical import canonical_bytes, fingerprint
from xaytune.core.errors import ComparisonError

if TYPE_CHECKING:
    from xaytune.comparison.records import CandidateRuns, ReplicateRuns

__all__ = [
    "check_conditions",
    "check_pairing",
    "check_timing",
    "comparison_key",
    "config_diff",
    "flatten",
    "same_harness",
]

_MISSING = object()


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Leaves of nested dicts under dotted paths; lists and empty dicts are leaves."""
    leaves: dict[str, Any] = {}
    for key, value in mapping.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            leaves.update(flatten(value, prefix=f"{path}."))
        else:
            leaves[path] = value
    return leaves


def config_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[ConfigChange]:
    """Every dotted path at which ``a`` and ``b`` differ, sorted by path.

    Values are compared by their canonical JSON (so ``1`` equals ``1.0``); a path
    present on one side only is "added" (only in b) or "removed" (only in a).
    """
    flat_a, flat_b = flatten(a), flatten(b)
    changes = []
    for path in sorted(set(flat_a) | set(flat_b)):
        value_a, value_b = flat_a.get(path, _MISSING), flat_b.get(path, _MISSING)
        if value_a is _MISSING:
            changes.append(ConfigChange(path=path, change="added", b=value_b))
        elif value_b is _MISSING:
            changes.append(ConfigChange(path=path, change="removed", a=value_a))
        elif canonical_bytes(value_a) != canonical_bytes(value_b):
            changes.append(ConfigChange(path=path, change="changed", a=value_a, b=value_b))
    return changes


def _distinct(values: Iterable[Any]) -> tuple[Any, ...]:
    """Distinct JSON values in canonical order (deterministic, 1 == 1.0)."""
    unique: dict[bytes, Any] = {}
    for value in values:
        unique.setdefault(canonical_bytes(value), value)
    return tuple(unique[key] for key in sorted(unique))


def check_pairing(a: CandidateRuns, b: CandidateRuns) -> tuple[int, ...]:
    """The shared seeds, ascending; an unpaired design is refused ("unpaired-design").

    Paired means: one replicate per seed on each side and the same seed set.
    """
    for candidate in (a, b):
        seeds = [replicate.seed for replicate in candidate.replicates]
        duplicated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
        if duplicated:
            raise ComparisonError(
                "unpaired-design",
                f"candidate {candidate.name} has more than one replicate for seed(s) "
                f"{duplicated}; a paired design has one replicate per seed",
            )
    seeds_a = {replicate.seed for replicate in a.replicates}
    seeds_b = {replicate.seed for replicate in b.replicates}
    if seeds_a != seeds_b:
        raise ComparisonError(
            "unpaired-design",
            f"seed sets differ: only {a.name} has {sorted(seeds_a - seeds_b)}, "
            f"only {b.name} has {sorted(seeds_b - seeds_a)}",
        )
    return tuple(sorted(seeds_a))


def _c1(a: CandidateRuns, b: CandidateRuns, suite_digest: str) -> ConditionFailure | None:
    digests_a = _distinct(r.suite_digest for r in a.replicates)
    digests_b = _distinct(r.suite_digest for r in b.replicates)
    if len(_distinct((*digests_a, *digests_b, suite_digest))) == 1:
        return None
    difference = Difference(item="suite_digest", a=digests_a, b=digests_b, suite=suite_digest)
    return ConditionFailure(condition="C1", reason="suite-differs", differences=(difference,))


def _c2(a: CandidateRuns, b: CandidateRuns, seeds: tuple[int, ...]) -> ConditionFailure | None:
    by_seed_a = {r.seed: r.assignment_digest for r in a.replicates}
    by_seed_b = {r.seed: r.assignment_digest for r in b.replicates}
    differences = tuple(
        Difference(
            item=f"seed {seed} assignment_digest", a=(by_seed_a[seed],), b=(by_seed_b[seed],)
        )
        for seed in seeds
        if by_seed_a[seed] != by_seed_b[seed]
    )
    if not differences:
        return None
    return ConditionFailure(condition="C2", reason="assignment-differs", differences=differences)


def _evaluator_fingerprints(replicate: ReplicateRuns) -> dict[str, str]:
    return {e.evaluator: e.evaluator_fingerprint for e in replicate.evaluations}


def _keyed_differences(
    maps_a: list[dict[str, Any]], maps_b: list[dict[str, Any]], item: str
) -> tuple[Difference, ...]:
    """Each key whose value is not one and the same in every map of both sides
    (None where a map lacks the key: it was not there in that replicate)."""
    keys = sorted({key for mapping in (*maps_a, *maps_b) for key in mapping})
    differences = []
    for key in keys:
        seen_a = _distinct(mapping.get(key) for mapping in maps_a)
        seen_b = _distinct(mapping.get(key) for mapping in maps_b)
        if len(_distinct((*seen_a, *seen_b))) > 1:
            differences.append(Difference(item=item.format(key), a=seen_a, b=seen_b))
    return tuple(differences)


def _c3(a: CandidateRuns, b: CandidateRuns) -> ConditionFailure | None:
    differences = _keyed_differences(
        [_evaluator_fingerprints(r) for r in a.replicates],
        [_evaluator_fingerprints(r) for r in b.replicates],
        "evaluator {}",
    )
    if not differences:
        return None
    return ConditionFailure(condition="C3", reason="evaluator-differs", differences=differences)


def _c4(a: CandidateRuns, b: CandidateRuns) -> ConditionFailure | None:
    differences = _keyed_differences(
        [flatten(r.facets) for r in a.replicates],
        [flatten(r.facets) for r in b.replicates],
        "facets.{}",
    )
    if not differences:
        return None
    return ConditionFailure(condition="C4", reason="facets-differ", differences=differences)


def check_conditions(
    a: CandidateRuns, b: CandidateRuns, suite_digest: str, seeds: tuple[int, ...]
) -> tuple[ConditionFailure, ...]:
    """Every failed condition among C1–C4, in order (empty when comparable)."""
    checks = (_c1(a, b, suite_digest), _c2(a, b, seeds), _c3(a, b), _c4(a, b))
    return tuple(failure for failure in checks if failure is not None)


def check_timing(a: CandidateRuns, b: CandidateRuns) -> TimingCheck:
    """ "same" only when every replicate of both sides declares one environment."""
    seen_a = _distinct(r.timing_environment for r in a.replicates)
    seen_b = _distinct(r.timing_environment for r in b.replicates)
    seen = _distinct((*seen_a, *seen_b))
    if None in seen:
        return TimingCheck(
            status="timing-environment-undeclared", environment=None, a=seen_a, b=seen_b
        )
    if len(seen) > 1:
        return TimingCheck(
            status="timing-environment-differs", environment=None, a=seen_a, b=seen_b
        )
    return TimingCheck(status="same", environment=seen[0], a=seen_a, b=seen_b)


def comparison_key(a: CandidateRuns, suite_digest: str, timing: TimingCheck) -> str:
    """Fingerprint of what a comparable pair held equal (read from side A, which
    equals side B on every item once C1–C4 hold)."""
    first = a.replicates[0]
    held_equal = {
        "suite_digest": suite_digest,
        "assignments": [
            {"seed": r.seed, "assignment_digest": r.assignment_digest}
            for r in sorted(a.replicates, key=lambda r: r.seed)
        ],
        "evaluators": _evaluator_fingerprints(first),
        "facets": first.facets,
        "timing_environment": timing.environment,
    }
    return fingerprint(held_equal)


def same_harness(a: CandidateRuns, b: CandidateRuns) -> bool:
    """The two candidates run the same harness under different names: an A/A
    comparison, whose differences are execution noise.

    Declared configs (the app's harness declarations) are compared without their
    top-level ``name``, which the two candidates of an experiment must not share
    (and which the harness fingerprint covers). Without a declared config beyond
    the name, the fingerprints and configs must be equal.
    """
    config_a = {key: value for key, value in a.harness_config.items() if key != "name"}
    config_b = {key: value for key, value in b.harness_config.items() if key != "name"}
    if config_a or config_b:
        return canonical_bytes(config_a) == canonical_bytes(config_b)
    return a.harness_fingerprint == b.harness_fingerprint and canonical_bytes(
        a.harness_config
    ) == canonical_bytes(b.harness_config)
