"""The calculator's safe evaluator: exact arithmetic over a whitelisted Python AST.

The expression is parsed with :func:`ast.parse` in ``"eval"`` mode and walked by
hand; nothing is ever passed to ``eval``/``exec``. Allowed: int and float literals,
``+ - * / // % **``, unary ``+``/``-`` and parentheses. Everything else (names,
calls, attributes, subscripts, strings, booleans, comparisons, bit operations, ...)
is refused with a :class:`CalculatorError` naming what was found.

Numbers are exact rationals (:class:`fractions.Fraction`): a decimal literal is read
from its source text, so ``0.1 + 0.2`` is exactly ``3/10`` and ``10/2`` is the
integer ``5``. ``//`` and ``%`` follow Python's floor semantics on those exact
values. Two things leave the exact domain and continue in binary floating point:
a non-integer power (``2 ** 0.5``), and a value whose denominator would exceed
:data:`MAX_DENOMINATOR` (precision is then far beyond the printed digits).

Bounds keep every step cheap and every result small; exceeding one is refused,
never clamped:

- the expression has at most :data:`MAX_EXPRESSION_CHARS` characters and nests at
  most :data:`MAX_DEPTH` operations deep;
- an exponent satisfies ``|e| <= MAX_EXPONENT``;
- every intermediate value satisfies ``|x| <= MAX_MAGNITUDE`` and, unless it is
  zero, ``|x| >= MIN_MAGNITUDE`` (an underflow is refused, not flushed to zero);
- division, floor division, modulo by zero and ``0 ** -n`` are refused.

Output rule (:func:`format_number`): an integer value prints as its exact decimal
integer (``"425"``, never ``"425.0"``). Any other value is rounded half-even to
:data:`DECIMAL_PLACES` digits after the point, or to :data:`SIGNIFICANT_DIGITS`
significant digits when that is finer (values below 1), and printed in plain
positional notation with trailing zeros stripped: ``7/2 -> "3.5"``,
``10/3 -> "3.3333333333"``, ``1/30000 -> "0.00003333333333"``. So the integer part
is never rounded and a nonzero result never prints as ``"0"``.
"""

from __future__ import annotations

import ast
import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction

__all__ = [
    "DECIMAL_PLACES",
    "MAX_DENOMINATOR",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_EXPRESSION_CHARS",
    "MAX_MAGNITUDE",
    "MIN_MAGNITUDE",
    "SIGNIFICANT_DIGITS",
    "CalculatorError",
    "evaluate",
    "format_number",
]

MAX_EXPRESSION_CHARS = 500
MAX_DEPTH = 250  # "1+1+...+1" within 500 characters nests 250 deep
MAX_EXPONENT = 64
MAX_MAGNITUDE = 10**30
MIN_MAGNITUDE = Fraction(1, 10**30)
MAX_DENOMINATOR = 10**30
DECIMAL_PLACES = 10
SIGNIFICANT_DIGITS = 10

Number = Fraction | float

_BINARY_SYMBOLS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}

# Why a refusal is worded for the model: it reads the message and may retry.
_REFUSED_NODES: dict[type[ast.AST], str] = {
    ast.Name: "names are not allowed",
    ast.Call: "function calls are not allowed",
    ast.Attribute: "attribute access is not allowed",
    ast.Subscript: "subscripts are not allowed",
    ast.Compare: "comparisons are not allowed",
    ast.BoolOp: "boolean operators are not allowed",
}


class CalculatorError(ValueError):
    """The expression is refused or its value is out of bounds (one-line message)."""


def evaluate(expression: str) -> str:
    """Evaluate ``expression`` and return the result as a plain decimal string."""
    if not isinstance(expression, str):
        raise CalculatorError("expression must be a string")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"expression is {len(expression)} characters long; the limit is {MAX_EXPRESSION_CHARS}"
        )
    source = expression.strip()
    if not source:
        raise CalculatorError("expression is empty")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError) as err:  # ValueError: e.g. a NUL byte
        shown = source if len(source) <= 60 else source[:57] + "..."
        raise CalculatorError(f"not an arithmetic expression: {shown!r}") from err
    return format_number(_Evaluator(source).value(tree.body, 0))


class _Evaluator:
    """One walk over one parsed expression; ``source`` gives literals their text."""

    __slots__ = ("source",)

    def __init__(self, source: str) -> None:
        self.source = source

    def value(self, node: ast.expr, depth: int) -> Number:
        if depth > MAX_DEPTH:
            raise CalculatorError(f"expression nests more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Constant):
            return self._literal(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
            operand = self.value(node.operand, depth + 1)
            return operand if isinstance(node.op, ast.UAdd) else -operand
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_SYMBOLS:
            left = self.value(node.left, depth + 1)
            right = self.value(node.right, depth + 1)
            return _checked(_apply(type(node.op), left, right))
        raise CalculatorError(_refusal(node))

    def _literal(self, node: ast.Constant) -> Number:
        literal = node.value
        # bool is an int subclass: True/False are names to the model, not numbers.
        if type(literal) is int:
            return _checked(Fraction(literal))
        if type(literal) is float:
            text = ast.get_source_segment(self.source, node) or repr(literal)
            return _checked(_decimal_literal(text))
        raise CalculatorError(f"only numbers are allowed, found {literal!r}")


def _decimal_literal(text: str) -> Fraction:
    """The exact value of a float literal's source text (``"0.1"`` is 1/10)."""
    try:
        decimal = Decimal(text)
    except InvalidOperation as err:
        raise CalculatorError(f"number {text!r} is out of range") from err
    # Bound the exponent before converting: Fraction(Decimal("1e-99999999")) would
    # build a 10**99999999 denominator.
    if decimal and not -40 <= decimal.adjusted() <= 40:
        raise CalculatorError(f"number {text!r} is out of range")
    return Fraction(decimal)


def _apply(operator: type[ast.operator], left: Number, right: Number) -> Number | int:
    symbol = _BINARY_SYMBOLS[operator]
    try:
        if operator is ast.Add:
            return left + right
        if operator is ast.Sub:
            return left - right
        if operator is ast.Mult:
            return left * right
        if operator is ast.Div:
            return left / right
        if operator is ast.FloorDiv:
            return left // right
        if operator is ast.Mod:
            return left % right
        return _power(left, right)
    except ZeroDivisionError as err:
        raise CalculatorError(f"division by zero in '{symbol}'") from err
    except OverflowError as err:
        raise CalculatorError(f"result of '{symbol}' is too large") from err


def _power(base: Number, exponent: Number) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(
            f"exponent {format_number(exponent)} is beyond the limit of {MAX_EXPONENT}"
        )
    if isinstance(exponent, Fraction) and exponent.denominator == 1:
        # Exact: |base| <= 10**30 with a bounded denominator and |e| <= 64 keep
        # both integers of the result under ~13,000 bits before the bound check.
        return base ** int(exponent)
    result = float(base) ** float(exponent)
    if isinstance(result, complex):
        raise CalculatorError("a negative number to a fractional power is not a real number")
    return result


def _checked(value: Number | int) -> Number:
    """Enforce the magnitude bounds; leave the exact domain if the denominator grows."""
    if isinstance(value, int):  # Fraction // Fraction is an int: keep it exact
        value = Fraction(value)
    if isinstance(value, Fraction):
        if value.denominator > MAX_DENOMINATOR:
            value = float(value)  # correctly rounded; checked as a float below
        else:
            if abs(value) > MAX_MAGNITUDE:
                raise CalculatorError("result exceeds the limit of 10**30 in magnitude")
            return value
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise CalculatorError("result exceeds the limit of 10**30 in magnitude")
    if value != 0 and abs(value) < MIN_MAGNITUDE:
        raise CalculatorError("result is smaller than 10**-30 in magnitude and would round to 0")
    return value


def format_number(value: Number) -> str:
    """The module's output rule (see the module docstring) as a plain decimal string."""
    if isinstance(value, Fraction) and value.denominator == 1:
        return str(value.numerator)
    exact = value if isinstance(value, Fraction) else Fraction(value)  # float: exact
    if exact == 0:
        return "0"  # also for a float -0.0
    places = max(DECIMAL_PLACES, SIGNIFICANT_DIGITS - 1 - _decimal_exponent(abs(exact)))
    scaled = round(abs(exact) * 10**places)  # round() on a Fraction is exact half-even
    digits = str(scaled).rjust(places + 1, "0")
    text = f"{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return "-" + text if exact < 0 else text


def _decimal_exponent(value: Fraction) -> int:
    """``floor(log10(value))`` for a positive rational, computed exactly."""
    numerator, denominator = value.numerator, value.denominator
    guess = len(str(numerator)) - len(str(denominator))
    if guess >= 0:
        return guess if numerator >= denominator * 10**guess else guess - 1
    return guess if numerator * 10**-guess >= denominator else guess - 1


def _refusal(node: ast.AST) -> str:
    found = ast.unparse(node)
    found = found if len(found) <= 40 else found[:37] + "..."
    message = next(
        (text for kind, text in _REFUSED_NODES.items() if isinstance(node, kind)),
        "this is not allowed",
    )
    return f"{message} (found {found!r}); use numbers and + - * / // % ** only"
