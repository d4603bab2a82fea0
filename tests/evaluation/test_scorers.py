"""The built-in scorers on hand-computed cases, edge cases included.

Each expected value is worked out by hand in the comment beside it; a built-in that
cannot read a reference raises (the evaluator turns that into ``scorer-failed``, see
test_scorer_evaluation.py).
"""

from __future__ import annotations

import json as jsonlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xaytune.core.canonical import MAX_SAFE_INTEGER
from xaytune.evaluation.config import MatchRule
from xaytune.evaluation.scorers import (
    Score,
    choice,
    exact,
    f1,
    includes,
    json,
    normalise,
    normalized_text,
    numeric,
    regex,
)

LOOSE = MatchRule(strip=True, case_sensitive=False, numeric=True)
STRICT = MatchRule(strip=False, case_sensitive=True, numeric=False)


# --- exact: the v1 rule, unchanged -------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reference", "rule", "expected"),
    [
        ("1,000", "1000", LOOSE, True),  # numeric: both canonicalise to "1000"
        ("1e3", "1000.0", LOOSE, True),
        (" Paris ", "paris", LOOSE, True),  # stripped, case-folded
        ("Paris", "paris", STRICT, False),
        (" 42", "42", STRICT, False),  # not stripped
        ("1,000", "1000", STRICT, False),  # not numeric
        ("1,5", "15", LOOSE, False),  # "1,5" is not a thousands grouping: left as text
        ("", "", LOOSE, True),
    ],
)
def test_exact_is_equality_under_the_match_rule(answer, reference, rule, expected):
    assert exact(answer, reference, match=rule) is expected
    assert (normalise(answer, rule) == normalise(reference, rule)) is expected


def test_exact_defaults_to_the_outcome_config_rule():
    assert exact("1,000.00", "1000") is True


# --- numeric -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reference", "tolerances", "expected"),
    [
        ("1,000", "1000", {}, True),  # commas dropped: 1000 = 1000
        ("1e3", "1000.0", {}, True),
        (" 42 ", "42", {}, True),  # surrounding whitespace stripped
        ("-0", "0", {}, True),
        ("3.14", "3.14159", {"abs_tol": 0.002}, True),  # |d| = 0.00159 <= 0.002
        ("3.14", "3.14159", {"abs_tol": 0.001}, False),  # 0.00159 > 0.001
        ("1.1", "1.0", {"abs_tol": 0.1}, True),  # |d| = 0.1 exactly (doubles: 0.1000...09)
        ("105", "100", {"rel_tol": 0.05}, True),  # 5 <= 0.05 * 100 = 5 (boundary)
        ("105.01", "100", {"rel_tol": 0.05}, False),  # 5.01 > 5
        ("-98", "-100", {"rel_tol": 0.02}, True),  # 2 <= 0.02 * |-100| = 2
        ("10.5", "10", {"abs_tol": 0.5, "rel_tol": 0.01}, True),  # 0.5 <= max(0.5, 0.1)
        ("10.6", "10", {"abs_tol": 0.5, "rel_tol": 0.01}, False),  # 0.6 > 0.5
        ("10.6", "10", {"abs_tol": 0.5, "rel_tol": 0.1}, True),  # 0.6 <= max(0.5, 1)
        ("0", "0", {"rel_tol": 0.5}, True),  # 0 <= 0
        ("0.001", "0", {"rel_tol": 0.5}, False),  # rel_tol of 0 is 0
    ],
)
def test_numeric_within_tolerance(answer, reference, tolerances, expected):
    assert numeric(answer, reference, **tolerances) == Score(success=expected)


@pytest.mark.parametrize("answer", ["five", "1,5", "$5", "50%", "", "NaN", "inf", "1e2000", "5 6"])
def test_numeric_answer_that_is_not_a_number_fails_not_a_number(answer):
    assert numeric(answer, "5") == Score(success=False, reason="not-a-number")


@given(st.integers(-(10**30), 10**30))
def test_numeric_property_thousands_grouping_is_the_same_number(n):
    assert numeric(f"{n:,}", str(n)) == Score(success=True)
    assert numeric(f"{n + 1:,}", str(n)) == Score(success=False)


@pytest.mark.parametrize("reference", ["five", "", "1,5"])
def test_numeric_reference_that_is_not_a_number_raises(reference):
    with pytest.raises(ValueError, match="reference is not a number"):
        numeric("5", reference)


# --- normalized-text (SQuAD) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reference", "expected"),
    [
        # "the eiffel tower!" -> "the eiffel tower" -> " eiffel tower" -> "eiffel tower"
        ("The Eiffel Tower!", "eiffel tower", True),
        ("an apple", "Apple", True),
        ("Paris,   France", "paris france", True),  # comma removed, spaces collapsed
        ("apples", "apple", False),
        ("there", "here", False),  # "the" only as a whole word
        ("Théâtre", "théâtre", True),  # lower case is Unicode
        ("Paris—France", "Paris France", False),  # only ASCII punctuation is removed
        ("a", "the", True),  # both normalise to ""
    ],
)
def test_normalized_text_is_squad_normalisation_then_equality(answer, reference, expected):
    assert normalized_text(answer, reference) is expected


# --- includes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reference", "case_sensitive", "expected"),
    [
        ("The capital is Paris.", "paris", False, True),
        ("The capital is Paris.", "paris", True, False),
        ("The capital is Paris.", "Paris", True, True),
        ("Parisian", "Paris", False, True),  # a substring, not a word
        ("Lyon", "Paris", False, False),
        ("", "Paris", False, False),
    ],
)
def test_includes_is_the_reference_as_a_substring(answer, reference, case_sensitive, expected):
    assert includes(answer, reference, case_sensitive=case_sensitive) is expected


def test_includes_refuses_an_empty_reference():
    with pytest.raises(ValueError, match="reference is empty"):
        includes("anything", "")


# --- regex ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reference", "options", "expected"),
    [
        ("42", r"\d+", {}, True),
        ("answer 42", r"\d+", {}, False),  # fullmatch: the whole answer
        ("answer 42", r"\d+", {"mode": "search"}, True),
        ("45", "4|5", {}, False),
        ("4", "4|5", {}, True),
        ("PARIS", "paris", {}, False),
        ("PARIS", "paris", {"ignore_case": True}, True),
        (" 42", r"\d+", {}, False),  # no normalisation
    ],
)
def test_regex_matches_the_reference_pattern(answer, reference, options, expected):
    assert regex(answer, reference, **options) is expected


def test_regex_invalid_reference_raises_without_echoing_the_pattern():
    with pytest.raises(ValueError) as caught:
        regex("x", "(secret")
    assert "not a valid regular expression" in str(caught.value)
    assert "secret" not in str(caught.value)


# --- choice --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "B",
        "b",
        " (B) ",
        "B.",
        "B)",
        "B:",
        "(B).",
        "Answer: B",
        "answer - (b)",
        "The answer is B.",
        "Final answer: B) Paris",
        "B. Paris",
        "(B) Paris",
    ],
)
def test_choice_reads_the_letter_in_every_declared_shape(answer):
    assert choice(answer, "B") == Score(success=True)


def test_choice_wrong_letter_fails_without_reason():
    assert choice("(C)", "B") == Score(success=False)
    assert choice("b", " B ") == Score(success=True)  # reference stripped, any case


@pytest.mark.parametrize(
    ("answer", "letters"),
    [
        ("I think B", "ABCDEFGHIJ"),
        ("A dog", "ABCDEFGHIJ"),  # a bare letter followed by text is prose
        ("B or C", "ABCDEFGHIJ"),
        ("K", "ABCDEFGHIJ"),  # not an option letter
        ("E", "ABCD"),
        ("", "ABCDEFGHIJ"),
        ("answerB", "ABCDEFGHIJ"),  # a label needs a separator
    ],
)
def test_choice_without_a_letter_fails_no_choice(answer, letters):
    assert choice(answer, "A", letters=letters) == Score(success=False, reason="no-choice")


@pytest.mark.parametrize("reference", ["K", "AB", "", "(B)"])
def test_choice_reference_that_is_not_an_option_letter_raises(reference):
    with pytest.raises(ValueError, match="not one of the option letters"):
        choice("A", reference)


# --- f1 ------------------------------------------------------------------------------


def test_f1_hand_computed():
    # answer -> "cat sat on mat" (4 tokens); reference -> "cat on mat" (3 tokens);
    # shared 3: P = 3/4, R = 1, F1 = 2PR/(P+R) = (3/2)/(7/4) = 6/7 = 0.857142857...
    assert f1("The cat sat on the mat.", "a cat on a mat") == Score(
        success=True, reason="f1=0.857143"
    )
    assert f1("The cat sat on the mat.", "a cat on a mat", threshold=0.9) == Score(
        success=False, reason="f1=0.857143"
    )


def test_f1_counts_tokens_as_a_multiset():
    # "cat cat cat" vs "cat": shared min(3, 1) = 1; F1 = 2 * 1 / (3 + 1) = 0.5 = threshold
    assert f1("cat cat cat", "cat") == Score(success=True, reason="f1=0.500000")


def test_f1_threshold_is_the_decimal_as_written():
    # 19 answer tokens, 1 reference token, 1 shared: F1 = 2/20 = 1/10 exactly; the
    # double 0.1 is slightly above 1/10, yet the threshold 0.1 means one tenth.
    answer = "cat " + " ".join(f"w{i}" for i in range(18))
    assert f1(answer, "cat", threshold=0.1) == Score(success=True, reason="f1=0.100000")


@pytest.mark.parametrize(
    ("answer", "reference", "expected"),
    [
        ("dog", "cat", Score(success=False, reason="f1=0.000000")),
        ("", "the", Score(success=True, reason="f1=1.000000")),  # both without tokens
        ("", "cat", Score(success=False, reason="f1=0.000000")),
        ("the", "cat", Score(success=False, reason="f1=0.000000")),
    ],
)
def test_f1_edge_cases(answer, reference, expected):
    assert f1(answer, reference) == expected


# --- json ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reference", "expected"),
    [
        ('{"a": 1, "b": [1, 2]}', '{"b":[1,2],"a":1}', True),  # key order, spacing
        ("1.0", "1", True),  # JCS writes both as 1
        ("1e0", "1", True),
        ('{"a": 1}', '{"a": 2}', False),
        ("[1, 2]", "[2, 1]", False),  # arrays are ordered
        ('"x"', '"x"', True),
        (" null ", "null", True),
        ('"1"', "1", False),  # a string is not a number
    ],
)
def test_json_compares_canonical_forms(answer, reference, expected):
    assert json(answer, reference) == Score(success=expected)


@pytest.mark.parametrize(
    "answer",
    ["not json", "{", "NaN", "Infinity", '{"a": 1, "a": 2}', "12345678901234567890", "1e400", ""],
)
def test_json_answer_that_is_not_json_fails_not_json(answer):
    assert json(answer, "1") == Score(success=False, reason="not-json")


def test_json_reference_that_is_not_json_raises():
    with pytest.raises(ValueError, match="reference is not JSON"):
        json("1", "{")


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_json_property_any_spelling_of_a_value_is_that_value(value):
    compact = jsonlib.dumps(value, sort_keys=True, separators=(",", ":"))
    spaced = jsonlib.dumps(value, indent=2, ensure_ascii=False)
    assert json(spaced, compact) == Score(success=True)
    assert json(jsonlib.dumps([value]), compact) == Score(success=False)
