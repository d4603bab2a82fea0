"""The BFCL suites, built from the installed wheel's files, one per category
(:mod:`xaytune.suites.bfcl._categories`).

Single-call categories (AST and relevance): one task per entry. The input is
``{"question": ...}``: the user message; when BFCL's question holds more messages than
one user message (a system message, or an earlier exchange: 100 live tasks), every
message as a ``<role>: <content>`` paragraph, in order (the harness owns the system
message). The tools are the entry's function documents as BFCL's function-calling
handlers offer them (:mod:`xaytune.suites.bfcl._schema`, the language hint included);
the environment is ``bfcl-functions`` with the category and the documents as BFCL
wrote them (which the checker reads). The reference is ``{"ground_truth": [...]}``
(AST: the possible answers per call and parameter) or ``{"expect": "no-call" |
"call"}`` (irrelevance, relevance: BFCL ships no answer). Four ``live_irrelevance``
entries (``live_irrelevance_120-9-0`` to ``_123-9-3``) offer no function at all: a
task has tools with its environment or neither, and a task that offers nothing cannot
call anything (BFCL counts each correct whatever the model says), so they are not
built: ``bfcl-live-irrelevance`` has 880 tasks of BFCL's 884.

Multi-turn categories: each task's first user message is its input, the later ones
its ``turns``; a ``miss_func`` turn without a message (the turn that reveals held-out
functions) is BFCL's ``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``. Its tools are
the function documents of its involved classes (``data/multi_turn_func_doc/``, as
BFCL's ``populate_test_cases_with_predefined_functions`` offers them, held-out ones
last, in the order BFCL appends them); its environment is ``bfcl-multi-turn`` with the
task's ``involved_classes``, ``initial_config`` (the scenario's JSON text as BFCL's
file holds it: keys in BFCL's order, which the file system reads), ``long_context``
(the ``long_context`` category) and ``held_out`` (``{"<turn>": [<function>, ...]}``,
BFCL's ``missed_function``). The reference is ``{"turns": [[<ground-truth call>, ...],
...]}``. (``excluded_function``, in 18 entries, is not read by BFCL's inference or
checker, nor here.)

Every task's metadata names its sources (distribution, version, the sha256 of each
data file it was built from), its BFCL category and the license; the suite directory
carries BFCL's Apache-2.0 notice (``NOTICE``). References go to the held-out file only.
A source entry in another shape than this builder reads is refused (``bfcl-format``,
naming the file and the task).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xaytune.core.domain.benchmark import SuiteSource
from xaytune.core.errors import SuiteError
from xaytune.suites._build import build_suite
from xaytune.suites.bfcl._categories import CATEGORIES, NOT_BUILT, Category
from xaytune.suites.bfcl._schema import language_documents, tool_schema
from xaytune.suites.bfcl._source import (
    BFCL_VERSION,
    DISTRIBUTION,
    NOTICE,
    bfcl_data,
    file_digest,
    read_entries,
)

__all__ = ["BFCL_SUITES", "build_bfcl_suite", "category", "source_files"]

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
# bfcl_eval.constants.default_prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
REVEAL_PROMPT = "I have updated some more functions you can choose from. What about now?"
_EXPECT = {"irrelevance": "no-call", "live_irrelevance": "no-call", "live_relevance": "call"}

Built = tuple[list[dict[str, Any]], list[dict[str, Any]]]
BFCL_SUITES: tuple[str, ...] = tuple(CATEGORIES)


def category(name: str) -> Category:
    """The category the suite ``name`` builds (``bfcl-unsupported``, ``unknown-suite``)."""
    if name in NOT_BUILT:
        raise SuiteError("bfcl-unsupported", f"BFCL suite {name!r} is not built: {NOT_BUILT[name]}")
    if name not in CATEGORIES:
        raise SuiteError(
            "unknown-suite", f"no BFCL suite {name!r}; known: {', '.join(BFCL_SUITES)}"
        )
    return CATEGORIES[name]


def source_files(built: Category) -> list[str]:
    """The data files (relative to ``data/``) building ``built`` reads."""
    files = [built.file]
    if built.kind != "relevance":
        files.append(f"possible_answer/{built.file}")
    if built.kind == "multi-turn":
        files += [f"multi_turn_func_doc/{file}" for file in _FUNC_DOCS.values()]
    return files


def _metadata(built: Category) -> dict[str, Any]:
    sources = {f"data/{name}": file_digest(bfcl_data(name)) for name in source_files(built)}
    return {
        "source": {"distribution": DISTRIBUTION, "version": BFCL_VERSION, "files": sources},
        "bfcl_category": built.name,
        "license": "Apache-2.0",
    }


def _message(message: Any, where: str) -> tuple[str, str]:
    if (
        not isinstance(message, dict)
        or message.get("role") not in ("system", "user", "assistant")
        or not isinstance(message.get("content"), str)
    ):
        raise SuiteError("bfcl-format", f"{where}: a message is not a role and its content")
    return message["role"], message["content"]


def _question(turn: Any, where: str) -> str:
    """A single-call question (module docstring)."""
    if not isinstance(turn, list) or not turn:
        raise SuiteError("bfcl-format", f"{where}: the question is not a list of messages")
    messages = [_message(message, where) for message in turn]
    if len(messages) == 1 and messages[0][0] == "user":
        return messages[0][1]
    return "\n\n".join(f"{role}: {content}" for role, content in messages)


def _user_message(turn: Any, where: str) -> str:
    """The one user message of a multi-turn turn (``bfcl-format`` for any other shape)."""
    if not isinstance(turn, list) or len(turn) != 1 or _message(turn[0], where)[0] != "user":
        raise SuiteError("bfcl-format", f"{where}: a turn is not one user message")
    return turn[0]["content"]


def _truths(built: Category) -> dict[str, Any]:
    path = bfcl_data(f"possible_answer/{built.file}")
    return {entry["id"]: entry["ground_truth"] for entry in read_entries(path)}


def _single_call(built: Category) -> Built:
    metadata = _metadata(built)
    truths = _truths(built) if built.kind == "ast" else {}
    tasks, references = [], []
    for entry in read_entries(bfcl_data(built.file)):
        where = f"{bfcl_data(built.file)}: task {entry.get('id')!r}"
        question, functions = entry.get("question") or [], entry.get("function") or []
        if built.kind == "relevance" and not functions:
            continue  # nothing to offer, nothing to call (module docstring)
        if (
            len(question) != 1
            or not functions
            or (built.kind == "ast" and entry["id"] not in truths)
        ):
            raise SuiteError("bfcl-format", f"{where}: not one turn, functions, an answer")
        offered = language_documents(functions, built.language)
        tasks.append(
            {
                "id": entry["id"],
                "input": {"question": _question(question[0], where)},
                "tools": [tool_schema(document) for document in offered],
                "environment": {
                    "name": "bfcl-functions",
                    "params": {"functions": functions, "category": built.name},
                },
                "metadata": metadata,
            }
        )
        answer = (
            {"ground_truth": truths[entry["id"]]}
            if built.kind == "ast"
            else {"expect": _EXPECT[built.name]}
        )
        references.append({"id": entry["id"], "answer": answer})
    return tasks, references


def _class_documents() -> dict[str, list[dict[str, Any]]]:
    return {
        cls: read_entries(bfcl_data(f"multi_turn_func_doc/{file}"))
        for cls, file in _FUNC_DOCS.items()
    }


def _multi_turn(built: Category) -> Built:
    metadata = _metadata(built)
    documents = _class_documents()
    truths = _truths(built)
    tasks, references = [], []
    for entry in read_entries(bfcl_data(built.file)):
        where = f"{bfcl_data(built.file)}: task {entry.get('id')!r}"
        classes = entry.get("involved_classes") or []
        if entry.get("id") not in truths or any(cls not in documents for cls in classes):
            raise SuiteError("bfcl-format", f"{where}: no ground truth, or an unknown class")
        held_out: dict[str, list[str]] = entry.get("missed_function") or {}
        turns = entry.get("question") or []
        messages = [
            REVEAL_PROMPT if turn == [] and str(index) in held_out else _user_message(turn, where)
            for index, turn in enumerate(turns)
        ]
        if not messages or len(truths[entry["id"]]) != len(messages):
            raise SuiteError("bfcl-format", f"{where}: the ground truth has another turn count")
        offered = [doc for cls in classes for doc in documents[cls]]
        hidden = [name for names in held_out.values() for name in names]
        unknown = [name for name in hidden if name not in {doc["name"] for doc in offered}]
        if unknown:
            raise SuiteError("bfcl-format", f"{where}: held-out function {unknown[0]!r} unknown")
        # BFCL appends each held-out document when its turn comes: they are listed last.
        ordered = [doc for doc in offered if doc["name"] not in hidden] + [
            next(doc for doc in offered if doc["name"] == name) for name in hidden
        ]
        task: dict[str, Any] = {"id": entry["id"], "input": {"question": messages[0]}}
        if messages[1:]:
            task["turns"] = messages[1:]
        task["tools"] = [tool_schema(doc) for doc in language_documents(ordered, "python")]
        params: dict[str, Any] = {
            "involved_classes": classes,
            # As JSON text: key order, 25.0 and big integers kept (see _environment).
            "initial_config": json.dumps(entry.get("initial_config") or {}),
            "long_context": "long_context" in built.name,
        }
        if held_out:
            params["held_out"] = held_out
        task["environment"] = {"name": "bfcl-multi-turn", "params": params}
        task["metadata"] = metadata
        tasks.append(task)
        references.append({"id": entry["id"], "answer": {"turns": truths[entry["id"]]}})
    return tasks, references


def build_bfcl_suite(name: str, out: str | Path) -> SuiteSource:
    """Build the BFCL suite ``name`` into the new directory ``out``."""
    built = category(name)
    make = _multi_turn if built.kind == "multi-turn" else _single_call
    tasks, references = make(built)
    return build_suite(
        out,
        name=name,
        version=BFCL_VERSION,
        tasks=tasks,
        references=references,
        where=f"{DISTRIBUTION} {BFCL_VERSION}",
        notice=NOTICE,
    )
