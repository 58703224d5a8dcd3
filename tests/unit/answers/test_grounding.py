"""An answer's values against the passages it cites (strongroom.answers.grounding, issue 27
point 7): every number, amount, date, duration and percentage must stand in a cited passage."""

from __future__ import annotations

import pytest

from strongroom.answers.grounding import asserted_values, unsupported_values

CLAUSE = (
    "(b) Anchorages shall be capable of supporting at least 5,000 pounds per employee "
    "attached. Notice shall be given within ten days, and retention is 10 percent. "
    "Completion is due on 1 June 2027."
)


def test_values_are_read_as_written_and_markers_labels_and_clause_numbers_are_not_values():
    text = "Per 52.236-2 (b), anchorages support 5,000 pounds [2]; notice within ten days [1, 3]."
    assert asserted_values(text) == ["5,000 pounds", "ten days"]


@pytest.mark.parametrize(
    "answer",
    [
        "An anchorage must support 5000 pounds per employee [1].",
        "Notice is due within 10 days [1].",  # `ten` in the passage
        "Retention is 10% [1].",  # `10 percent`
        "Completion is due on June 1, 2027 [1].",  # the same day, written otherwise
        "The clause (b) says so [1].",
    ],
)
def test_a_value_the_cited_passage_holds_however_written_is_supported(answer):
    assert unsupported_values(answer, [CLAUSE]) == []


@pytest.mark.parametrize(
    ("answer", "flagged"),
    [
        ("An anchorage must support 3,000 pounds per employee [1].", ["3,000 pounds"]),
        ("Notice is due within 14 days [1].", ["14 days"]),
        ("Completion is due on 2 June 2027 [1].", ["2 June 2027"]),
        ("Retention is 10 percent, or 5% on the second half [1].", ["5%"]),
        ("Two employees may share it [1].", ["Two"]),
    ],
)
def test_a_value_no_cited_passage_holds_is_flagged(answer, flagged):
    assert unsupported_values(answer, [CLAUSE]) == flagged


def test_a_value_is_checked_against_the_cited_passages_only():
    assert unsupported_values("Retention is 10 percent [1].", ["Nothing of it here."]) == [
        "10 percent"
    ]
    assert unsupported_values("Retention is 10 percent.", []) == ["10 percent"]
