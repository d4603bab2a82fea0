"""End to end against inspect_ai on the same questions, side by side in one invocation.

xaytune: the pipeline benchmark's single-turn workload (``pipeline.py``): compile,
run with the zero-latency simulated model (durable group-committed seals), assemble
and verify, publish, evaluate: every stage a replicate takes, at concurrency 50.

inspect_ai: the same ``--tasks`` questions as one ``Task`` (``Sample(input=question,
target=answer)``), solver ``generate()``, scorer ``match()``, model
``mockllm/model`` (inspect's zero-latency stand-in) given a function that answers as
the simulated model does (reads the question, adds, reports token usage: every
sample is scored correct, as on the xaytune side), ``max_samples`` 50, its eval log
written to a temporary directory: what ``inspect eval`` does for a run. It runs in a
child interpreter (``--inspect-python``, default this one), timed inside the child
around ``eval()`` alone, as the xaytune side is timed around its stages alone:
neither side's interpreter start or imports are counted.

Prints one line per side per repetition and a machine-readable line with the
medians of ``--repeat`` (default 3)::

    tasks=1000 xaytune_tasks_per_s=... inspect_samples_per_s=... ratio=... target_met=...

The target (issue 22) is a ratio >= 20. Usage (from the repository root)::

    python -m venv .venv-inspect && .venv-inspect/bin/pip install inspect-ai==0.3.285
    PYTHONPATH=. python benchmarks/versus_inspect.py --inspect-python .venv-inspect/bin/python

inspect_ai lives in a virtual environment of its own: it pins versions of libraries
xaytune shares (pydantic, httpx, ...), and a benchmark must not change what the
product runs with. Its mockllm counts tokens with tiktoken, which downloads an
encoding: the answer function reports usage itself, so no network is needed.

This is a plain script, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import _common as common
from pipeline import measure

TARGET = 20.0
CONCURRENCY = 50

# The inspect_ai side, run by --inspect-python: argv is (questions file, log dir, n).
_INSPECT = r"""
import json, re, sys, time
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage
from inspect_ai.scorer import match
from inspect_ai.solver import generate

QUESTION = re.compile(r"Start with (\d+)\. Add (\d+)\.")

def answer(messages, tools, tool_choice, config):
    # As the simulated model does: read the question, add, count tokens (chars / 4).
    text = messages[-1].text
    a, b = QUESTION.search(text).groups()
    output = ModelOutput.from_content(model="mockllm", content=f"The result is {int(a) + int(b)}")
    tokens = len(text) // 4
    output.usage = ModelUsage(input_tokens=tokens, output_tokens=5, total_tokens=tokens + 5)
    return output

questions = json.load(open(sys.argv[1]))
task = Task(
    dataset=[Sample(input=q["question"], target=q["answer"], id=q["id"]) for q in questions],
    solver=generate(),
    scorer=match(),
)
started = time.perf_counter()
logs = eval(
    task,
    model="mockllm/model",
    model_args={"custom_outputs": answer},
    log_dir=sys.argv[2],
    display="none",
    max_samples=int(sys.argv[3]),
)
wall = time.perf_counter() - started
log = logs[0]
assert log.status == "success", (log.status, log.error)
assert log.results is not None and log.results.completed_samples == len(questions)
accuracy = log.results.scores[0].metrics["accuracy"].value
assert accuracy == 1.0, accuracy  # every sample answered and scored correct
import inspect_ai
print(json.dumps({"wall_s": wall, "version": inspect_ai.__version__}))
"""


def _inspect_once(python: str, questions: Path, log_dir: Path) -> dict[str, float | str]:
    done = subprocess.run(
        [python, "-c", _INSPECT, str(questions), str(log_dir), str(CONCURRENCY)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"inspect_ai run failed ({python}): {done.stderr.strip().splitlines()[-1:]}\n"
            "install inspect-ai==0.3.285 in a venv and pass --inspect-python (see --help)"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per side (median)")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the work dir")
    parser.add_argument(
        "--inspect-python", default=sys.executable, help="an interpreter with inspect_ai"
    )
    args = parser.parse_args(argv)
    with common.work_dir(args.dir, "xaytune-versus-inspect-") as root:
        tasks, references = common.single_turn_tasks(args.tasks)
        questions = root / "questions.json"
        questions.write_text(
            json.dumps(
                [
                    {"id": t["id"], "question": t["input"]["question"], "answer": r["answer"]}
                    for t, r in zip(tasks, references, strict=True)
                ]
            )
        )
        print(f"# {common.machine_line()}")
        print(f"# store and logs under {common.fs_line(root)}")
        ours, theirs, version = [], [], "?"
        for i in range(args.repeat):
            facts = measure(
                root / f"xaytune-{i}",
                "single-turn",
                args.tasks,
                durability="fsync",
                concurrency=CONCURRENCY,
                profile=None,
            )
            ours.append(args.tasks / facts["end_to_end_s"])
            out = _inspect_once(args.inspect_python, questions, root / f"inspect-{i}")
            version = str(out["version"])
            theirs.append(args.tasks / float(out["wall_s"]))
            print(
                f"run {i + 1}: xaytune {ours[-1]:.0f} tasks/s end to end "
                f"({facts['end_to_end_s']:.2f} s), inspect_ai {version} {theirs[-1]:.1f} "
                f"samples/s ({float(out['wall_s']):.2f} s)",
                flush=True,
            )
        mine, other = statistics.median(ours), statistics.median(theirs)
        ratio = mine / other
        print(
            f"tasks={args.tasks} concurrency={CONCURRENCY} xaytune_tasks_per_s={mine:.1f} "
            f"inspect_samples_per_s={other:.1f} inspect_version={version} ratio={ratio:.1f} "
            f"target={TARGET:g} target_met={ratio >= TARGET}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
