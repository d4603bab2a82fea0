"""Answer extraction rules and instruction templates."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from xaytune.core.errors import ExecutionError
from xaytune.harness._answer import AnswerExtraction, extract_answer
from xaytune.harness._templates import render_template, template_fields

MARKER = AnswerExtraction()  # the default: marker "ANSWER:"
FULL = AnswerExtraction(kind="full-text", marker=None)
NUMBER = AnswerExtraction(kind="last-number", marker=None)


# -- extraction ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The result is 42.\nANSWER: 42", "42"),
        ("ANSWER: 1\nthen I checked.\nANSWER:  7  ", "7"),  # the last marked line wins
        ("Final ANSWER: 12 apples", "12 apples"),  # the rest of the line after the marker
        ("ANSWER: 3\nno marker on this line", "3"),  # last line *containing* the marker
        ("ANSWER:   \n", None),  # marker with nothing after it
        ("The answer is 42.", None),  # no marker: no answer, never a guess
        ("answer: 42", None),  # the marker is case-sensitive
        ("", None),
        (None, None),
    ],
)
def test_marker(text: str | None, expected: str | None) -> None:
    assert extract_answer(MARKER, text) == expected


def test_marker_is_the_declared_one() -> None:
    rule = AnswerExtraction(kind="marker", marker="Final:")
    assert extract_answer(rule, "ANSWER: 1\nFinal: 2") == "2"
    assert extract_answer(rule, "ANSWER: 1") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("  42 \n", "42"), ("two\nlines ", "two\nlines"), (" \n\t", None), ("", None), (None, None)],
)
def test_full_text(text: str | None, expected: str | None) -> None:
    assert extract_answer(FULL, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I get 12, then 30.", "30"),
        ("down to -7", "-7"),
        ("about 3.25 kg", "3.25"),
        ("total 1,234,567 units", "1,234,567"),  # kept as written; scoring normalises
        ("no digits here", None),
        (None, None),
    ],
)
def test_last_number(text: str | None, expected: str | None) -> None:
    assert extract_answer(NUMBER, text) == expected


def test_regex_takes_group_one_of_the_last_match() -> None:
    rule = AnswerExtraction(kind="regex", marker=None, pattern=r"<(\w+)>")
    assert extract_answer(rule, "<a> then <b>") == "b"
    assert extract_answer(rule, "none") is None
    assert extract_answer(rule, "< padded >") is None
    spaced = AnswerExtraction(kind="regex", marker=None, pattern=r"=\s*([^;]*);")
    assert extract_answer(spaced, "x = 5 ;") == "5"  # stripped


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"kind": "marker", "marker": ""}, "needs answer.marker"),
        ({"kind": "marker", "marker": None}, "needs answer.marker"),
        ({"kind": "regex"}, "needs answer.pattern"),
        ({"kind": "regex", "pattern": r"\d+"}, "capture group"),
        ({"kind": "guess"}, "kind"),
        ({"kind": "marker", "extra": 1}, "extra"),
    ],
)
def test_extraction_rules_are_validated(fields: dict, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        AnswerExtraction.model_validate(fields)


def test_extraction_rule_is_frozen() -> None:
    with pytest.raises(ValidationError):
        MARKER.kind = "full-text"  # type: ignore[misc]


# -- templates ----------------------------------------------------------------------


def test_template_fields_in_order_of_first_use() -> None:
    template = "{b} and {a}, {content.rubric_v2} then {b} {{literal}} {0} {x:>3} ${y}"
    assert template_fields(template) == ("b", "a", "content.rubric_v2", "y")


def test_render_fills_fields_and_literal_braces() -> None:
    values = {"question": "What is {2 + 3}?", "content.persona": "Calm."}
    out = render_template(
        "{content.persona} Q: {question} Reply as {{json}}.", values, where="harness h"
    )
    # a value containing braces is inserted as is, never rendered again
    assert out == "Calm. Q: What is {2 + 3}? Reply as {json}."


def test_render_leaves_what_is_not_a_field_alone() -> None:
    text = "{0} {x:>3} { spaced } {"
    assert template_fields(text) == ()
    assert render_template(text, {}, where="w") == text


def test_render_stringifies_values() -> None:
    values = {"n": 3, "flag": True, "none": None}
    assert render_template("{n}/{flag}/{none}", values, where="w") == "3/True/None"


def test_render_refuses_a_missing_field_naming_it() -> None:
    with pytest.raises(ExecutionError) as caught:
        render_template("Solve {question} using {content.tips}.", {"question": "1+1"}, where="h1")
    assert caught.value.reason == "template-field-missing"
    assert "{content.tips}" in str(caught.value) and "h1" in str(caught.value)
