"""The specification's "Running one replicate" block runs as written.

The block's lines below are copied verbatim from spec/H06-local-harness-evaluation.md.
The names it leaves open are defined first, as DESIGN.md ("Names the specification
leaves open") defines them, over an arith-tools suite built into ``tmp_path``. The
block stores under the absolute ``/runs/...``; ``Path`` is shadowed so that path lands
under ``tmp_path`` and the block's text stays untouched.
"""

from __future__ import annotations

import json
from pathlib import Path as _RealPath

from xaytune.core.canonical import sha256_digest
from xaytune.harness import (
    AgentExecutionSpec,
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
    HarnessRunner,
    Toolbox,
    TrajectoryRecordingSpec,
)
from xaytune.harness.evidence.attempt_file import AttemptParts, split_attempt
from xaytune.harness.evidence.trajectory import WRITER, verify_chain
from xaytune.models import SimulatedModel
from xaytune.suites import build_suite
from xaytune.suites.arith_generator import generate_arith_tools

assert AgentExecutionSpec and TrajectoryRecordingSpec and WRITER  # the block uses these


def test_running_one_replicate_as_written(tmp_path: _RealPath) -> None:
    # -- the names the specification leaves open (DESIGN.md) --------------------------
    all_tasks, all_references = generate_arith_tools()
    source = build_suite(
        tmp_path / "suite",
        name="arith-tools",
        version="1",
        tasks=all_tasks[:60],
        references=all_references[:60],
    )
    suite = source.suite
    compiler, runner = HarnessCompiler(), HarnessRunner()
    toolbox = Toolbox.default()
    model = SimulatedModel(seed=101)
    harness = Harness(
        name="calc",
        system_prompt="{content.style} Use the calculator for every step.",
        tools=("calculator",),
    )
    content = HarnessContent(blobs={"style": "End with a line: ANSWER: <number>."})
    tools = frozenset({"calculator"})

    def Path(text: str) -> _RealPath:  # shadows pathlib.Path for the block
        return tmp_path / text.lstrip("/")

    # -- the block, verbatim ----------------------------------------------------------
    # fmt: off
    from xaytune.core.domain.benchmark import SeededSample, record_assignment
    from xaytune.core.harness_evaluation import bind_task
    from xaytune.harness.evidence import HarnessEvidenceStore, assemble_evidence

    store = HarnessEvidenceStore(Path("/runs/candidate-a/seed-101"))
    sampling = SeededSample(count=20)
    assignment = record_assignment(suite, sampling, seed=101)
    specs = []
    for task_id in assignment.task_ids:
        task, binding = bind_task(suite, assignment, task_id)
        spec = compiler.compile(harness, HarnessCompilationContext(
            task=task, seed=101, replicate=0, authorized_tools=tools, content=content,
            output_uri=str(store.task_output(binding.position)),
            trajectory=TrajectoryRecordingSpec(writer=WRITER),
            task_binding=binding, suite=suite,
        ))
        runner.run(spec, model=model, toolbox=toolbox, authorized_tools=tools)
        specs.append(spec)

    evidence = assemble_evidence(specs, suite, sampling, assignment, source, store)
    # fmt: on

    # -- what it left behind ----------------------------------------------------------
    assert store.root == tmp_path / "runs" / "candidate-a" / "seed-101"
    assert len(specs) == 20 and len({s.fingerprint for s in specs}) == 20
    paths = sorted(store.root.glob("tasks/*/*"))
    assert [p.relative_to(store.root / "tasks").as_posix() for p in paths] == [
        f"{position:06d}/001.jsonl" for position in range(20)
    ]
    assert store.positions() == list(range(20))
    for path, spec in zip(paths, specs, strict=True):
        data = path.read_bytes()
        parts = AttemptParts.of(data, str(path))
        assert parts.spec == spec.canonical + b"\n" and parts.tail == b""
        assert parts.seal is not None
        seal = json.loads(parts.seal)
        assert seal["status"] == "complete" and seal["recovered"] is False
        genesis = sha256_digest(parts.record)
        assert seal["attempt_record"] == genesis
        record = json.loads(parts.record)
        assert record["attribution"]["spec_fingerprint"] == spec.fingerprint
        assert spec.fingerprint == sha256_digest(parts.spec[:-1])
        layout = split_attempt(data, str(path))
        facts = verify_chain(
            data, genesis=genesis, where=str(path), start=layout.record_end, end=layout.events_end
        )
        chain = seal["trajectory"]
        assert facts.head == chain["head"]
        assert (facts.count, facts.bytes) == (chain["events"], chain["bytes"])
        assert facts.last_event["type"] == "end"
    assert evidence.digest == evidence.content_digest()
    assert [e.task_id for e in evidence.entries] == list(assignment.task_ids)
    assert all(e.status == "attested" and len(e.attempts) == 1 for e in evidence.entries)
    assert evidence.harness_fingerprint == harness.fingerprint
    assert evidence.model == model.identity
    # the simulated model with a calculator gets these right: answers were extracted
    answers = [e.attested.outcome.answer for e in evidence.entries]
    assert answers == [source.reference(e.task_id).answer for e in evidence.entries]
