"""``bfcl-ast``: BFCL's AST checker for the single-call Python category, as a scorer.

The answer is an environment task's call record (``{"environment": {"name":
"bfcl-functions", "params": {"functions": [<BFCL function document>]}}, "turns":
[[{"name", "arguments"}, ...]]}``); the reference is ``{"ground_truth": [{<function
name>: {<parameter>: [<allowed value>, ...]}}]}`` (BFCL's ``possible_answer``; ``""``
among a parameter's values means it may be left out).

The rule is BFCL's ``ast_checker`` for a ``simple`` category in Python, as it checks a
function-calling model whose endpoint takes no dots in names (bfcl-eval 2026.3.23,
``simple_function_checker`` and its helpers, reproduced below):

- exactly one call (``simple_function_checker:wrong_count``); its arguments are the
  JSON text the model sent, read with ``json.loads`` (so ``5.0`` is a float, ``5`` an
  integer); arguments that are not a JSON object cannot be decoded
  (``ast_decoder:decoder_failed``);
- its name is the function's, dots as underscores (``...:wrong_func_name``);
- every required parameter is given (``...:missing_required``); no parameter is given
  that the function or the answer does not know (``...:unexpected_param``);
- each value has the parameter's BFCL type (``type_error:simple``/``nested``; an integer
  is accepted for a ``float``; a value of the possible answer's type counts as a
  variable), and is one of the allowed values: strings compared after BFCL's
  standardisation (lower case; spaces and ``,./-_*^`` removed; ``'`` as ``"``), lists
  element-wise so, dicts key by key (``value_error:string``, ``value_error:list/tuple``,
  ``value_error:dict_key``, ``value_error:dict_value``, ``value_error:others``);
- every parameter of the answer that may not be left out is given
  (``...:missing_optional``).

The reason is BFCL's error type and message. An answer that is not a ``bfcl-functions``
call record makes the scorer raise (``scorer-failed``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from xaytune.evaluation.scorers._bfcl_calls import decoded_arguments
from xaytune.evaluation.scorers._score import Score

__all__ = ["bfcl_ast", "simple_function_checker"]

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


def simple_function_checker(
    description: dict[str, Any], output: dict[str, Any], possible_answer: dict[str, Any]
) -> Result:
    """BFCL's ``simple_function_checker`` for Python and a name-converting model."""
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
        expected = PYTHON_TYPES[described]
        nested = PYTHON_TYPES[details[param]["items"]["type"]] if described in NESTED else None
        value = list(given) if described == "tuple" and type(given) is tuple else given
        if described == "float" and type(value) is int:
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


def bfcl_ast(answer: str, reference: str) -> Score:
    """BFCL's AST rule for one single-call Python task (module docstring)."""
    record = json.loads(answer)
    environment = record.get("environment") if isinstance(record, dict) else None
    if not isinstance(environment, dict) or environment.get("name") != "bfcl-functions":
        raise ValueError("the answer is not a bfcl-functions call record")
    functions = environment["params"]["functions"]
    truth = json.loads(reference)["ground_truth"]
    calls = [call for turn in record.get("turns") or [] for call in turn]
    decoded = [decoded_arguments(call) for call in calls]
    if any(arguments is None for arguments in decoded):
        return Score(
            success=False, reason="ast_decoder:decoder_failed: arguments that are not an object"
        )
    if len(calls) != 1:
        return Score(
            success=False,
            reason=f"simple_function_checker:wrong_count: Wrong number of functions "
            f"({len(calls)}).",
        )
    output = {calls[0]["name"]: decoded[0]}
    result = simple_function_checker(functions[0], output, truth[0])
    if result["valid"]:
        return Score(success=True)
    return Score(success=False, reason=f"{result['error_type']}: {' '.join(result['error'])}")


bfcl_ast.__xaytune_sources__ = ("xaytune.evaluation.scorers._bfcl_calls",)  # type: ignore[attr-defined]
bfcl_ast.__xaytune_version__ = "1"  # type: ignore[attr-defined]
