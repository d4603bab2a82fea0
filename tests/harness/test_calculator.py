"""The calculator tool: golden values, refusals, and exactness against Fraction."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from xaytune.harness._calculator import (
    MAX_EXPRESSION_CHARS,
    MAX_MAGNITUDE,
    MIN_MAGNITUDE,
    CalculatorError,
    evaluate,
    format_number,
)
from xaytune.harness.toolbox import CalculatorTool, ToolError


def calculate(expression: str) -> str:
    return CalculatorTool().invoke({"expression": expression})


# Golden values worked by hand.
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("17 * 25 - 38", "387"),  # 425 - 38
        ("(2+3)*4", "20"),
        ("7/2", "3.5"),
        ("10/2", "5"),  # exact division stays an integer, not "5.0"
        ("850/2", "425"),
        ("2**10", "1024"),
        ("2**-3", "0.125"),  # 1/8
        ("10/3", "3.3333333333"),  # 10 places after the point
        ("2/3", "0.6666666667"),  # half-even at the 10th place
        ("1/30000", "0.00003333333333"),  # below 1: 10 significant digits
        ("0.1 + 0.2", "0.3"),  # literals are read as exact decimals
        ("-7 // 2", "-4"),  # Python floor semantics
        ("-7 % 3", "2"),
        ("7.5 // 2", "3"),  # exact value, not Python's 3.0
        ("7.5 % 2", "1.5"),
        ("-(3 - 5)", "2"),
        ("+4", "4"),
        ("  1 + 2  ", "3"),  # surrounding whitespace is ignored
        ("1_000 * 3", "3000"),
        ("2 ** 0.5", "1.4142135624"),  # sqrt(2) = 1.41421356237...
        ("4 ** 0.5", "2"),
        ("10**30", "1" + "0" * 30),  # the largest allowed magnitude
        ("123456789012.5", "123456789012.5"),  # the integer part is never rounded
        ("-0.0", "0"),
        ("(7 // 2) ** -1", "0.3333333333"),  # a floor division's result stays exact
        ("1 % (3 // 1) ** -1", "0"),  # 1 % (1/3), found by the property below
    ],
)
def test_calculator_golden_values(expression: str, expected: str) -> None:
    assert calculate(expression) == expected


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("x + 1", "names are not allowed"),
        ("abs(-3)", "function calls are not allowed"),
        ("__import__('os').system('true')", "function calls are not allowed"),
        ("(1).real", "attribute access is not allowed"),
        ("[1, 2][0]", "subscripts are not allowed"),
        ("'a' * 3", "only numbers are allowed"),
        ("True + 1", "only numbers are allowed"),
        ("1j * 2", "only numbers are allowed"),
        ("1 < 2", "comparisons are not allowed"),
        ("1 and 2", "boolean operators are not allowed"),
        ("~1", "not allowed"),
        ("1 << 4", "not allowed"),
        ("1 if 1 else 2", "not allowed"),
        ("lambda: 1", "not allowed"),
        ("17 * 25 =", "not an arithmetic expression"),
        ("1; 2", "not an arithmetic expression"),
        ("", "expression is empty"),
        ("2 ** 65", "exponent 65 is beyond the limit"),
        ("2 ** -65", "beyond the limit"),
        ("(10**20) ** 2", "exceeds the limit"),
        ("10**30 + 1", "exceeds the limit"),
        ("9" * 31, "exceeds the limit"),
        ("1e400", "out of range"),
        ("1e-35", "smaller than 10**-30"),
        ("(1/3) ** 64", "smaller than 10**-30"),
        ("5 / 0", "division by zero"),
        ("5 // (2 - 2)", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("(-8) ** (1/3)", "not a real number"),
        ("-" * 300 + "1", "nests more than"),
    ],
)
def test_calculator_refuses(expression: str, words: str) -> None:
    with pytest.raises(ToolError) as caught:
        calculate(expression)
    assert caught.value.reason == "tool-error"
    assert words in caught.value.detail


def test_calculator_refuses_input_over_the_length_limit() -> None:
    at_limit = "+".join(["1"] * 250)  # 499 characters
    assert calculate(at_limit) == "250"
    with pytest.raises(ToolError, match="limit is 500"):
        calculate("1" + " " * MAX_EXPRESSION_CHARS)


def test_calculator_refuses_a_non_string_expression() -> None:
    with pytest.raises(ToolError):
        CalculatorTool().invoke({"expression": 42})


def test_calculator_never_reaches_python_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/exec must never be called")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    assert calculate("(17 * 25 - 38) / 3") == "129"


# ---------------------------------------------------------------- properties

OPERATORS = ["+", "-", "*", "/", "//", "%"]


def exact(tree: object) -> Fraction:
    """Independent evaluation of an expression tree with Python's Fraction."""
    if isinstance(tree, int):
        return Fraction(tree)
    match tree:
        case ("neg", operand):
            return -exact(operand)
        case ("**", base, exponent):
            return exact(base) ** exponent
        case (operator, left, right):
            a, b = exact(left), exact(right)
            if operator == "+":
                return a + b
            if operator == "-":
                return a - b
            if operator == "*":
                return a * b
            if operator == "/":
                return a / b  # Fraction raises ZeroDivisionError for b == 0
            if operator == "//":
                return Fraction(a // b)
            return a % b
    raise AssertionError(tree)


def within_bounds(tree: object) -> bool:
    """Every intermediate value satisfies the calculator's bounds and stays exact."""
    if isinstance(tree, int):
        return True
    match tree:
        case ("**", base, _exponent):
            children = [base]
        case ("neg", operand):
            children = [operand]
        case (_operator, left, right):
            children = [left, right]
    value = exact(tree)
    return (
        all(within_bounds(child) for child in children)
        and abs(value) <= MAX_MAGNITUDE
        and (value == 0 or abs(value) >= MIN_MAGNITUDE)
        and value.denominator <= 10**30
    )


def render(tree: object) -> str:
    if isinstance(tree, int):
        return str(tree) if tree >= 0 else f"({tree})"
    match tree:
        case ("neg", operand):
            return f"-({render(operand)})"
        case ("**", base, exponent):
            return f"({render(base)}) ** ({exponent})"
        case (operator, left, right):
            return f"({render(left)} {operator} {render(right)})"
    raise AssertionError(tree)


leaves = st.integers(min_value=-30, max_value=30)
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.tuples(st.sampled_from(OPERATORS), children, children),
        st.tuples(st.just("neg"), children),
        st.tuples(st.just("**"), children, st.integers(min_value=-3, max_value=4)),
    ),
    max_leaves=8,
)


@given(trees)
def test_calculator_equals_exact_fraction_evaluation(tree: object) -> None:
    expression = render(tree)
    try:
        expected = exact(tree)
    except ZeroDivisionError:
        # Refused; the message may name an earlier bound instead of the division.
        with pytest.raises(CalculatorError):
            evaluate(expression)
        return
    assume(within_bounds(tree))
    result = evaluate(expression)
    if expected.denominator == 1:
        assert result == str(expected.numerator)
    else:
        # The output rule keeps at least 10 significant digits, rounded half-even.
        assert abs(Fraction(result) - expected) <= abs(expected) * Fraction(5, 10**10)


@given(
    st.fractions(min_value=-MAX_MAGNITUDE, max_value=MAX_MAGNITUDE, max_denominator=10**12).filter(
        lambda value: value == 0 or abs(value) >= MIN_MAGNITUDE
    )
)
def test_format_number_is_plain_decimal_close_to_the_value(value: Fraction) -> None:
    text = format_number(value)
    assert "e" not in text.lower()
    assert not (text.endswith("0") and "." in text)
    if value.denominator == 1:
        assert text == str(value.numerator)
    else:
        assert abs(Fraction(text) - value) <= max(
            Fraction(1, 2 * 10**10), abs(value) * Fraction(5, 10**10)
        )
        assert Fraction(text) != 0


def test_format_number_keeps_terminating_decimals_exact() -> None:
    # Hand-checked: each value has at most 10 digits after the point.
    for text in ["0.5", "-3.25", "0.0000000001", "123456.789", "1.0000000001"]:
        assert format_number(Fraction(text)) == text
