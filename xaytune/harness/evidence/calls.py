"""The model calls of an attempt in verified evidence, read back from its trajectory.

An attempt's spend sums its calls; a price table with prompt-size tiers prices each
call by its own prompt, so the calls themselves are needed. They are the
``model_reply`` events of the attempt's trajectory, which the evidence attests
through its seal: :func:`attempt_calls` reads the attempt file again and accepts it
only when it is still the attested one (the same record and seal digests, the
chain verifying from the record to the head and event count the evidence names),
so nothing read here is other than what verification accepted.

A call's usage is recorded as :func:`usage_event` spells it: input, output, cached
and reasoning tokens (null when not reported), and ``cache_write`` (prompt tokens
written to the provider's prompt cache) only when the provider reported it, so a
trajectory of a provider that never reports cache writes (the simulator, the OpenAI
adapter) is byte for byte what it was before the key existed, and so are its digests.

Refusals (``EvidenceError``): ``open-attempt`` (the file has no seal), and
``digest-mismatch`` / ``chain-head-mismatch`` / ``chain-broken`` (the file is not
the attested attempt). An attempt recovered after a crash is refused
(``recovered-attempt``): its spend is a lower bound, and nothing is priced from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from xaytune.core.canonical import sha256_digest
from xaytune.core.errors import EvidenceError
from xaytune.harness.evidence._io import read_file
from xaytune.harness.evidence._records import AttemptEvidence, EvidenceEntry
from xaytune.harness.evidence.attempt_file import split_attempt
from xaytune.harness.evidence.store import HarnessEvidenceStore
from xaytune.harness.evidence.trajectory import verify_chain
from xaytune.models import Usage

__all__ = ["ModelCall", "attempt_calls", "usage_event"]


def usage_event(usage: Usage) -> dict[str, int | None]:
    """One reply's usage as its ``model_reply`` event records it (see the module
    docstring): ``cache_write`` is written only when reported."""
    recorded: dict[str, int | None] = {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cached": usage.cached_tokens,
        "reasoning": usage.reasoning_tokens,
    }
    if usage.cache_write_tokens is not None:
        recorded["cache_write"] = usage.cache_write_tokens
    return recorded


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call that replied, as its ``model_reply`` event records it
    (cached, reasoning and cache-write tokens None when the provider did not report
    them)."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int | None
    reasoning_tokens: int | None
    time_us: int
    cache_write_tokens: int | None = None


def attempt_calls(
    store: HarnessEvidenceStore, entry: EvidenceEntry, attempt: AttemptEvidence
) -> tuple[ModelCall, ...]:
    """The calls of ``attempt`` (of the task ``entry``) that replied, in order."""
    path = store.attempt_file(entry.position, attempt.attempt)
    where = f"task {entry.task_id} attempt {attempt.attempt:03d} ({path})"
    if attempt.recovered:
        raise EvidenceError(
            "recovered-attempt", f"{where}: recovered after a crash; its calls are not priced"
        )
    data = read_file(path)
    layout = split_attempt(data, where)
    if not layout.sealed:
        raise EvidenceError("open-attempt", f"{where}: open (no seal)")
    if (
        sha256_digest(data[layout.events_end :]) != attempt.seal_digest
        or sha256_digest(data[layout.spec_end : layout.record_end]) != attempt.record_digest
    ):
        raise EvidenceError("digest-mismatch", f"{where}: not the attempt the evidence attests")
    facts = verify_chain(
        data,
        genesis=attempt.record_digest,
        where=where,
        start=layout.record_end,
        end=layout.events_end,
    )
    if facts.head != attempt.trajectory_head or facts.count != attempt.trajectory_events:
        raise EvidenceError(
            "chain-head-mismatch", f"{where}: the trajectory is not the one the evidence attests"
        )
    calls = []
    for line in data[layout.record_end : layout.events_end].splitlines():
        if b'"type":"model_reply"' not in line:
            continue
        event = json.loads(line)
        if event["type"] != "model_reply":
            continue
        usage = event["v"]["usage"]
        calls.append(
            ModelCall(
                input_tokens=usage["input"],
                output_tokens=usage["output"],
                cached_tokens=usage["cached"],
                reasoning_tokens=usage["reasoning"],
                time_us=event["v"]["time_us"],
                # Absent: not reported (a writer never writes it null).
                cache_write_tokens=usage.get("cache_write"),
            )
        )
    return tuple(calls)
