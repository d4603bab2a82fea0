"""The public concept modules: a user's tool, loop, scorer and model adapter written only
against them (``tests/_concept_parts.py``) register, resolve and run end to end on the
simulator, in process; and each concept module exports exactly what it names.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import _concept_parts as parts
import pytest

from xaytune.core.domain.benchmark import SeededSample, SuiteSource, record_assignment
from xaytune.core.harness_evaluation import bind_task
from xaytune.evaluation.harness import (
    EvaluationSpec,
    EvaluatorSpec,
    HarnessOutcomeEvaluator,
    bind_evaluation,
    outcome_config,
    publish_evidence,
    run_harness_evaluation,
)
from xaytune.evaluation.scorers import resolve_scorer
from xaytune.harness import (
    Harness,
    HarnessCompilationContext,
    HarnessCompiler,
    HarnessContent,
    HarnessRunner,
    Toolbox,
    TrajectoryRecordingSpec,
)
from xaytune.harness.evidence import HarnessEvidenceStore, assemble_evidence
from xaytune.harness.evidence.trajectory import WRITER
from xaytune.harness.parts import resolve_harness
from xaytune.plugins import BUILTINS, lookup, resolve_environment
from xaytune.suites import builtin_suite_path

REPO = Path(__file__).resolve().parents[1]
CONCEPTS = ("tool", "loop", "scorer", "model", "environment")
SEED = 101


@pytest.mark.parametrize("concept", CONCEPTS)
def test_each_concept_module_exports_what_it_names(concept: str) -> None:
    module = importlib.import_module(f"xaytune.{concept}")
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []
    # Nothing public that ``__all__`` leaves out: the module is its list of names.
    public = {name for name in vars(module) if not name.startswith("_")}
    assert public == set(module.__all__)
    # The decorator is the registry's own: one registry, whichever module it comes from.
    decorator = {"model": "model_adapter"}.get(concept, concept)
    assert decorator in module.__all__
    plugins = importlib.import_module("xaytune.plugins")
    assert getattr(module, decorator) is getattr(plugins, decorator)


def test_the_concept_modules_load_no_http_client_and_no_plotting() -> None:
    # A fresh interpreter: this one has imported everything already.
    code = (
        "import sys\n"
        + "".join(f"import xaytune.{concept}\n" for concept in CONCEPTS)
        + "print([m for m in ('aiohttp', 'scipy', 'matplotlib') if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_every_builtin_registers_itself_through_its_decorator() -> None:
    """The BUILTINS index and the decorated built-ins agree: each name, once looked up,
    is an object whose decorator registered it under that name."""
    # Not decorated (yet): the BFCL environments live in xaytune.suites, and the model
    # adapters keep their class names as identity names (recorded trees stay unchanged).
    skipped = {("environment", name) for name in BUILTINS["environment"]}
    skipped |= {("model", name) for name in BUILTINS["model"]}
    for kind, names in BUILTINS.items():
        for name in names:
            if (kind, name) in skipped:
                continue
            found, obj = lookup(kind, name, where="t")
            assert found == name
            assert obj.__xaytune_part__ == (kind, name), (kind, name)


def test_user_parts_resolve_by_their_registered_names() -> None:
    assert lookup("tool", "concept_calc", where="t") == ("concept_calc", parts.concept_calc)
    assert lookup("loop", "concept-loop", where="t") == ("concept-loop", parts.concept_loop)
    assert lookup("scorer", "concept-last-number", where="t")[1] is parts.last_number
    assert lookup("model", "concept-relay", where="t")[1] is parts.ConceptRelay
    counter = resolve_environment("concept-counter", where="t")
    built = counter.build({"start": 2}, where="t")
    assert built.tools()["add"](amount=3) == "5" and built.state() == {"value": 5}
    assert counter.identity.target == "_concept_parts.ConceptCounter"


def test_user_parts_run_end_to_end_on_the_simulator(tmp_path: Path) -> None:
    source = SuiteSource(builtin_suite_path("arith-tools"))
    suite = source.suite
    harness = Harness(
        name="concept",
        system_prompt="Use the calculator tool for every step. End with ANSWER: <number>.",
        tools=("concept_calc",),
        loop={"_target_": "concept-loop", "label": "checked"},
    )
    resolved = resolve_harness(harness)
    pinned = {(p.kind, p.name): p for p in resolved.harness.parts}
    assert pinned[("tool", "concept_calc")].target == "_concept_parts.concept_calc"
    assert pinned[("tool", "concept_calc")].version == "1"
    assert pinned[("loop", "concept-loop")].target == "_concept_parts.concept_loop"
    toolbox = Toolbox(resolved.tools)
    _, adapter = lookup("model", "concept-relay", where="model")
    model = adapter(seed=SEED)  # type: ignore[operator]

    store = HarnessEvidenceStore(tmp_path / "runs" / "concept" / f"seed-{SEED}")
    sampling = SeededSample(count=4)
    assignment = record_assignment(suite, sampling, seed=SEED)
    compiler, runner = HarnessCompiler(), HarnessRunner()
    tools = frozenset({"concept_calc"})
    specs = []
    parts.CALLS.clear()
    for task_id in assignment.task_ids:
        task, binding = bind_task(suite, assignment, task_id)
        spec = compiler.compile(
            resolved.harness,
            HarnessCompilationContext(
                task=task,
                seed=SEED,
                replicate=0,
                authorized_tools=tools,
                content=HarnessContent(),
                output_uri=str(store.task_output(binding.position)),
                trajectory=TrajectoryRecordingSpec(writer=WRITER),
                task_binding=binding,
                suite=suite,
            ),
        )
        result = runner.run(spec, model=model, toolbox=toolbox, authorized_tools=tools)
        assert result.status == "complete" and result.outcome is not None
        specs.append(spec)
    evidence = assemble_evidence(specs, suite, sampling, assignment, source, store)

    # The tool ran once per tool call the trajectories attest, through the host; the
    # loop's note carries the spend it saw.
    events = [
        json.loads(line)
        for path in sorted(store.root.rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    results = [e for e in events if e.get("type") == "tool_result"]
    assert results and len(results) == len(parts.CALLS)
    assert all(e["v"]["name"] == "concept_calc" for e in results)
    notes = [e["v"] for e in events if e.get("type") == "note"]
    assert len(notes) == 4 and all(note["text"] == "checked" for note in notes)
    assert sum(note["data"]["tool_calls"] for note in notes) == len(parts.CALLS)
    assert model.requests == sum(note["data"]["turns"] for note in notes)

    # The user's scorer decides task_success; the expected rate is counted here from
    # the attested answers and the held-out references (last number, exact).
    config = outcome_config(scorer="concept-last-number", scorer_params={"tolerance": 0})
    evaluator = HarnessOutcomeEvaluator(source)
    bound = bind_evaluation(
        evaluator, EvaluationSpec(evaluator=EvaluatorSpec(name="harness-outcome", config=config))
    )
    evaluation = run_harness_evaluation(
        evaluator,
        bound,
        publish_evidence(evidence, store),
        source=source,
        output_uri=str(tmp_path / "evals"),
        seed=SEED,
    )
    expected = 0
    for entry in evidence.entries:
        numbers = parts._LAST_NUMBER.findall(entry.attested.outcome.answer or "")
        reference = Decimal(source.reference(entry.task_id).answer)
        expected += bool(numbers) and Decimal(numbers[-1]) == reference
    assert evaluation.result is not None
    assert evaluation.result.metric("task_success").value == expected / 4
    written = json.loads((tmp_path / "evals" / "evaluation.json").read_text())
    code = written["evaluation"]["config"]["spec"]["scorer"]["code"]
    assert code["target"] == "_concept_parts.last_number" and code["version"] == "1"


def test_a_class_scorer_from_the_concept_module_scores_through_the_evaluation() -> None:
    from xaytune.evaluation.config import MatchRule, ScorerSpec

    spec = ScorerSpec(name="concept-exact-text", params={"case_sensitive": True}, code=None)
    match = MatchRule(strip=True, case_sensitive=False, numeric=False)
    resolved = resolve_scorer(spec, match, where="t")
    assert resolved.score(" Paris", "Paris ", task_id="t1").success is True
    assert resolved.score("paris", "Paris", task_id="t1").success is False
    assert resolved.code.target == "_concept_parts.ExactText"


# -- README's "Bring your own parts" ------------------------------------------------------

README_HEADING = "## Bring your own parts"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_README_PROBE = """
import asyncio, importlib, inspect, json, sys
from xaytune.evaluation.config import MatchRule, ScorerSpec
from xaytune.evaluation.scorers import resolve_scorer
from xaytune.harness.loops import resolve_loop
from xaytune.model import Message, ModelReply, ModelRequest
from xaytune.plugins import lookup
from xaytune.tool import Toolbox, as_tool

found = {}
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    for value in vars(module).values():
        part = getattr(value, "__xaytune_part__", None)
        if part is not None and getattr(value, "__module__", None) == name:
            assert lookup(part[0], part[1], where="readme")[1] is value, part
            found[part[0]] = part[1], value
kind_of = {kind: name for kind, (name, _) in found.items()}
_, tool = found["tool"]
Toolbox([as_tool(tool, where="readme")])
resolve_loop(found["loop"][0])
spec = ScorerSpec(name=found["scorer"][0], params={}, code=None)
scorer = resolve_scorer(spec, MatchRule(strip=True, case_sensitive=False, numeric=True), where="r")
verdicts = [scorer.score(a, "4", task_id="t").success for a in ("4", "40")]
_, adapter = found["model"]
model = adapter(seed=1)
reply = asyncio.run(model.complete(ModelRequest(messages=(Message("user", "4"),))))
assert isinstance(reply, ModelReply)
print(json.dumps({"kinds": kind_of, "verdicts": verdicts, "text": reply.text}))
"""


def test_readme_parts_section_runs(tmp_path: Path) -> None:
    """Each block of README's section is a module of one package: together they register
    a tool, a loop, a scorer and a model adapter that resolve and run."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert README_HEADING in readme, f"README has no {README_HEADING!r} section"
    section = readme[readme.index(README_HEADING) + len(README_HEADING) :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    blocks = _PYTHON_BLOCK.findall(section)
    imported = [re.search(r"^from (xaytune\.\w+) import", b, re.MULTILINE) for b in blocks]
    assert [m[1] if m else None for m in imported] == [
        "xaytune.tool",
        "xaytune.loop",
        "xaytune.scorer",
        "xaytune.model",
    ]
    package = tmp_path / "readme_parts"
    package.mkdir()
    (package / "__init__.py").write_text("")
    names = []
    for index, block in enumerate(blocks):
        (package / f"part_{index}.py").write_text(block, encoding="utf-8")
        names.append(f"readme_parts.part_{index}")
    done = subprocess.run(
        [sys.executable, "-c", _README_PROBE, *names],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result["kinds"]) == {"tool", "loop", "scorer", "model"}
    # The section's scorer passes its own reference and fails a number ten times off.
    assert result["verdicts"] == [True, False]
    assert result["text"]
