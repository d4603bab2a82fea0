"""What the BFCL checkers read of an environment task's call record."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["bfcl_language", "decoded_arguments", "decoded_call", "single_call_refusal"]


def decoded_arguments(call: dict[str, Any]) -> dict[str, Any] | None:
    """A recorded call's arguments as BFCL decodes a function call's: the JSON text the
    model sent, read with ``json.loads`` (``20.0`` a float, ``20`` an integer; an object
    given as such is taken as it is); None when they are not a JSON object."""
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return arguments if isinstance(arguments, dict) else None


def decoded_call(call: dict[str, Any]) -> dict[str, Any] | str:
    """``{name: arguments}`` as BFCL's function-calling ``decode_ast`` makes it, or the
    failure as ``"<BFCL error type>: <message>"``: arguments that are not JSON are
    ``ast_decoder:decoder_failed``, JSON that is not an object
    ``ast_decoder:decoder_wrong_output_format``."""
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as error:
            return f"ast_decoder:decoder_failed: Invalid syntax. Failed to decode AST. {error}"
    if not isinstance(arguments, dict):
        return "ast_decoder:decoder_wrong_output_format: Did not output in the specified format."
    return {str(call.get("name")): arguments}


def bfcl_language(category: str) -> str:
    """The language BFCL checks a category's calls in (``is_java``, ``is_js``)."""
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else "python"


def single_call_refusal(task: Any, categories: Any, *, scorer: str) -> str | None:
    """Why the single-call scorer ``scorer`` does not check ``task`` (one line), or None
    when it is a BFCL single-call task of one of ``categories``. A task naming no
    category is ``simple_python``'s."""
    environment = getattr(task, "environment", None)
    if environment is None or environment.name != "bfcl-functions":
        return "not a BFCL single-call task (environment bfcl-functions)"
    category = environment.params.get("category", "simple_python")
    if category not in categories:
        return (
            f"BFCL category {category!r} is not one {scorer} checks "
            f"({', '.join(sorted(categories))})"
        )
    return None
