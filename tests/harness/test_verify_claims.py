"""What verification compares without building typed records, and the pieces it uses.

``verify_run_evidence`` compares each claimed attempt with its parsed seal value by
value, and each stored record with a template of the record the facts give; these
tests hold those shortcuts to what building and comparing the records would decide.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from _fixtures_run import refused
from hypothesis import given, settings
from hypothesis import strategies as st
from journal_edits import recommit_seal

from xaytune.core.canonical import canonical_bytes
from xaytune.harness.evidence import AttemptEvidence, EvidenceEntry, HarnessRunEvidence
from xaytune.harness.evidence.attempt import RecordTemplate, attribution_facts, record_bytes
from xaytune.harness.evidence.attempt_file import AttemptParts, parse_line
from xaytune.harness.evidence.rebuild_attempt import Expected
from xaytune.harness.evidence.store import Outcome, SpendRecord
from xaytune.models import ModelIdentity

POSITION = 3
OTHER_DIGEST = "sha256:" + "ab" * 32


def replace_attempt(evidence: HarnessRunEvidence, **update) -> HarnessRunEvidence:
    """``evidence`` with the attempt at POSITION changed by ``update`` (not resealed)."""
    entries = list(evidence.entries)
    entry = entries[POSITION]
    attempts = (entry.attempts[0].model_copy(update=update), *entry.attempts[1:])
    entries[POSITION] = entry.model_copy(update={"attempts": attempts})
    return evidence.model_copy(update={"entries": tuple(entries)})


def with_attempt(evidence: HarnessRunEvidence, **update) -> HarnessRunEvidence:
    """``evidence`` resealed with the attempt at POSITION changed by ``update``."""
    return replace_attempt(evidence, **update).sealed()


def _spend_plus_one(attempt: AttemptEvidence) -> SpendRecord:
    return attempt.spend.model_copy(update={"turns": attempt.spend.turns + 1})


FORGERIES = {
    "status": lambda a: "partial",
    "outcome-answer": lambda a: a.outcome.model_copy(update={"answer": "-1"}),
    "outcome-terminal": lambda a: a.outcome.model_copy(update={"terminal": "budget-stop"}),
    "outcome-none": lambda a: None,
    "spend": _spend_plus_one,
    "record_digest": lambda a: OTHER_DIGEST,
    "seal_digest": lambda a: OTHER_DIGEST,
    "trajectory_head": lambda a: OTHER_DIGEST,
    "trajectory_events": lambda a: a.trajectory_events + 1,
    "recovered": lambda a: True,
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_each_forged_attempt_fact_is_refused_naming_task_and_attempt(verified_run, forgery):
    evidence = verified_run.evidence
    attempt = evidence.entries[POSITION].attempts[0]
    field = forgery.split("-")[0]
    forged = with_attempt(evidence, **{field: FORGERIES[forgery](attempt)})
    assert forged.entries[POSITION].attempts[0] != attempt
    error = refused(lambda: verified_run.verify(forged), "digest-mismatch")
    assert f"task {evidence.entries[POSITION].task_id} attempt 001" in str(error)
    assert str(verified_run.attempt_file(POSITION)) in str(error)
    verified_run.verify()


class CheapSpend(SpendRecord):
    """A spend that reports no tokens, whatever it holds."""

    @property
    def total_tokens(self) -> int:
        return 0


ILL_TYPED = {
    "a float spend": lambda a: {"spend": a.spend.model_copy(update={"turns": 1.5})},
    "a bool attempt number": lambda a: {"attempt": True},
    "an unknown terminal": lambda a: {
        "outcome": a.outcome.model_copy(update={"terminal": "gave-up"})
    },
    "an int answer": lambda a: {"outcome": a.outcome.model_copy(update={"answer": 2996})},
    "no spend record": lambda a: {"spend": None},
    "a spend dict": lambda a: {"spend": a.spend.model_dump()},
    "a spend subclass": lambda a: {"spend": CheapSpend(**a.spend.model_dump())},
    "an unknown status": lambda a: {"status": "weird"},
    "a list attempt number": lambda a: {"attempt": [1]},
    "a list status": lambda a: {"status": ["complete"]},
    "a list terminal": lambda a: {"outcome": a.outcome.model_copy(update={"terminal": ["answer"]})},
    "a text attempt number": lambda a: {"attempt": "1"},
    "an outcome with an extra value": lambda a: {
        "outcome": with_private(a.outcome, "__pydantic_extra__", {"note": "x"})
    },
    "a spend with a private value": lambda a: {
        "spend": with_private(a.spend, "__pydantic_private__", {"_note": "x"})
    },
}


def with_private(record, slot: str, value: dict):
    """A copy of ``record`` whose ``slot`` holds ``value`` (no validation would give it)."""
    copied = record.model_copy()
    object.__setattr__(copied, slot, value)
    return copied


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("forgery", sorted(ILL_TYPED))
def test_a_claim_validation_would_refuse_is_refused(verified_run, forgery):
    # model_copy(update=...) skips validation: a claim can hold what no validated
    # evidence holds. Verification refuses it, whatever the store says.
    evidence = verified_run.evidence
    attempt = evidence.entries[POSITION].attempts[0]
    forged = with_attempt(evidence, **ILL_TYPED[forgery](attempt))
    error = refused(lambda: verified_run.verify(forged), "digest-mismatch")
    assert f"task {evidence.entries[POSITION].task_id}" in str(error)


ILL_TYPED_ENTRIES = {
    "a float position": {"position": float(POSITION)},
    "a list task id": {"task_id": ["arith"]},
    "a text attempt number listed twice": None,  # built below
}


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("forgery", sorted(ILL_TYPED_ENTRIES))
def test_an_entry_validation_would_refuse_is_refused_not_crashed(verified_run, forgery):
    evidence = verified_run.evidence
    entries = list(evidence.entries)
    entry = entries[POSITION]
    update = ILL_TYPED_ENTRIES[forgery]
    if update is None:
        text = entry.attempts[0].model_copy(update={"attempt": "1"})
        update = {"attempts": (text, text)}
    entries[POSITION] = entry.model_copy(update=update)
    forged = evidence.model_copy(update={"entries": tuple(entries)})
    error = refused(lambda: verified_run.verify(forged), "digest-mismatch")
    assert "validation would refuse" in str(error)
    assert "task " in str(error)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize(
    "update",
    [
        {"replicate": True},
        {"schema_": ["xaytune.harness-run-evidence/v1"]},
        {"seed": float(1)},
        {"suite_name": None},
        {"sampling": {"count": 20}},
        {"model": {"provider": "p", "model": "m", "revision": "r", "parameters": {}}},
    ],
    ids=repr,
)
def test_evidence_facts_validation_would_refuse_are_refused(verified_run, update):
    forged = verified_run.evidence.model_copy(update=update)
    error = refused(lambda: verified_run.verify(forged), "digest-mismatch")
    assert "the evidence object holds a value validation would refuse" in str(error)


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize(
    "parameter",
    ["\ud800", 2**60, object(), nested(300), nested(100_000)],
    ids=["lone surrogate", "unsafe integer", "not JSON", "deep", "deeper than recursion"],
)
def test_evidence_with_no_canonical_form_is_refused_not_crashed(verified_run, parameter):
    evidence = verified_run.evidence
    model = evidence.model.model_copy(update={"parameters": {"note": parameter}})
    forged = evidence.model_copy(update={"model": model})
    error = refused(lambda: verified_run.verify(forged), "digest-mismatch")
    assert "the evidence's facts (suite, sampling, seed, model) has no canonical" in str(error)


@pytest.mark.parametrize(
    "update",
    [
        lambda a: {"outcome": a.outcome.model_copy(update={"answer": "\udc80"})},
        lambda a: {"spend": a.spend.model_copy(update={"turns": 2**60})},
    ],
    ids=["lone surrogate answer", "unsafe integer spend"],
)
def test_an_attempt_with_no_canonical_form_is_named(verified_run, update):
    evidence = verified_run.evidence
    forged = replace_attempt(evidence, **update(evidence.entries[POSITION].attempts[0]))
    error = refused(lambda: verified_run.verify(forged), "digest-mismatch")
    task = evidence.entries[POSITION].task_id
    assert f"task {task} attempt 001 (in the evidence) has no canonical JSON form" in str(error)


@pytest.mark.parametrize("count", [10**6, 0, -1])
def test_a_sampling_no_assignment_has_is_refused_not_crashed(verified_run, count):
    evidence = verified_run.evidence
    sampling = evidence.sampling.model_copy(update={"count": count})
    forged = evidence.model_copy(update={"sampling": sampling}).sealed()
    error = refused(lambda: verified_run.verify(forged), "assignment-mismatch")
    assert f"seed {evidence.seed}: no assignment of this suite" in str(error)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_attempts_in_a_list_are_not_a_valid_entry(verified_run):
    evidence = verified_run.evidence
    entries = list(evidence.entries)
    entries[POSITION] = entries[POSITION].model_copy(
        update={"attempts": list(entries[POSITION].attempts)}
    )
    forged = evidence.model_copy(update={"entries": tuple(entries)}).sealed()
    refused(lambda: verified_run.verify(forged), "digest-mismatch")


def test_an_attempt_listed_twice_is_refused(verified_run):
    evidence = verified_run.evidence
    entries = list(evidence.entries)
    entry = entries[POSITION]
    entries[POSITION] = EvidenceEntry(**{**entry.__dict__, "attempts": entry.attempts * 2})
    forged = evidence.model_copy(update={"entries": tuple(entries)}).sealed()
    error = refused(lambda: verified_run.verify(forged), "attempt-missing")
    assert "twice" in str(error)


def test_a_forged_entry_status_is_refused(verified_run):
    evidence = verified_run.evidence
    entries = list(evidence.entries)
    entries[POSITION] = entries[POSITION].model_copy(update={"status": "no-attested-result"})
    forged = evidence.model_copy(update={"entries": tuple(entries)}).sealed()
    error = refused(lambda: verified_run.verify(forged), "digest-mismatch")
    assert f"task {entries[POSITION].task_id}: entry" in str(error)


def test_a_claim_of_another_type_is_refused(verified_run):
    class Lookalike(AttemptEvidence):
        pass

    evidence = verified_run.evidence
    attempt = evidence.entries[POSITION].attempts[0]
    entries = list(evidence.entries)
    entries[POSITION] = entries[POSITION].model_copy(
        update={"attempts": (Lookalike(**attempt.__dict__),)}
    )
    forged = evidence.model_copy(update={"entries": tuple(entries)})
    refused(lambda: verified_run.verify(forged.sealed()), "digest-mismatch")


def test_outcome_and_spend_fields_are_their_json_values():
    # Verification compares a claim's outcome and spend with the parsed seal as
    # their __dict__: that holds while every field is a plain JSON value.
    outcome = Outcome(terminal="answer", answer="42", detail=None)
    spend = SpendRecord(**{name: i + 1 for i, name in enumerate(SpendRecord.model_fields)})
    for record in (outcome, spend):
        assert record.__dict__ == json.loads(record.model_dump_json())
        assert all(isinstance(v, str | int | type(None)) for v in record.__dict__.values())


# -- the seal, as the store holds it -------------------------------------------------


def seal_of(path: Path) -> dict:
    parts = AttemptParts.of(path.read_bytes(), str(path))
    assert parts.seal is not None
    return json.loads(parts.seal)


def write_seal(path: Path, seal: dict) -> None:
    """Write ``seal`` as sorted, compact JSON (the canonical form, but a float stays
    one: ``1.0``, which RFC 8785 writes as ``1``)."""
    line = json.dumps(seal, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    write_seal_line(path, line.encode() + b"\n")


def rewrite_end(path: Path, edit, *, seal_values: bool = True) -> None:
    """Rewrite the end event with ``edit(v)``, re-chain it and reseal to match (what
    someone with write access to the store can do: seals are not signed); with
    ``seal_values=False`` the seal keeps its status, outcome and spend."""
    data = path.read_bytes()
    parts = AttemptParts.of(data, str(path))
    events = [json.loads(line) for line in parts.events]
    end = events[-1]
    assert end["type"] == "end"
    edit(end["v"])
    prev = "sha256:" + hashlib.sha256(parts.record).hexdigest()
    lines = []
    for event in events:
        event["prev"] = prev
        line = (
            json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
        ).encode()
        lines.append(line)
        prev = "sha256:" + hashlib.sha256(line).hexdigest()
    seal = json.loads(parts.seal)
    if seal_values:
        v = end["v"]
        seal.update(status=v["status"], outcome=v["outcome"], spend=v["spend"])
    seal["trajectory"].update(head=prev, bytes=sum(map(len, lines)), events=len(lines))
    line = json.dumps(seal, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    path.write_bytes(replace(parts, events=tuple(lines), seal=line.encode() + b"\n").join())


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda s: s["trajectory"].update(writer="someone-else/v9"), "another writer"),
        (lambda s: s.pop("recovered"), "missing or adding recovered"),
        (lambda s: s.pop("status"), "missing or adding status"),
        (lambda s: s.pop("spend"), "missing or adding spend"),
        (lambda s: s.update(note="added"), "missing or adding note"),
        (lambda s: s.pop("trajectory"), "missing or adding trajectory"),
        (lambda s: s["trajectory"].update(bytes="12"), "ill-typed"),
        (lambda s: s.update(attempt="1"), "ill-typed"),
        (lambda s: s.update(recovered=0), "ill-typed"),
        (lambda s: s.update(status="weird"), "ill-typed"),
        (lambda s: s.update(status=["complete"]), "ill-typed"),
        (lambda s: s.update(status={"complete": 1}), "ill-typed"),
        (lambda s: s.update(spend="none"), "spend is not a JSON object"),
        (lambda s: s["spend"].update(turns=float(s["spend"]["turns"])), "ill-typed"),
        (lambda s: s["spend"].update(turns=True), "ill-typed"),
        (lambda s: s["outcome"].update(answer=2996), "ill-typed"),
        (lambda s: s["outcome"].update(terminal="gave-up"), "ill-typed outcome"),
        (lambda s: s["outcome"].update(terminal=["answer"]), "ill-typed outcome"),
        (lambda s: s["outcome"].pop("detail"), "outcome is missing or adding detail"),
        (lambda s: s["spend"].update(turns=-1), "ill-typed spend"),
        (lambda s: s["spend"].update(turns=2**60), "ill-typed spend"),
        (lambda s: s["spend"].pop("retries"), "spend is missing or adding retries"),
        (lambda s: s["trajectory"].update(bytes=-1), "ill-typed facts"),
        (lambda s: s["trajectory"].update(head=None), "ill-typed facts"),
        (lambda s: s["trajectory"].update(note=1), "trajectory is missing or adding note"),
        (lambda s: s.update(schema="xaytune.attempt-seal/v0"), "another schema"),
        (lambda s: s.update(schema=["xaytune.attempt-seal/v1"]), "another schema"),
    ],
)
def test_a_malformed_seal_is_a_bad_seal_for_verify_and_assembly(verified_run, edit, why):
    path = verified_run.attempt_file(POSITION)
    seal = seal_of(path)
    edit(seal)
    write_seal(path, seal)
    error = refused(verified_run.verify, "bad-seal")
    assert str(path) in str(error) and why in str(error)
    refused(verified_run.assemble, "bad-seal")


def write_seal_line(path: Path, line: bytes) -> None:
    parts = AttemptParts.of(path.read_bytes(), str(path))
    path.write_bytes(replace(parts, seal=line).join())


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"attempt":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "nested too deeply"),
        (rb'{"attempt":1,"note":"\ud800"}' + b"\n", "lone surrogate"),
    ],
    ids=["deeply nested", "lone surrogate"],
)
def test_a_seal_no_writer_could_write_is_a_bad_seal_not_a_crash(verified_run, line, why):
    path = verified_run.attempt_file(POSITION)
    write_seal_line(path, line)
    for step in (verified_run.verify, verified_run.assemble):
        error = refused(step, "bad-seal")
        assert str(path) in str(error) and why in str(error)


def test_a_lone_surrogate_in_a_sealed_answer_is_a_bad_seal(verified_run):
    # The seal is the canonical seal of its facts but for one escape: an answer no
    # UTF-8 file holds, which no evidence could record.
    path = verified_run.attempt_file(POSITION)
    seal = seal_of(path)
    answer = seal["outcome"]["answer"]
    line = canonical_bytes(seal).replace(f'"answer":"{answer}"'.encode(), rb'"answer":"\udc80"')
    assert line != canonical_bytes(seal)
    write_seal_line(path, line + b"\n")
    for step in (verified_run.verify, verified_run.assemble):
        error = refused(step, "bad-seal")
        assert "lone surrogate" in str(error)


@pytest.mark.parametrize("key", ["detail", "answer"])
def test_a_rechained_seal_missing_an_outcome_key_is_a_bad_seal(verified_run, key):
    # The end event and the seal agree and the chain verifies, but no writer leaves a
    # key out: assembly refuses it rather than fill in the default.
    path = verified_run.attempt_file(POSITION)
    rewrite_end(path, lambda v: v["outcome"].pop(key))
    for step in (verified_run.verify, verified_run.assemble):
        error = refused(step, "bad-seal")
        assert str(path) in str(error) and f"outcome is missing or adding {key}" in str(error)


def test_a_rechained_unsafe_spend_is_a_bad_seal(verified_run):
    # End event and seal agree on a count canonical JSON cannot write exactly.
    path = verified_run.attempt_file(POSITION)
    rewrite_end(path, lambda v: v["spend"].update(turns=2**60))
    for step in (verified_run.verify, verified_run.assemble):
        error = refused(step, "bad-seal")
        assert str(path) in str(error) and "ill-typed spend" in str(error)


@pytest.mark.parametrize(
    "edit",
    [
        lambda v: v["spend"].update(turns=float(v["spend"]["turns"])),
        lambda v: v["spend"].update(retries=bool(v["spend"]["retries"])),
        lambda v: v["outcome"].update(answer=int(v["outcome"]["answer"])),
    ],
    ids=["float turns", "bool retries", "int answer"],
)
def test_an_end_event_equal_to_its_seal_only_in_python_is_refused(verified_run, edit):
    # 5.0 == 5 and False == 0 in Python, not in JSON: the end event, re-chained, says
    # another thing than the seal, whose values are left as they were.
    path = verified_run.attempt_file(POSITION)
    assert seal_of(path)["spend"]["retries"] in (0, 1)
    rewrite_end(path, edit, seal_values=False)
    for step in (verified_run.verify, verified_run.assemble):
        error = refused(step, "false-complete")
        assert str(path) in str(error) and "does not match the trajectory's end" in str(error)


def test_a_seal_that_is_not_json_is_a_bad_seal(verified_run):
    path = verified_run.attempt_file(POSITION)
    data = path.read_bytes()
    path.write_bytes(data[:-3] + b"!}\n")
    refused(verified_run.verify, "bad-seal")


def test_an_ill_typed_outcome_rechained_and_resealed_is_refused(verified_run):
    # The end event and the seal agree and the chain verifies: only the types say no.
    path = verified_run.attempt_file(POSITION)
    rewrite_end(path, lambda v: v["outcome"].update(terminal="gave-up"))
    for step in (verified_run.verify, verified_run.assemble):
        error = refused(step, "bad-seal")
        assert str(path) in str(error) and "ill-typed outcome" in str(error)


def test_a_rechained_and_resealed_answer_is_still_refused_by_the_evidence(verified_run):
    # Rewriting a store consistently defeats the store's own checks (seals are not
    # signed), but not the evidence recorded before: its seal digest differs.
    path = verified_run.attempt_file(POSITION)
    rewrite_end(path, lambda v: v["outcome"].update(answer="-1"))
    refused(verified_run.verify, "seal-mismatch")  # the seal journal lists the old seal
    recommit_seal(path)  # ... re-chained too
    refused(verified_run.verify, "digest-mismatch")
    reassembled = verified_run.assemble()
    assert reassembled.entries[POSITION].attempts[0].outcome.answer == "-1"


# -- the record template --------------------------------------------------------------

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    number=st.integers(1, 999),
    position=st.integers(0, 10**6),
    task_id=TEXT,
    spec_fingerprint=TEXT | st.just("sha256:" + "0f" * 32),
    name=TEXT,
    seed=st.integers(0, 2**53 - 1),
)
def test_record_template_lines_are_the_records_record_bytes_writes(
    number, position, task_id, spec_fingerprint, name, seed
):
    facts = {
        "suite_digest": "sha256:" + "1" * 64,
        "assignment_digest": "sha256:" + "2" * 64,
        "seed": seed,
        "replicate": 2,
        "harness_fingerprint": "sha256:" + "3" * 64,
    }
    model = canonical_bytes({"model": name, "parameters": {"fmt": "%s %d %%"}})
    template = RecordTemplate(**facts, model=model)
    line = template.line(
        number, task_id=task_id, position=position, spec_fingerprint=spec_fingerprint
    )
    attribution = attribution_facts(
        **facts, task_id=task_id, position=position, spec_fingerprint=spec_fingerprint
    )
    assert line == record_bytes(number, attribution, model)
    assert json.loads(line)["attribution"]["task_id"] == task_id


# -- one line, one JSON value ---------------------------------------------------------


def test_parse_line_reads_one_value_with_or_without_its_newline():
    assert parse_line(b'{"a":[1,"\xc3\xa9"]}\n') == {"a": [1, "é"]}
    assert parse_line(b'{"a":1}') == {"a": 1}
    # An escape is fine when it is text: a control character, a surrogate pair, an
    # escaped backslash before "ud800".
    escapes = rb'["\u0001","\ud83d\ude00","\\ud800"]'
    assert parse_line(escapes) == ["\x01", "\U0001f600", "\\ud800"]


@pytest.mark.parametrize(
    "line",
    [
        b'{"a":1}{"b":2}\n',
        b'{"a":1}\n\n',
        b'{"a":1} \n',
        b"",
        b'{"a":',
        b"\xff\n",
        b"[" * 100_000 + b"]" * 100_000,
        rb'["\ud800"]',
        rb'["\uDFFF\u0041"]',
    ],
    ids=lambda line: repr(line[:24]),
)
def test_parse_line_refuses_anything_but_one_value(line):
    with pytest.raises(ValueError):
        parse_line(line)


def test_an_entry_is_its_rebuilt_entry(verified_run):
    # The typed entry assembly builds is the one verification compares with.
    rebuilt = verified_run.assemble()
    assert rebuilt == verified_run.evidence
    assert all(type(entry) is EvidenceEntry for entry in rebuilt.entries)


# -- a record the template cannot stand for --------------------------------------------


def test_a_model_holding_a_template_placeholder_is_compared_without_the_template(verified_run):
    # A model parameter that spells the template's own placeholder: no template, every
    # record is parsed and compared field by field instead (just as strict).
    expected = Expected(
        verified_run.suite, verified_run.assignment, "sha256:" + "0" * 64, replicate=0
    )
    model = ModelIdentity(provider="p", model="m", revision="r", parameters={"note": "\x00task_id"})
    expected.learn_model(model)
    assert expected.learned and expected.records is None and expected.model == model


def test_a_record_edited_to_hold_a_template_placeholder_is_refused_not_crashed(verified_run):
    path = verified_run.attempt_file(0)
    parts = AttemptParts.of(path.read_bytes(), str(path))
    record = json.loads(parts.record)
    record["model"]["parameters"]["note"] = "\x00task_id"
    path.write_bytes(replace(parts, record=canonical_bytes(record) + b"\n").join())
    refused(verified_run.verify, "digest-mismatch")
    refused(verified_run.assemble, "digest-mismatch")
