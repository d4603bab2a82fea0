"""One run call's state is explicit: a RunSession per call, an AttemptFrame per attempt.

The group commit, the per-task seal commits and the seal journals that ContextVars used
to carry are a :class:`RunSession`'s, made by each ``run_task``/``run_many`` call and
handed down; so two calls running at once in one event loop never share a batch or a
journal object, and each store they write verifies. No module of the harness declares a
context variable (the hidden channels are gone for good).
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from _fixtures_run import SEED, Bench, attempt_files, make_source, read_attempt

import xaytune.harness
from xaytune.core.canonical import canonical_bytes
from xaytune.harness import (
    Harness,
    HarnessCompilationContext,
    HarnessContent,
    HarnessRunner,
)
from xaytune.harness.evidence import assemble_evidence
from xaytune.harness.evidence.attempt import AttemptSession
from xaytune.harness.evidence.attempt_file import AttemptParts
from xaytune.harness.evidence.journal import journal_path, read_journal
from xaytune.harness.evidence.store import Outcome, Spend
from xaytune.harness.run_session import RunSession
from xaytune.harness.toolbox import Toolbox
from xaytune.models import SimulatedModel

TOOLS = frozenset({"calculator"})
CALC = Harness(
    name="calc",
    system_prompt="Use the calculator for every step. End with ANSWER: <number>.",
    tools=("calculator",),
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    return make_source(tmp_path_factory.mktemp("session") / "suite", count=6)


def _session(*, durable: bool, grouped: bool) -> RunSession:
    model = SimulatedModel(seed=SEED)
    plain = model.identity.model_dump(mode="json")
    return RunSession(
        model=model,
        identity=(plain, canonical_bytes(plain)),
        toolbox=Toolbox.default(),
        authorized=TOOLS,
        cancel=None,
        durable=durable,
        intent=None,
        grouped=grouped,
    )


def test_a_session_opens_each_stores_journal_once(source, tmp_path: Path) -> None:
    first, second = Bench(source, tmp_path / "a"), Bench(source, tmp_path / "b")
    session = _session(durable=True, grouped=True)
    a0, a1 = session.journal_of(first.spec(CALC, 0)), session.journal_of(first.spec(CALC, 1))
    b0 = session.journal_of(second.spec(CALC, 0))
    assert a0 is a1 and a0 is not None  # one store: one journal object
    assert b0 is not a0 and b0 is not None
    assert a0.path == journal_path(first.spec(CALC, 0).output_uri)
    # A fresh session (another call) opens its own.
    assert _session(durable=True, grouped=True).journal_of(first.spec(CALC, 0)) is not a0
    # A spec that writes nothing (no task binding, no output) has no journal.
    task = first.suite.task(first.assignment.task_ids[0])
    plain = HarnessCompilationContext(
        task=task, seed=SEED, authorized_tools=TOOLS, content=HarnessContent()
    )
    assert session.journal_of(first.compiler.compile(CALC, plain)) is None


@pytest.mark.parametrize(
    ("durable", "grouped", "committer"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_a_group_commit_exists_only_for_a_grouped_durable_call(
    durable: bool, grouped: bool, committer: bool
) -> None:
    assert (_session(durable=durable, grouped=grouped).committer is not None) is committer


def test_a_commit_left_for_later_is_sealed_once_awaited(source, tmp_path: Path) -> None:
    bench = Bench(source, tmp_path / "store")
    spec = bench.spec(CALC, 0)

    async def seal_later() -> list[asyncio.Future[None]]:
        session = _session(durable=True, grouped=True)
        attempt = AttemptSession(spec, durable=False, journal=session.journal_of(spec))
        attempt.open(*session.identity)
        pending = attempt.prepare_seal(
            outcome=Outcome(terminal="answer", answer="1"), spend=Spend()
        )
        assert pending is not None
        later: list[asyncio.Future[None]] = []
        await session.commit(pending, later=later)
        assert len(later) == 1  # submitted, not awaited: the caller awaits it
        [path] = attempt_files(bench.store.root)
        assert AttemptParts.of(path.read_bytes(), str(path)).seal is None  # open until then
        await asyncio.gather(*later)
        await session.drain()
        attempt.close()
        return later

    [done] = asyncio.run(seal_later())
    assert done.done() and done.exception() is None
    [path] = attempt_files(bench.store.root)
    seal, _ = read_attempt(path)
    assert seal["status"] == "complete"
    # The journal lists exactly that seal (position 0, attempt 1).
    assert set(read_journal(bench.store.root)) == {(0, 1)}


def test_a_commit_not_left_for_later_returns_sealed(source, tmp_path: Path) -> None:
    bench = Bench(source, tmp_path / "store")
    spec = bench.spec(CALC, 1)

    async def seal_now() -> None:
        session = _session(durable=True, grouped=True)
        attempt = AttemptSession(spec, durable=False, journal=session.journal_of(spec))
        attempt.open(*session.identity)
        pending = attempt.prepare_seal(outcome=None, spend=Spend(turns=2))
        assert pending is not None
        await session.commit(pending, later=None)
        [path] = attempt_files(bench.store.root)
        assert AttemptParts.of(path.read_bytes(), str(path)).seal is not None  # in place
        attempt.close()

    asyncio.run(seal_now())
    [path] = attempt_files(bench.store.root)
    seal, _ = read_attempt(path)
    assert (seal["status"], seal["spend"]["turns"]) == ("partial", 2)
    assert set(read_journal(bench.store.root)) == {(1, 1)}


def test_two_calls_at_once_in_one_loop_keep_their_own_commits_and_journals(
    source, tmp_path: Path
) -> None:
    first, second = Bench(source, tmp_path / "a"), Bench(source, tmp_path / "b")
    lone = Bench(source, tmp_path / "c")
    runner = HarnessRunner()

    async def both():
        model = SimulatedModel(seed=SEED)
        return await asyncio.gather(
            runner.run_many(
                first.specs(CALC), model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
            ),
            runner.run_many(
                second.specs(CALC), model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
            ),
            # run_task beside them: no group commit of theirs, its seal is its own.
            runner.run_task(
                lone.spec(CALC, 0), model=model, toolbox=Toolbox.default(), authorized_tools=TOOLS
            ),
        )

    runs_a, runs_b, run_c = asyncio.run(both())
    for bench, runs in ((first, runs_a), (second, runs_b)):
        assert [run.last.status for run in runs] == ["complete"] * 4
        # Every seal is in this store's journal and none of the other's.
        listed = read_journal(bench.store.root)
        assert set(listed) == {(position, 1) for position in range(4)}
        assert {listed[(r.spec.binding.position, 1)] for r in runs} == {
            r.last.seal_digest for r in runs
        }
    assert run_c.last.status == "complete"
    assert set(read_journal(lone.store.root)) == {(0, 1)}
    # Both replicates assemble and verify from their stores.
    for bench, runs in ((first, runs_a), (second, runs_b)):
        evidence = assemble_evidence(
            [run.spec for run in runs],
            bench.suite,
            bench.sampling,
            bench.assignment,
            bench.source,
            bench.store,
        )
        assert [entry.status for entry in evidence.entries] == ["attested"] * 4


def test_no_harness_module_declares_a_context_variable() -> None:
    # The run's state travels in RunSession / AttemptFrame / AttemptWindow objects;
    # a ContextVar would be a hidden channel between them (issue 28).
    package = Path(xaytune.harness.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
            if isinstance(node, (ast.Attribute, ast.Name)) and name == "ContextVar":
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert found == []
