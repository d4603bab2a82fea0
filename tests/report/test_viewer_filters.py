"""Which outcome filters a task is in, with one or several challengers."""

from __future__ import annotations

from xaytune.viewer._filters import filter_titles, outcome_filters


def test_a_regression_names_the_challenger_that_regressed():
    # calculator right, mental wrong, terse right (the case): a regression of
    # mental only, never of terse.
    labels = ["a", "b", "c"]
    found = outcome_filters(labels, [["success", "failure", "success"]], set())
    assert found == {"regressions-b"}
    found = outcome_filters(labels, [["failure", "failure", "success"]], set())
    assert found == {"improvements-c"}
    found = outcome_filters(labels, [["failure", "failure", "failure"]], set())
    assert found == {"both-wrong"}


def test_one_challenger_keeps_the_plain_names_and_seeds_add_up():
    by_seed = [["success", "failure"], ["failure", "success"], ["success", "success"]]
    assert outcome_filters(["a", "b"], by_seed, {"errors"}) == {
        "regressions",
        "improvements",
        "errors",
    }


def test_a_seed_not_assigned_pairs_nothing_and_an_unverified_side_is_left_out():
    labels = ["a", "b", "c"]
    assert outcome_filters(labels, [["success", "not-assigned", "failure"]], set()) == set()
    found = outcome_filters(labels, [["success", "does-not-verify", "failure"]], set())
    assert found == {"does-not-verify", "regressions-c"}


def test_titles_name_both_sides():
    titles = filter_titles([("a", "calculator"), ("b", "mental"), ("c", "terse")], [])
    assert titles["regressions-c"] == "regressions (calculator right, terse wrong)"
    assert titles["improvements-b"] == "improvements (calculator wrong, mental right)"
    assert titles["both-wrong"] == "all wrong"
    assert filter_titles([("a", "calculator"), ("b", "mental")], [])["both-wrong"] == "both wrong"
