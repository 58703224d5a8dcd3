"""Typed values for answers that want a value, not a paragraph (strongroom.text.values)."""

from __future__ import annotations

import pytest

from strongroom.text.question import Question
from strongroom.text.values import (
    Wanted,
    asks_for_number,
    concise_value,
    holds_number,
    value_wanted,
)


def value_for(question: str, sentence: str) -> str | None:
    """The value a template field's `question` takes from `sentence`."""
    read = Question.read(question)
    return concise_value(read.asked, read.terms, sentence)


@pytest.mark.parametrize(
    ("question", "sentence", "value"),
    [
        (
            "What is the contract sum?",
            "The Contract Sum is $1,250,000.00 (excl. tax).",
            "$1,250,000.00",
        ),
        (
            "What is the contract sum?",
            "The sum for the works is 1,250,000 pounds.",
            "1,250,000 pounds",
        ),
        ("What percentage is retained?", "The Government may retain 10 percent.", "10 percent"),
        ("Retention rate?", "The Employer may retain 5% of each payment.", "5%"),
        (
            "How many days' notice?",
            "Notice within twenty (20) days after the event.",
            "twenty (20) days",
        ),
        ("When was it signed?", "Signed on 14 March 2025 by both parties.", "14 March 2025"),
        ("Date of the agreement", "Made on March 3, 2026 between the parties.", "March 3, 2026"),
        (
            "Governing law",
            "Each party agrees. Governing law: New South Wales. The end.",
            "New South Wales",
        ),
        ("Which law governs?", "It is governed by the laws of the State of New York.", "New York"),
        (
            "Which jurisdiction's law applies to a claim?",
            "United States law will apply to resolve any claim of breach of this contract.",
            "United States",
        ),
        (
            "Who is the employer?",
            'Made between Harbour Holdings Ltd (the "Employer") and Acme.',
            "Harbour Holdings Ltd",
        ),
        ("Who is the employer?", "The employer is Harbour Holdings Ltd.", "Harbour Holdings Ltd"),
    ],
)
def test_the_value_asked_for_is_taken_from_the_sentence(question, sentence, value) -> None:
    assert value_for(question, sentence) == value


def test_a_kind_the_sentence_does_not_hold_gives_no_value() -> None:
    """Better a placeholder left in a template than a paragraph where a sum belongs."""
    assert value_for("What is the contract sum?", "The sum is set out in Schedule 2.") is None


def test_a_question_naming_no_kind_gets_a_short_clause() -> None:
    sentence = (
        "The Contractor shall, at its own cost and within the time stated in the programme, "
        "provide temporary fencing around the whole perimeter of the site, and shall maintain "
        "the fencing in good repair until the date of practical completion of the works"
    )
    value = value_for("What must surround the site perimeter?", sentence)
    assert value is not None and "fencing" in value and len(value) <= 160


def test_a_duration_question_is_not_also_a_count() -> None:
    assert value_wanted("How many days' notice?", strict=False) == Wanted(("duration",))


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
    ("sentence", "holds"),
    [
        ("Notice within twenty (20) days after the event.", True),
        ("Interest runs from the 31st day after receipt.", True),
        ("The Government shall make progress payments monthly.", True),
        ("The Employer may retain 5% of each payment.", True),
        ("(iii) A listing of the total amount of each subcontract.", False),
        ("As prescribed in 52.236-2, insert the clause.", False),
    ],
)
def test_paragraph_labels_and_clause_numbers_are_no_values(sentence, holds) -> None:
    assert holds_number(sentence) is holds


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
    wanted = value_wanted(question, strict=True)
    assert wanted is not None
    assert (wanted.kinds, wanted.unit) == (kinds, unit)


def test_a_question_wanting_no_number_wants_no_value() -> None:
    assert value_wanted("Who is responsible for permits?", strict=True) is None


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
    wanted = value_wanted(question, strict=True)
    assert wanted is not None
    assert wanted.held_by(sentence) is holds


@pytest.mark.parametrize(
    ("sentence", "value"),
    [
        ("The Contract Sum is AUD 4,250,000 excluding GST.", "AUD 4,250,000"),
        ("The Contract Sum is A$4,250,000 excluding GST.", "A$4,250,000"),
        ("The Contract Sum is 1,250,000 CAD.", "1,250,000 CAD"),
        ("The Contract Sum is NZ$ 900,000.", "NZ$ 900,000"),
        ("The Contract Sum is CHF 2.5 million.", "CHF 2.5 million"),
        ("The Contract Sum is ¥120,000,000.", "¥120,000,000"),
        ("The sum for the works is 1,250,000 pounds.", "1,250,000 pounds"),
        ("Damages of 6,000 pounds sterling per week are payable.", "6,000 pounds sterling"),
    ],
)
def test_amounts_in_every_iso_4217_code_and_the_common_symbols(sentence, value) -> None:
    """Issue 27 point 5: AUD, CAD, NZD, A$, ... were not read as amounts."""
    assert value_for("What is the contract sum?", sentence) == value


@pytest.mark.parametrize(
    "sentence",
    [
        "Anchorages shall be capable of supporting at least 5,000 pounds per employee.",
        "The top rail shall withstand a force of at least 200 pounds.",
        "Scaffold planks shall carry 50 pounds per square foot.",
        "See FAR 52 and CFR 1926 for the clauses.",  # not currency codes
        "ALL 3 COPIES shall be signed.",  # a code that is also a word in capitals
    ],
)
def test_pounds_of_weight_and_codes_that_are_no_currency_are_not_amounts(sentence) -> None:
    """Issue 27 point 5: a safety manual's 5,000 pounds of load was read as money."""
    assert value_for("What is the amount?", sentence) is None


HARBOURSIDE = (
    "This contract is made between Harbourside Developments Pty Ltd (the Principal) and "
    "Meridian Build Group Ltd (the Contractor)."
)


@pytest.mark.parametrize(
    ("question", "sentence", "value"),
    [
        ("Who is the employer?", HARBOURSIDE, "Harbourside Developments Pty Ltd"),
        ("Who is the principal?", HARBOURSIDE, "Harbourside Developments Pty Ltd"),
        ("Who is the owner?", HARBOURSIDE, "Harbourside Developments Pty Ltd"),
        ("Who is the contractor?", HARBOURSIDE, "Meridian Build Group Ltd"),
        ("What is the contractor?", HARBOURSIDE, "Meridian Build Group Ltd"),  # `{{ contractor }}`
        (
            "Who is the contractor?",
            'Harbour Holdings Ltd (hereinafter called "the Employer") and Acme Ltd '
            '(hereinafter called "the Contractor") agree.',
            "Acme Ltd",
        ),
        (
            "Who is the builder?",
            "The Contractor is Meridian Build Group Ltd.",
            "Meridian Build Group Ltd",
        ),
        (
            "Who is the employer?",
            "Principal: Harbourside Developments Pty Ltd",
            "Harbourside Developments Pty Ltd",
        ),
    ],
)
def test_a_party_is_taken_by_the_role_asked_defined_with_or_without_quotes(
    question, sentence, value
) -> None:
    """Issue 27 point 5: `{{ employer | Who is the employer? }}` was filled with the
    Contractor's name, `{{ contractor }}` with "If the Contractor"."""
    assert value_for(question, sentence) == value


@pytest.mark.parametrize(
    "sentence",
    [
        "If the Contractor fails to proceed, the Principal may terminate.",
        "Meridian Build Group Ltd (the Contractor) shall insure the works.",  # another role
    ],
)
def test_no_party_plays_the_role_asked_gives_no_value(sentence) -> None:
    assert value_for("Who is the employer?", sentence) is None


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
    wanted = value_wanted(question, strict=True)
    assert wanted is not None and wanted.held_by(sentence)


def test_a_percentage_is_not_answered_by_a_proportion() -> None:
    """`What percentage of retention is held?` wants the `5%`, not `Half of the retention`."""
    wanted = value_wanted("What percentage of retention is held?", strict=True)
    assert wanted is not None and not wanted.held_by("Half of the retention is released.")


def test_a_rate_is_answered_by_any_number_other_than_the_questions() -> None:
    """Issue 40: a schedule's rate cell has no currency symbol (`385`, the column says AUD)."""
    wanted = value_wanted("What is the rate for 50 MPa concrete?", strict=True)
    assert wanted is not None and wanted.kinds == ()
    assert wanted.held_by("Item: 50 MPa concrete; Rate: 385", besides="rate for 50 MPa")
    assert not wanted.held_by("Item: 50 MPa concrete", besides="rate for 50 MPa")


@pytest.mark.parametrize(
    ("text", "bounds"),
    [
        ("What is the maximum slump?", {"upper"}),
        ("Slump shall not exceed 4 inches.", {"upper"}),
        ("What is the minimum cover?", {"lower"}),
        ("Cover shall be at least 2 inches.", {"lower"}),
        ("Between 2 and 4 inches, at least 2 and no more than 4.", {"upper", "lower"}),
        ("Slump is 4 inches.", set()),
    ],
)
def test_the_bounds_a_text_states(text, bounds) -> None:
    from strongroom.text.values import bounds_in

    assert bounds_in(text) == bounds
