"""BFCL function documents as the tools an OpenAI-compatible model is offered.

BFCL's own conversion for OpenAI-style function calling (``convert_to_tool`` with
``GORILLA_TO_OPENAPI`` in ``bfcl_eval.model_handler``), reproduced so the model sees
what BFCL's function-calling handlers send:

- a dot in a function name becomes an underscore (``math.factorial`` is offered as
  ``math_factorial``: endpoints accept ``[A-Za-z0-9_-]`` only; BFCL's checker maps the
  name back the same way);
- the parameters' top-level type becomes ``object``; each property's BFCL type is
  mapped (``dict`` -> ``object``, ``float`` -> ``number``, ``tuple`` -> ``array``,
  ``any`` -> ``string``, ...; a missing or unknown type -> ``string``); a ``float``
  property also gets ``"format": "float"`` and " This is a float type value." appended
  to its description; nested ``properties`` and ``items`` are mapped the same way;
- other keywords (``description``, ``enum``, ``default``, ``required``) are kept;
  the ``response`` document is not sent.

Before that, as BFCL's inference does (``add_language_specific_hint_to_function_doc``,
reproduced by :func:`language_documents`), every description gets the language hint
(" Note that the provided function is in Python 3 syntax." / "Java 8 SDK" /
"JavaScript"); in Java and JavaScript every parameter becomes a ``string`` whose
description says the declared type (an array's item type and a JavaScript dict's
schema move into the description): the model writes each value as a string, which
BFCL's checker reads back into the declared type.
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["GORILLA_TO_OPENAPI", "language_documents", "tool_name", "tool_schema"]

# bfcl_eval.constants.type_mappings.GORILLA_TO_OPENAPI
GORILLA_TO_OPENAPI = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}


def tool_name(name: str) -> str:
    """The name a BFCL function is offered under (dots become underscores)."""
    return name.replace(".", "_")


def _mapped(schema: dict[str, Any], *, is_property: bool = True) -> dict[str, Any]:
    """One schema mapped; as BFCL does, only a property (not an array's items) gets
    the float annotation."""
    kind = schema.get("type")
    if kind == "float" and is_property:
        schema["format"] = "float"
        schema["description"] = schema.get("description", "") + " This is a float type value."
    schema["type"] = GORILLA_TO_OPENAPI.get(kind, "string") if isinstance(kind, str) else "string"
    if isinstance(schema.get("properties"), dict):
        schema["properties"] = {k: _mapped(dict(v)) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        schema["items"] = _mapped(dict(schema["items"]), is_property=False)
    return schema


def tool_schema(document: dict[str, Any]) -> dict[str, Any]:
    """``{"name", "description", "parameters"}`` of one BFCL function document."""
    parameters = copy.deepcopy(document.get("parameters") or {})
    parameters["type"] = "object"
    properties = parameters.get("properties") or {}
    parameters["properties"] = {k: _mapped(dict(v)) for k, v in properties.items()}
    return {
        "name": tool_name(document["name"]),
        "description": document.get("description", ""),
        "parameters": parameters,
    }


_HINTS = {
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
    "python": " Note that the provided function is in Python 3 syntax.",
}
_WORD = {"java": "Java", "javascript": "JavaScript"}


def _as_string(value: dict[str, Any], language: str) -> None:
    """One Java/JavaScript parameter as BFCL rewrites it (module docstring)."""
    word = _WORD[language]
    if value["type"] == "any":
        value["description"] += (
            f" This parameter can be of any type of {word} object in string representation."
        )
    else:
        value["description"] += (
            f" This is {word} {value['type']} type parameter in string representation."
        )
    arrays = ("ArrayList", "Array") if language == "java" else ("array",)
    if value["type"] in arrays:
        value["description"] += (
            f" The list elements are of type {value['items']['type']}; they are not in "
            "string representation."
        )
        del value["items"]
    if language == "javascript" and value["type"] == "dict" and "properties" in value:
        value["description"] += (
            " The dictionary entries have the following schema; they are not in string "
            f"representation. {json.dumps(value['properties'])}"
        )
        del value["properties"]
    value["type"] = "string"


def language_documents(documents: list[dict[str, Any]], language: str) -> list[dict[str, Any]]:
    """BFCL's ``_func_doc_language_specific_pre_processing`` on copies of
    ``documents`` (module docstring)."""
    prepared = copy.deepcopy(documents)
    for document in prepared:
        document["description"] = document["description"] + _HINTS[language]
        if language in _WORD:
            for value in document["parameters"]["properties"].values():
                _as_string(value, language)
    return prepared
