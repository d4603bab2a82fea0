"""Every import path the design names for the specification's names still works
(DESIGN.md, "Names the specification leaves open"; issue 28: "spec import paths still
work"). The block below is copied from it verbatim; the facades it reaches
(``xaytune.core.harness_comparison``, ``xaytune.harness.trajectory``) re-export the rooms
the code moved to, and must hand out the very same objects.
"""

from __future__ import annotations


def test_the_design_import_block_runs_as_written():
    from xaytune.core.domain.benchmark import (  # noqa: F401
        BenchmarkSuite,
        SeededSample,
        SuiteSource,
        Task,
        TaskAssignment,
        record_assignment,
    )
    from xaytune.core.harness_comparison import (  # noqa: F401
        CandidateRuns,
        ComparisonSpec,
        ObjectiveMetric,
        ReplicateRuns,
        compare,
        summarize,
    )
    from xaytune.core.harness_evaluation import TaskBinding, bind_task  # noqa: F401
    from xaytune.evaluation.harness import (  # noqa: F401
        EvaluationSpec,
        EvaluatorSpec,
        HarnessJudgeEvaluator,
        HarnessOutcomeEvaluator,
        ReferenceEgressGrant,
        bind_evaluation,
        provider_feedback,
        publish_evidence,
        run_harness_evaluation,
    )
    from xaytune.harness import (  # noqa: F401
        AgentExecutionSpec,
        Harness,
        HarnessCompilationContext,
        HarnessCompiler,
        HarnessContent,
        HarnessRunner,
        Toolbox,
        TrajectoryRecordingSpec,
    )
    from xaytune.harness.evidence import (  # noqa: F401
        HarnessEvidenceStore,
        HarnessRunEvidence,
        assemble_evidence,
        verify_run_evidence,
    )
    from xaytune.harness.trajectory import WRITER  # the v1 hash-chained writer
    from xaytune.models import OpenAICompatibleModel, SimulatedModel  # noqa: F401
    from xaytune.suites import builtin_suite_path

    source = SuiteSource(builtin_suite_path("arith-tools"))  # verifies every digest
    assert len(source.suite.tasks) > 0
    assert WRITER == "xaytune.trajectory/v1"


def test_the_facades_hand_out_the_moved_objects_themselves():
    import xaytune.comparison.compare as moved_comparison
    import xaytune.core.harness_comparison as comparison_facade
    import xaytune.harness.evidence.trajectory as moved_trajectory
    import xaytune.harness.trajectory as trajectory_facade

    for name in comparison_facade.__all__:
        assert getattr(comparison_facade, name) is getattr(moved_comparison, name), name
    assert set(comparison_facade.__all__) == set(moved_comparison.__all__)
    for name in trajectory_facade.__all__:
        assert getattr(trajectory_facade, name) is getattr(moved_trajectory, name), name
