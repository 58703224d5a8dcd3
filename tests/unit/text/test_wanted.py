"""What value a question asks for: the value its words name (chat) and the value its cues
point to (a template field) (strongroom.text.wanted)."""

from __future__ import annotations

import pytest

from strongroom.text.values import Wanted
from strongroom.text.wanted import asks_for_number, value_cued, value_named


def test_a_duration_question_is_not_also_a_count() -> None:
    assert value_cued("How many days' notice?") == Wanted(("duration",))


@pytest.mark.parametrize(
    ("question", "wants_number"),
    [
        ("How many days' notice must be given?", True),
        ("What is the total contract sum?", True),
        ("Above what contract amount are bonds required?", True),
        ("How often are progress payments made?", True),
        ("What must a request list about the amounts already paid?", False),
        ("Who is responsible for permits?", False),
        ("When is finishing late excused?", False),
    ],
)
def test_a_question_wanting_a_number_is_told_apart(question, wants_number) -> None:
    assert asks_for_number(question) is wants_number


@pytest.mark.parametrize(
    ("question", "kinds", "unit"),
    [
        ("What is the date of the Warranty of Construction clause?", ("date",), None),
        ("What is the substantial completion date for the project?", ("date",), None),
        ("What penal sum is required, as a percentage of the contract price?", ("percent",), None),
        ("How many working days' notice must we give?", ("duration",), "day"),
        ("How many hours of safety training are required?", ("duration",), "hour"),
        ("What is the daily rate of liquidated damages in dollars?", ("amount",), None),
        ("Above what contract amount are bonds required?", ("amount", "percent"), None),
        ("How many copies of the schedule must be submitted?", ("count",), None),
        ("How much of a payment may be retained?", (), None),
        ("How high must the top rail of a guardrail be?", ("measure",), None),
        ("What is the maximum allowable slope for an excavation?", ("measure",), None),
        ("Between what hours is piling allowed?", ("time",), None),
        ("What insurance limits must the contractor carry?", ("amount", "percent"), None),
    ],
)
def test_a_question_says_which_value_it_wants(question, kinds, unit) -> None:
    wanted = value_named(question)
    assert wanted is not None
    assert (wanted.kinds, wanted.unit) == (kinds, unit)


def test_a_question_wanting_no_number_wants_no_value() -> None:
    assert value_named("Who is responsible for permits?") is None


@pytest.mark.parametrize(
    ("question", "sentence", "holds"),
    [
        ("What is the date of the clause?", "Warranty of Construction (Mar 1994)", True),
        ("What is the date of the clause?", "Notice within 10 days of the delay.", False),
        ("How many days' notice?", "Notice within twenty (20) days after the event.", True),
        ("How many days' notice?", "The warranty runs for 1 year.", False),
        ("How many copies must be submitted?", "Submit three copies of the schedule.", True),
        ("How many copies must be submitted?", "Submit the schedule within 5 days.", False),
        ("What is the contract sum?", "Bonds are required above $1.5 million.", True),
        ("What is the contract sum?", "As prescribed in 52.236-2, insert the clause.", False),
        ("How high must the rail be?", "The top rail shall be 42 inches high.", True),
        ("How high must the rail be?", "Inspect the rail within 7 days.", False),
        ("What is the maximum slope?", "Type C soil: 1.5:1 (34 degrees).", True),
        ("Between what hours is piling allowed?", "Piling between 7 a.m. and 6 p.m.", True),
        ("Between what hours is piling allowed?", "Piling is allowed for 8 hours a day.", False),
    ],
)
def test_a_sentence_holds_the_value_asked_for_or_not(question, sentence, holds) -> None:
    wanted = value_named(question)
    assert wanted is not None
    assert wanted.held_by(sentence) is holds


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        ("How far must the bars overlap?", "The bars shall overlap one-half the diameter."),
        ("How strong must a scaffold be?", "Each scaffold shall support four times the load."),
        ("How many times the load must it hold?", "It shall hold twice the intended load."),
        ("How thick must the cover be?", "Cover shall be 1/2 of the slab depth."),
    ],
)
def test_a_multiple_or_a_fraction_is_a_value_of_the_kind_asked(question, sentence) -> None:
    """Issue 40: `five times`, `one-half the diameter` answer a measure, count or share."""
    wanted = value_named(question)
    assert wanted is not None and wanted.held_by(sentence)


def test_a_percentage_is_not_answered_by_a_proportion() -> None:
    """`What percentage of retention is held?` wants the `5%`, not `Half of the retention`."""
    wanted = value_named("What percentage of retention is held?")
    assert wanted is not None and not wanted.held_by("Half of the retention is released.")


def test_a_rate_is_answered_by_any_number_other_than_the_questions() -> None:
    """Issue 40: a schedule's rate cell has no currency symbol (`385`, the column says AUD)."""
    wanted = value_named("What is the rate for 50 MPa concrete?")
    assert wanted is not None and wanted.kinds == ()
    assert wanted.held_by("Item: 50 MPa concrete; Rate: 385", besides="rate for 50 MPa")
    assert not wanted.held_by("Item: 50 MPa concrete", besides="rate for 50 MPa")
