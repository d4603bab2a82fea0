"""BFCL's AST rules (bfcl-eval 2026.3.23, ``eval_checker/ast_eval/ast_checker.py``),
reproduced so a scorer does not import BFCL's model-handler table: the per-call
``simple_function_checker`` with its type and value checks, and the three ways BFCL
matches a list of calls to the ground truth (:func:`ast_check`).

- ``simple`` (and ``live_simple``, ``simple_java``, ``simple_javascript``): exactly
  one call (``simple_function_checker:wrong_count``), checked against the first
  function's ground truth.
- ``multiple`` (``live_multiple``): as many calls as ground-truth entries (one),
  checked against the function the ground truth names, wherever it is listed
  (``multiple_function_checker:wrong_count``).
- ``parallel`` and ``parallel_multiple`` (live too): as many calls as ground-truth
  entries, matched in any order: each ground-truth entry, in turn, takes the first
  unmatched call that passes its check
  (``parallel_function_checker_no_order:wrong_count``/``cannot_find_match``).

Per call, for a model whose endpoint takes no dots in names (every OpenAI-compatible
function-calling model in BFCL's table): the name is the function's, dots as
underscores (``...:wrong_func_name``); every required parameter is given
(``...:missing_required``); no parameter the function or the answer does not know
(``...:unexpected_param``); each value has the parameter's BFCL type and is one of the
allowed values (``type_error:*``, ``value_error:*``: an integer is accepted for a
``float``; a value of the possible answers' type counts as a variable; strings are
compared after BFCL's standardisation, lower case with spaces and ``,./-_*^`` removed
and ``'`` as ``"``, lists element-wise so, dicts key by key); every parameter that may
not be left out is given (``...:missing_optional``). In Java and JavaScript every value must
be a string (``type_error:java``/``type_error:js``), read into the declared type by
BFCL's own converters (imported from the wheel: they import nothing else); a value
they cannot read, where BFCL's run would stop with the converter's exception, fails
``type_error:java``/``type_error:js`` here.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["CONVERTER_MODULES", "ast_check", "simple_function_checker", "standardize_string"]

_CONVERTERS = "bfcl_eval.eval_checker.ast_eval.type_convertor"
CONVERTER_MODULES = (f"{_CONVERTERS}.java_type_converter", f"{_CONVERTERS}.js_type_converter")
# bfcl_eval.constants.type_mappings.JAVA_TYPE_CONVERSION / JS_TYPE_CONVERSION
JAVA_TYPES: dict[str, type] = {
    "byte": int,
    "short": int,
    "integer": int,
    "float": float,
    "double": float,
    "long": int,
    "boolean": bool,
    "char": str,
    "Array": list,
    "ArrayList": list,
    "Set": set,
    "HashMap": dict,
    "Hashtable": dict,
    "Queue": list,
    "Stack": list,
    "String": str,
    "any": str,
}
JS_TYPES: dict[str, type] = {
    "String": str,
    "integer": int,
    "float": float,
    "Bigint": int,
    "Boolean": bool,
    "dict": dict,
    "array": list,
    "any": str,
}
NESTED_CONVERSION = ("Array", "ArrayList", "array")
PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
NESTED = ("array", "tuple")
Result = dict[str, Any]


def _ok() -> Result:
    return {"valid": True, "error": [], "error_type": ""}


def _fail(error_type: str, message: str) -> Result:
    return {"valid": False, "error": [message], "error_type": error_type}


def _answer_type(possible: list[Any]) -> type | None:
    return next((type(answer) for answer in possible if answer != ""), None)


def standardize_string(text: str) -> str:
    """BFCL's string standardisation (see the module docstring)."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", text).lower().replace("'", '"')


def _type_check(
    param: str, value: Any, possible: list[Any], described: str, expected: type, nested: Any
) -> Result:
    """BFCL's ``type_checker``, line for line (``is_variable``: the value has the type
    of the possible answers, not the declared one)."""
    result: Result = {"valid": True, "error": [], "is_variable": False, "error_type": ""}
    result["error_type"] = "type_error:simple"
    is_variable = False
    answer_type = _answer_type(possible)
    if answer_type is not None and answer_type != expected:
        is_variable = True
    if type(value) is expected:
        if nested is None:
            result["is_variable"] = is_variable
            return result
        for option in possible:
            flag = True
            if type(option) is list:
                for item in value:
                    if not _type_check(param, item, option, str(nested), nested, None)["valid"]:
                        flag = False
                        break
            if flag:
                return {"valid": True, "error": [], "is_variable": is_variable}
        result["valid"] = False
        result["error"] = [
            f"Nested type checking failed for parameter {param!r}. Expected outer type "
            f"{described} with inner type {nested}. Parameter value: {value!r}."
        ]
        result["error_type"] = "type_error:nested"
    if answer_type is not None and type(value) is answer_type:
        result["is_variable"] = True
        return result
    result["valid"] = False
    result["error"].append(
        f"Incorrect type for parameter {param!r}. Expected type {described}, got "
        f"{type(value).__name__}. Parameter value: {value!r}."
    )
    result["error_type"] = "type_error:simple"
    return result


def _standard(values: list[Any]) -> list[Any]:
    return [standardize_string(v) if type(v) is str else v for v in values]


def _string_check(param: str, value: str, possible: list[Any]) -> Result:
    allowed = [standardize_string(v) for v in possible if type(v) is str]
    if standardize_string(value) not in allowed:
        return _fail(
            "value_error:string",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {possible}. "
            "Case insensitive.",
        )
    return _ok()


def _list_check(param: str, value: list[Any], possible: list[Any]) -> Result:
    allowed = [_standard(list(option)) for option in possible]
    if _standard(list(value)) not in allowed:
        return _fail(
            "value_error:list/tuple",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {possible}.",
        )
    return _ok()


def _dict_check(param: str, value: dict[str, Any], possible: list[Any]) -> Result:
    """BFCL's ``dict_checker``: a dict value against each possible dict."""
    result: Result = {"valid": False, "error": [], "error_type": "dict_checker:unclear"}
    for option in possible:
        if option == "":
            continue
        result = {"valid": False, "error": [], "error_type": "dict_checker:unclear"}
        flag = True
        for key, item in value.items():
            if key not in option:
                result["error"].append(f"Unexpected dict key parameter: '{key}'.")
                result["error_type"] = "value_error:dict_key"
                flag = False
                break
            standard = standardize_string(item) if type(item) is str else item
            if standard not in _standard(option[key]):
                result["error"].append(
                    f"Invalid value for parameter {key!r}: {item!r}. Expected one of "
                    f"{_standard(option[key])}."
                )
                result["error_type"] = "value_error:dict_value"
                flag = False
                break
        for key, allowed in option.items():
            if key not in value and "" not in allowed:
                result["error"].append(f"Missing dict key parameter: '{key}'.")
                result["error_type"] = "value_error:dict_key"
                flag = False
                break
        if flag:
            return _ok()
    return result


def _list_dict_check(param: str, value: list[Any], possible: list[Any]) -> Result:
    """BFCL's ``list_dict_checker``: a list of dicts, in order, against each option."""
    result: Result = {"valid": False, "error": [], "error_type": "list_dict_checker:unclear"}
    for option in possible:
        flag = True
        if len(value) != len(option):
            result = _fail(
                "value_error:list_dict_count", "Wrong number of dictionaries in the list."
            )
            continue
        for index, item in enumerate(value):
            result = _dict_check(param, item, [option[index]])
            if not result["valid"]:
                flag = False
                break
        if flag:
            return _ok()
    return result


def _value_check(expected: type, nested: Any) -> Any:
    """The value check BFCL uses for a type, or None (plain membership)."""
    if expected is dict:
        return _dict_check
    if expected is list and nested is dict:
        return _list_dict_check
    if expected is str:
        return _string_check
    if expected is list:
        return _list_check
    return None


def _converted(language: str, value: Any, described: str, nested: str | None) -> Any:
    """A Java or JavaScript value (a string) read by BFCL's converter."""
    from bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter import (
        java_type_converter,
    )
    from bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter import (
        js_type_converter,
    )

    convert = java_type_converter if language == "java" else js_type_converter
    return convert(value, described) if nested is None else convert(value, described, nested)


def _typed(
    language: str, param: str, given: Any, details: dict[str, Any]
) -> tuple[Any, type, Any] | Result:
    """The value as the checker compares it, its expected type and nested type (or a
    failure): BFCL's per-language branch of ``simple_function_checker``."""
    described = details["type"]
    if language == "python":
        expected = PYTHON_TYPES[described]
        nested = PYTHON_TYPES[details["items"]["type"]] if described in NESTED else None
        return given, expected, nested
    table = JAVA_TYPES if language == "java" else JS_TYPES
    word = "type_error:java" if language == "java" else "type_error:js"
    expected = table[described]
    if type(given) is not str:
        return _fail(
            word,
            f"Incorrect type for parameter {param!r}. Expected type String, got "
            f"{type(given).__name__}. Parameter value: {given!r}.",
        )
    inner = details["items"]["type"] if described in NESTED_CONVERSION else None
    try:
        value = _converted(language, given, described, inner)
    except Exception as error:  # BFCL's run stops here; the answer fails instead
        return _fail(word, f"Cannot read parameter {param!r} as {described}: {error}")
    return value, expected, (table[inner] if inner is not None else None)


def simple_function_checker(
    description: dict[str, Any],
    output: dict[str, Any],
    possible_answer: dict[str, Any],
    language: str = "python",
) -> Result:
    """BFCL's ``simple_function_checker`` for a name-converting model (module doc)."""
    possible = next(iter(possible_answer.values()))
    name = description["name"].replace(".", "_")
    details = description["parameters"]["properties"]
    required = description["parameters"].get("required", [])
    if name not in output:
        return _fail(
            "simple_function_checker:wrong_func_name",
            f"Function name {name!r} not found in model output.",
        )
    params = output[name]
    for param in required:
        if param not in params:
            return _fail(
                "simple_function_checker:missing_required",
                f"Missing required parameter: {param!r}.",
            )
    for param, given in params.items():
        if param not in details or param not in possible:
            return _fail(
                "simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}."
            )
        described = details[param]["type"]
        typed = _typed(language, param, given, details[param])
        if isinstance(typed, dict):
            return typed
        value, expected, nested = typed
        if described == "tuple" and type(value) is tuple:
            value = list(value)
        if language == "python" and described == "float" and type(value) is int:
            value = float(value)
        checked = _type_check(param, value, possible[param], described, expected, nested)
        if not checked["valid"]:
            return checked
        special = None if checked["is_variable"] else _value_check(expected, nested)
        if special is not None:  # dicts, lists of dicts, strings, lists: standardised
            checked = special(param, value, possible[param])
            if not checked["valid"]:
                return checked
            continue
        if value not in possible[param]:
            return _fail(
                "value_error:others",
                f"Invalid value for parameter {param!r}: {value!r}. Expected one of "
                f"{possible[param]}.",
            )
    for param, allowed in possible.items():
        if param not in params and "" not in allowed:
            return _fail(
                "simple_function_checker:missing_optional",
                f"Optional parameter {param!r} not provided and not marked as optional.",
            )
    return _ok()


def _description(functions: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = next((doc for doc in functions if doc["name"] == name), None)
    if found is None:
        raise ValueError(f"the ground truth names {name!r}, which the task does not offer")
    return found


def _no_order(
    functions: list[dict[str, Any]], output: list[dict[str, Any]], truth: list[Any], language: str
) -> Result:
    """BFCL's ``parallel_function_checker_no_order``."""
    if len(output) != len(truth):
        return _fail("parallel_function_checker_no_order:wrong_count", "Wrong number of functions.")
    matched: list[int] = []
    for index, expected in enumerate(truth):
        description = _description(functions, next(iter(expected)))
        result = _ok()
        for position, call in enumerate(output):
            if position in matched:
                continue
            result = simple_function_checker(description, call, expected, language)
            if result["valid"]:
                matched.append(position)
                break
        if not result["valid"]:
            left = [i for i in range(len(output)) if i not in matched]
            return _fail(
                "parallel_function_checker_no_order:cannot_find_match",
                f"Could not find a matching function among index {left} of model output for "
                f"index {index} of possible answers.",
            )
    return _ok()


def ast_check(
    functions: list[dict[str, Any]],
    output: list[dict[str, Any]],
    truth: list[Any],
    category: str,
    language: str = "python",
) -> Result:
    """BFCL's ``ast_checker``: ``output`` is the decoded calls (``[{name: {param:
    value}}, ...]``), ``truth`` the ground truth, ``category`` BFCL's category name."""
    if "parallel" in category:
        return _no_order(functions, output, truth, language)
    if "multiple" in category:
        if len(output) != len(truth):
            return _fail("multiple_function_checker:wrong_count", "Wrong number of functions.")
        description = _description(functions, next(iter(truth[0])))
        return simple_function_checker(description, output[0], truth[0], language)
    if len(output) != 1:
        return _fail("simple_function_checker:wrong_count", "Wrong number of functions.")
    return simple_function_checker(functions[0], output[0], truth[0], language)
