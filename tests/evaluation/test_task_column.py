"""A report's per-task column: a value xor an absence at each position, and its
observations as JSON data.

``TaskColumn``'s validator compares the positions without a value with those with
an absence as two lists; these tests hold it to the position-by-position rule it
replaced (written out here), and check it names the first failing position.
``observation_data`` spells the observations' JSON dump without building them (the
audit compares it with a replicate record); it is held to the dump of the built,
validated observations.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from xaytune.core.canonical import canonical_bytes
from xaytune.evaluation._reports import TaskColumn, TaskObservationView

_CELLS = st.lists(
    st.tuples(
        st.none() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False),
        st.none() | st.sampled_from(["no-attested-result", "judge-failed"]),
    ),
    max_size=8,
)


def _first_bad(cells: list[tuple[object, object]]) -> int | None:
    """The rule by hand: the first position holding both or neither, else None."""
    for position, (value, absence) in enumerate(cells):
        if (value is None) == (absence is None):
            return position
    return None


@settings(max_examples=300, deadline=None)
@given(_CELLS)
def test_a_column_is_accepted_exactly_when_each_position_is_a_value_xor_an_absence(cells):
    values = tuple(value for value, _ in cells)
    absences = tuple(absence for _, absence in cells)
    bad = _first_bad(cells)
    if bad is None:
        column = TaskColumn(metric="m", values=values, absences=absences)
        assert (column.values, column.absences) == (values, absences)
    else:
        with pytest.raises(ValidationError) as caught:
            TaskColumn(metric="m", values=values, absences=absences)
        assert f"column m: position {bad} is not a value xor an absence" in str(caught.value)


def test_a_column_whose_lists_differ_in_length_is_refused():
    with pytest.raises(ValidationError, match="values and absences differ in length"):
        TaskColumn(metric="m", values=(1, None), absences=(None,))


# -- observations as JSON data, without building them -------------------------------

_VALUES = (
    st.none()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(
            _VALUES,
            st.sampled_from(["no-attested-result", "judge-failed"]),
            st.none() | st.floats(allow_nan=True, allow_infinity=True) | st.integers(0, 5),
        ),
        max_size=8,
    ),
    st.booleans(),
)
def test_observation_data_is_the_dump_of_the_built_observations(cells, spread):
    # The independent method: build each TaskObservation (validated) and dump it.
    values = tuple(value for value, _, _ in cells)
    absences = tuple(None if value is not None else absence for value, absence, _ in cells)
    spreads = tuple(item for _, _, item in cells) if spread else None
    try:
        column = TaskColumn(metric="m", values=values, absences=absences, judge_spreads=spreads)
    except ValidationError:
        return  # not a column a report holds
    task_ids = tuple(f"t{i}" for i in range(len(cells)))
    view = TaskObservationView(task_ids, (column,))
    expected = [item.model_dump(mode="json") for item in column.observations(task_ids)]
    plain = column.observation_data(task_ids)
    if plain is not None:  # None: the dump decides (what data() then gives)
        # Equal as JSON, types included (1 is not 1.0 there): canonical bytes and reprs.
        assert plain == expected
        assert repr(plain) == repr(expected)
        assert canonical_bytes(plain) == canonical_bytes(expected)
    assert view.data("m") == expected
    assert repr(view.data("m")) == repr(expected)


def test_observation_data_spells_integers_as_the_floats_an_observation_holds():
    column = TaskColumn(metric="m", values=(1, None, 0.5), absences=(None, "judge-failed", None))
    plain = column.observation_data(("a", "b", "c"))
    assert plain is not None
    assert [item["value"] for item in plain] == [1.0, None, 0.5]
    assert type(plain[0]["value"]) is float
    assert plain[1] == {
        "task_id": "b",
        "position": 1,
        "value": None,
        "absence": "judge-failed",
        "judge_spread": None,
    }
