"""Typed values for answers that want a value, not a paragraph (strongroom.text.values)."""

from __future__ import annotations

import pytest

from strongroom.text.question import Question
from strongroom.text.values import (
    bounds_in,
    concise_value,
    first,
    first_value,
    holds_date,
    holds_number,
    value_cue_terms,
    without_labels,
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
    assert bounds_in(text) == bounds


# Issue 53, item 3: value kinds that answer. Each rule names the document shape it serves.


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("The lanyard shall limit free fall to 1.8 m (6 feet).", "measure"),
        ("Arrest the worker within a deceleration distance of 1.2 metres.", "measure"),
        ("The slab surface shall not cool faster than 2.5 °C per hour.", "temperature"),
        ("Retain 2.5 percent of each progress claim until completion.", "percent"),
        ("The water-cement ratio shall not exceed 0.45 by weight.", "count"),
    ],
)
def test_a_decimal_a_unit_follows_or_under_one_is_a_value_not_a_clause_number(
    sentence, kind
) -> None:
    """A safety manual's and a specification's measures carry decimals (`1.8 m`, `2.5 °C`, a
    ratio's `0.45`); they were blanked out as clause numbers (`52.236-2`, `36.515`)."""
    assert first(kind, without_labels(sentence)) is not None


def test_a_clause_number_is_still_no_value() -> None:
    assert not holds_number("Insert the clause at 36.515 when the contract is for supplies.")


@pytest.mark.parametrize(
    ("sentence", "temperature"),
    [
        ("Concrete temperature shall not drop more than 11 °C (20 °F) in 24 hours.", "11 °C"),
        ("Do not place concrete when the air is below 40 F and falling.", "40 F"),
        ("Keep the enclosure at not less than 10 degrees C for 72 hours.", "10 degrees C"),
        ("The mix shall leave the plant at 15º or warmer.", "15º"),
    ],
)
def test_a_temperature_or_its_change_is_read_as_a_cold_weather_rule_writes_it(
    sentence, temperature
) -> None:
    """A specification's cold- and hot-weather concreting rules and a safety manual's heat
    rules write temperatures with `°`, `degrees` or a bare `F`/`C` after the number."""
    assert first_value("temperature", sentence) == temperature


@pytest.mark.parametrize(
    "sentence",
    ["Use Class C concrete for the footings.", "The top rail shall be 42 inches high."],
)
def test_no_temperature_where_none_is_written(sentence) -> None:
    assert first_value("temperature", sentence) is None


@pytest.mark.parametrize(
    ("sentence", "frequency"),
    [
        ("The operator shall inspect the hoist rope before each shift.", "before each"),
        ("Portable extinguishers shall be checked monthly by the site supervisor.", "monthly"),
        ("Excavations shall be inspected daily and after every rainstorm.", "daily"),
        (
            "A competent person shall inspect the scaffold at least once every 7 days.",
            "once every 7",
        ),
        ("Harnesses shall be examined prior to each use for cuts and wear.", "prior to each"),
        ("Refresher training shall be given every two years.", "every two years"),
        ("Test hoists at intervals not exceeding 12 months.", "at intervals"),
        ("Air monitoring shall be done on a weekly basis.", "on a weekly basis"),
        ("Make one set of cylinders for each 100 cubic yards placed.", "for each 100 cubic"),
        ("Emergency drills shall be held twice a year.", "twice a year"),
    ],
)
def test_a_frequency_is_read_as_an_inspection_or_testing_schedule_writes_it(
    sentence, frequency
) -> None:
    """A safety manual's inspections and training and a specification's tests say how often
    in words (`before each shift`, `monthly`, `at least once every 7 days`)."""
    found = first_value("frequency", sentence)
    assert found is not None and found.startswith(frequency)


@pytest.mark.parametrize(
    "sentence",
    [
        "Each employee shall wear a hard hat.",
        "Report the incident within 7 days of its occurrence.",
        "The Contractor shall pay each subcontractor promptly.",
        "Provide rest platforms at intervals not to exceed 150 feet (45.7 m).",
    ],
)
def test_no_frequency_in_a_deadline_a_distributive_each_or_a_spacing(sentence) -> None:
    assert first_value("frequency", sentence) is None


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ("Sheet: S-201; Title: Foundation plan; Revised: 03/24", True),
        ("Item: Pump 2 | 11/23 | passed", True),
        ("Inspection log updated 04/2025 by the engineer.", True),
        ("Use 11/16 inch anchor bolts at the base plate.", False),
        ("Slope the drain at 1/50 towards the outlet.", False),
    ],
)
def test_a_month_of_a_year_in_a_table_cell_is_a_date(text, holds) -> None:
    """A drawing register's, a submittal log's or an inspection table's dates are written
    `MM/YY` in a cell (or `MM/YYYY` anywhere); in running text `11/16` is a fraction."""
    assert holds_date(text) is holds


@pytest.mark.parametrize(
    ("question", "sentence", "value"),
    [
        (
            "How often must the first aid kit be checked?",
            "The contents shall be checked at least weekly by the employer.",
            "at least weekly",
        ),
        (
            "What percentage is the maximum retainage?",
            "Retain a maximum of 10 percent of the amount due.",
            "a maximum of 10 percent",
        ),
        (
            "How many risers need a handrail?",
            "Stairways having four or more risers shall have a handrail.",
            "four or more risers",
        ),
    ],
)
def test_a_fields_value_keeps_the_bound_it_is_stated_with(question, sentence, value) -> None:
    """A safety manual's inspections and stair rules, a contract's caps: `at least weekly` is
    not `weekly`, a minimum is told from an exact count."""
    assert value_for(question, sentence) == value


def test_a_fields_count_says_what_it_counts() -> None:
    """`How many percentages are allowed ...?` (a contract's overhead tiers): the count with
    its noun and bound, not the sentence's first number."""
    sentence = "In (2) above, not more than four percentages are allowed, whatever the tiers."
    assert value_for("How many percentages are allowed?", sentence) == (
        "not more than four percentages"
    )


def test_a_tables_month_is_a_date_fields_value() -> None:
    """A drawing register's `Revised: 03/24` cell (issue 53): held as a date, and the value."""
    assert value_for("When was the sheet revised?", "Sheet: C-101; Revised: 03/24") == "03/24"


def test_a_bare_value_keeps_no_bound() -> None:
    assert first_value("measure", "Keep the rail not more than 19 inches apart.") == "19 inches"


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("How high should the handrail sit above the treads?", {"high"}),
        ("How soon can we strip the forms?", {"soon"}),
        ("What percentage of retention is held?", {"percentag"}),
        ("How often must the kit be checked?", set()),
        ("Is the handrail high enough?", set()),
    ],
)
def test_the_word_after_how_is_said_by_the_value(question, said) -> None:
    """`How high ...?` is answered by `42 inches` without the word `high` (every corpus's
    paraphrases); not `How often` (a safety manual states a frequency in many rules)."""
    assert value_cue_terms(question) == said
