"""The BFCL suites, built from the installed wheel's files.

``bfcl-multi-turn-base`` (200 tasks): each task's first user message is its input
(``{"question": ...}``), the later ones its ``turns``; its tools are the function
documents of its involved classes (``data/multi_turn_func_doc/``, every function of
each class, as BFCL's ``populate_test_cases_with_predefined_functions`` offers them);
its environment is ``bfcl-multi-turn`` with the task's ``involved_classes`` and
``initial_config`` (an integer beyond 2^53 written as ``{"bfcl-int": "<digits>"}``).
The reference is ``{"turns": [[<ground-truth call>, ...], ...]}`` from
``data/possible_answer/``, one list of call strings per user turn.

``bfcl-simple-python`` (400 tasks): one user message, one function document (offered
as BFCL's function-calling handlers offer it), the environment ``bfcl-functions``
holding that document; the reference is ``{"ground_truth": [...]}``, the possible
answers per parameter.

Every task's metadata names its sources (distribution, version, and the sha256 of each
data file it was built from) and the license; the suite directory carries BFCL's
Apache-2.0 notice (``NOTICE``). References go to the held-out file only. A source file
in another shape than this builder reads is refused (``bfcl-format``, naming the file
and the task).

The suites are built on first use into a cache directory (``$XAYTUNE_SUITE_CACHE``,
else ``$XDG_CACHE_HOME/xaytune/suites``, else ``~/.cache/xaytune/suites``), under a name
that carries a digest of everything the build reads (the source files, this builder's
code, the environments' code identities): the same wheel and code give the same
directory and the same suite digest on every machine; a change builds a new one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xaytune.core.canonical import canonical_bytes
from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import SuiteError
from xaytune.plugins import resolve_environment
from xaytune.suites._build import build_suite
from xaytune.suites.bfcl._environment import encode_big_ints
from xaytune.suites.bfcl._schema import tool_schema
from xaytune.suites.bfcl._source import (
    BFCL_VERSION,
    DISTRIBUTION,
    NOTICE,
    bfcl_data,
    file_digest,
    read_entries,
    require_bfcl,
)

__all__ = ["BFCL_SUITES", "bfcl_suite_path", "build_bfcl_suite"]

# bfcl_eval.constants.executable_backend_config.MULTI_TURN_FUNC_DOC_FILE_MAPPING
_FUNC_DOCS = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
_MULTI_TURN = "BFCL_v4_multi_turn_base.json"
_SIMPLE = "BFCL_v4_simple_python.json"

Built = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def _sources(files: list[str]) -> dict[str, str]:
    return {f"data/{name}": file_digest(bfcl_data(name)) for name in files}


def _metadata(sources: dict[str, str]) -> dict[str, Any]:
    return {
        "source": {"distribution": DISTRIBUTION, "version": BFCL_VERSION, "files": sources},
        "license": "Apache-2.0",
    }


def _user_message(turn: Any, where: str) -> str:
    """The one user message of a BFCL turn (``bfcl-format`` for any other shape)."""
    if (
        not isinstance(turn, list)
        or len(turn) != 1
        or not isinstance(turn[0], dict)
        or turn[0].get("role") != "user"
        or not isinstance(turn[0].get("content"), str)
    ):
        raise SuiteError("bfcl-format", f"{where}: a turn is not one user message")
    return turn[0]["content"]


def _truths(name: str) -> dict[str, Any]:
    path = bfcl_data(f"possible_answer/{name}")
    return {entry["id"]: entry["ground_truth"] for entry in read_entries(path)}


def _multi_turn() -> Built:
    docs_files = [f"multi_turn_func_doc/{file}" for file in _FUNC_DOCS.values()]
    sources = _sources([_MULTI_TURN, f"possible_answer/{_MULTI_TURN}", *docs_files])
    metadata = _metadata(sources)
    docs = {
        cls: [tool_schema(doc) for doc in read_entries(bfcl_data(f"multi_turn_func_doc/{file}"))]
        for cls, file in _FUNC_DOCS.items()
    }
    truths = _truths(_MULTI_TURN)
    tasks, references = [], []
    for entry in read_entries(bfcl_data(_MULTI_TURN)):
        where = f"{bfcl_data(_MULTI_TURN)}: task {entry.get('id')!r}"
        classes = entry.get("involved_classes") or []
        if entry.get("id") not in truths or any(cls not in docs for cls in classes):
            raise SuiteError("bfcl-format", f"{where}: no ground truth, or an unknown class")
        messages = [_user_message(turn, where) for turn in entry.get("question") or []]
        if not messages or len(truths[entry["id"]]) != len(messages):
            raise SuiteError("bfcl-format", f"{where}: the ground truth has another turn count")
        task: dict[str, Any] = {"id": entry["id"], "input": {"question": messages[0]}}
        if messages[1:]:
            task["turns"] = messages[1:]
        task["tools"] = [tool for cls in classes for tool in docs[cls]]
        task["environment"] = {
            "name": "bfcl-multi-turn",
            "params": {
                "involved_classes": classes,
                "initial_config": encode_big_ints(entry.get("initial_config") or {}),
                "long_context": False,
            },
        }
        task["metadata"] = metadata
        tasks.append(task)
        references.append({"id": entry["id"], "answer": {"turns": truths[entry["id"]]}})
    return tasks, references


def _simple_python() -> Built:
    metadata = _metadata(_sources([_SIMPLE, f"possible_answer/{_SIMPLE}"]))
    truths = _truths(_SIMPLE)
    tasks, references = [], []
    for entry in read_entries(bfcl_data(_SIMPLE)):
        where = f"{bfcl_data(_SIMPLE)}: task {entry.get('id')!r}"
        question = entry.get("question") or []
        functions = entry.get("function") or []
        if len(question) != 1 or not functions or entry.get("id") not in truths:
            raise SuiteError("bfcl-format", f"{where}: not one turn, one function, one answer")
        tasks.append(
            {
                "id": entry["id"],
                "input": {"question": _user_message(question[0], where)},
                "tools": [tool_schema(document) for document in functions],
                "environment": {"name": "bfcl-functions", "params": {"functions": functions}},
                "metadata": metadata,
            }
        )
        references.append({"id": entry["id"], "answer": {"ground_truth": truths[entry["id"]]}})
    return tasks, references


BFCL_SUITES: dict[str, tuple[Callable[[], Built], str]] = {
    "bfcl-multi-turn-base": (_multi_turn, "bfcl-multi-turn"),
    "bfcl-simple-python": (_simple_python, "bfcl-functions"),
}
_BUILDER_MODULES = ("_build.py", "_schema.py", "_source.py")


def build_bfcl_suite(name: str, out: str | Path) -> SuiteSource:
    """Build the BFCL suite ``name`` into the new directory ``out``."""
    if name not in BFCL_SUITES:
        raise SuiteError(
            "unknown-suite", f"no BFCL suite {name!r}; known: {', '.join(BFCL_SUITES)}"
        )
    tasks, references = BFCL_SUITES[name][0]()
    return build_suite(
        out,
        name=name,
        version=BFCL_VERSION,
        tasks=tasks,
        references=references,
        where=f"{DISTRIBUTION} {BFCL_VERSION}",
        notice=NOTICE,
    )


def _cache_root() -> Path:
    explicit = os.environ.get("XAYTUNE_SUITE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "xaytune" / "suites"


def _build_key(name: str) -> str:
    """A digest of everything building ``name`` reads (module docstring)."""
    root = require_bfcl()
    data = sorted(str(path.relative_to(root)) for path in (root / "data").rglob("*.json"))
    here = Path(__file__).resolve().parent
    facts = {
        "suite": name,
        "bfcl": BFCL_VERSION,
        "data": {path: file_digest(root / path) for path in data if _read_by(name, path)},
        "builder": {module: file_digest(here / module) for module in _BUILDER_MODULES},
        "environment": resolve_environment(BFCL_SUITES[name][1], where=name).identity.model_dump(
            mode="json"
        ),
    }
    return hashlib.sha256(canonical_bytes(facts)).hexdigest()[:16]


def _read_by(name: str, path: str) -> bool:
    file = _MULTI_TURN if name == "bfcl-multi-turn-base" else _SIMPLE
    return path.endswith(file) or (name == "bfcl-multi-turn-base" and "multi_turn_func_doc" in path)


def bfcl_suite_path(name: str) -> Path:
    """The directory of the BFCL suite ``name``, built into the cache on first use."""
    if name not in BFCL_SUITES:
        raise SuiteError(
            "unknown-suite", f"no BFCL suite {name!r}; known: {', '.join(BFCL_SUITES)}"
        )
    directory = _cache_root() / f"{name}-{BFCL_VERSION}-{_build_key(name)}"
    if not directory.exists():
        try:
            build_bfcl_suite(name, directory)
        except SuiteError as error:
            # Another process built it first (the directory appears whole, by rename).
            if error.reason != "exists":
                raise
    return directory
