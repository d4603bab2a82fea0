"""Answer extraction for code: ``verbatim`` keeps every character, ``code`` takes the
last fenced block; ``full-text`` is unchanged (its word is in pinned fingerprints)."""

from __future__ import annotations

import pytest

from xaytune.harness import AnswerExtraction
from xaytune.harness._answer import extract_answer

CODE = AnswerExtraction(kind="code")
VERBATIM = AnswerExtraction(kind="verbatim")
FULL = AnswerExtraction(kind="full-text")

INDENTED = "    return x + 1\n"


def test_full_text_still_strips_as_before():
    # The v1 rule, kept: a harness pinned with full-text gives the same answers.
    assert extract_answer(FULL, INDENTED) == "return x + 1"


def test_verbatim_keeps_leading_whitespace_and_newlines():
    assert extract_answer(VERBATIM, INDENTED) == INDENTED
    assert extract_answer(VERBATIM, "  \n\t") is None


def test_code_takes_the_last_fenced_block_whatever_its_tag():
    text = (
        "First try:\n```python\ndef f():\n    return 0\n```\n"
        "Better:\n~~~\ndef f():\n    return 1\n~~~\nDone."
    )
    assert extract_answer(CODE, text) == "def f():\n    return 1\n"


def test_code_keeps_indentation_inside_the_block():
    assert extract_answer(CODE, f"```py\n{INDENTED}```") == INDENTED


def test_a_longer_fence_holds_a_shorter_one():
    text = "````markdown\n```python\nx = 1\n```\n````\n"
    assert extract_answer(CODE, text) == "```python\nx = 1\n```\n"


def test_an_unclosed_fence_runs_to_the_end():
    assert extract_answer(CODE, "Here:\n```python\nx = 1\ny = 2") == "x = 1\ny = 2"


def test_bare_code_without_a_fence_is_taken_verbatim():
    assert extract_answer(CODE, INDENTED) == INDENTED


@pytest.mark.parametrize("text", ["```python\n```\n", "```\n   \n```", ""])
def test_an_empty_block_is_no_answer(text: str):
    assert extract_answer(CODE, text) is None


def test_the_new_words_serialise_as_themselves():
    assert CODE.model_dump()["kind"] == "code"
    assert AnswerExtraction.model_validate({"kind": "verbatim"}) == VERBATIM
