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


# Issue 53, item 3: the question wording that asks for each kind of value, and the sentences
# that then answer it. Each rule names the document shape it serves.


@pytest.mark.parametrize(
    ("question", "sentence", "holds"),
    [
        ("How often must the hoist rope be inspected?", "Inspect it before each shift.", True),
        ("How often are the extinguishers checked?", "They are checked monthly.", True),
        (
            "How frequently must the scaffold be inspected?",
            "A competent person shall inspect it at least once every 7 days.",
            True,
        ),
        ("How many times a year are drills held?", "Drills are held twice a year.", True),
        (
            "How often must the hoist rope be inspected?",
            "Report damage to the hoist rope within 24 hours.",
            False,
        ),
    ],
)
def test_how_often_is_answered_by_a_frequency(question, sentence, holds) -> None:
    """A safety manual's inspection and training rules (`before each shift`, `monthly`): a
    deadline (`within 24 hours`) says when, not how often."""
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == ("frequency",)
    assert wanted.held_by(sentence, besides=question) is holds


@pytest.mark.parametrize(
    ("question", "sentence", "holds"),
    [
        (
            "How much may the concrete temperature fall in the first 24 hours?",
            "The temperature shall not fall more than 11 °C (20 °F) in the first 24 hours.",
            True,
        ),
        (
            "What is the maximum temperature difference between core and surface?",
            "The difference shall not exceed 19.5 degrees C.",
            True,
        ),
        (
            "How cold may it be when the mortar is laid?",
            "Lay no mortar below 4 °C unless the units are heated.",
            True,
        ),
        (
            "How much may the concrete temperature fall in the first 24 hours?",
            "Protect the concrete for 3 days after placing.",
            False,
        ),
    ],
)
def test_a_temperature_asked_is_answered_by_a_temperature(question, sentence, holds) -> None:
    """A specification's cold- and hot-weather concreting rules: the answer is a temperature
    or a change of one, with its decimals (`19.5 degrees C`)."""
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == ("temperature",)
    assert wanted.held_by(sentence, besides=question) is holds


def test_a_temperature_that_only_sets_a_condition_is_not_what_is_asked() -> None:
    """`... when the air temperature is above 30 °C?` asks for the time, not a temperature."""
    wanted = value_named(
        "What is the maximum time from batching to placing when the air temperature is high?"
    )
    assert wanted is None or "temperature" not in wanted.kinds


@pytest.mark.parametrize(
    ("question", "sentence", "holds"),
    [
        (
            "How strong must the slab be before the shores are removed?",
            "Shores stay until the concrete reaches 75 percent of its specified strength.",
            True,
        ),
        (
            "What strength must the deck reach before it is opened to traffic?",
            "Open the deck when test cylinders reach 3,000 psi.",
            True,
        ),
        (
            "What compressive strength in psi must the footings reach?",
            "Strip the forms at 70 percent of the specified strength.",
            False,
        ),
    ],
)
def test_a_strength_is_answered_by_a_measure_or_a_percentage_of_the_specified_strength(
    question, sentence, holds
) -> None:
    """A concrete specification's form-removal and opening rules state strength as a share of
    the strength specified; a question naming its unit (`in psi`) wants the measure."""
    wanted = value_named(question)
    assert wanted is not None
    assert wanted.held_by(sentence, besides=question) is holds


@pytest.mark.parametrize(
    ("question", "sentence", "holds"),
    [
        (
            "How many days does the contractor have to report a lost-time injury?",
            "Lost-time injuries shall be reported to the Owner within 24 hours.",
            True,
        ),
        (
            "How many hours must the new slab be kept wet?",
            "Keep the slab continuously wet for not less than 7 days.",
            True,
        ),
        (
            "How many days' notice of a claim must be given?",
            "The defects liability period is 1 year from practical completion.",
            False,
        ),
    ],
)
def test_a_duration_in_a_neighbouring_unit_answers(question, sentence, holds) -> None:
    """A safety manual states short limits in hours, a specification's curing in days: an
    hour answers a question in days and a day one in hours; a year does not answer days."""
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == ("duration",)
    assert wanted.held_by(sentence, besides=question) is holds


def test_a_unit_asked_in_capitals_is_the_unit() -> None:
    """`How many Days ...?` (a title-cased form field, a question typed in capitals) wants
    days as `how many days` does; a capitalised unit was a KeyError in the neighbouring
    units' table, a 500 for chat."""
    for question in ("How many Days' notice must be given?", "HOW MANY DAYS' NOTICE?"):
        wanted = value_named(question)
        assert wanted is not None and wanted.unit == "day"
        assert wanted.held_by("Notice of 14 days shall be given.", besides=question)
        assert not wanted.held_by("The warranty runs for 1 year.", besides=question)


def test_how_many_days_from_a_date_wants_days_not_the_date() -> None:
    """A contract's deadline counted from an event (`... from the effective date of
    termination`): the date named is where the days run from."""
    question = "No later than how many days after the date of termination must claims be made?"
    wanted = value_named(question)
    assert wanted is not None and (wanted.kinds, wanted.unit) == (("duration",), "day")
    assert wanted.held_by("Claims shall be made within 90 days after termination.")


def test_a_sum_the_question_states_is_a_threshold_not_what_it_asks() -> None:
    """A contract's thresholds (`For contracts over $150,000, how many ...?`): the count asked
    is answered by `two or more`, not by the sum."""
    question = "For subcontracts over $150,000, how many bonds must the contractor obtain?"
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == ("count",)
    assert wanted.held_by(
        "For subcontracts over $150,000, the contractor shall obtain two bonds.", besides=question
    )


def test_how_many_with_its_noun_said_before_wants_any_number() -> None:
    """`Of the sets submitted, how many does the Engineer keep?`: what is counted comes
    before `how many`, so any number answers (a specification's submittal rules)."""
    wanted = value_named("Of the drawing sets submitted, how many does the Engineer keep?")
    assert wanted == Wanted()
    assert wanted.held_by("Three sets will be kept by the Engineer and one returned.")


@pytest.mark.parametrize(
    ("sentence", "holds"),
    [
        ("Proportion the mix at 1:2:3 by dry weight.", True),
        ("The water-cement ratio shall not exceed 0.45.", True),
        ("The ratio of apprentices shall not exceed that of the approved program.", False),
    ],
)
def test_a_ratio_asked_is_answered_by_any_number(sentence, holds) -> None:
    """A mix design's proportions (`1:2:3`, `0.45`) are no sums of money; a ratio stated
    only by reference to another document holds no number and does not answer."""
    wanted = value_named("What is the maximum water-cement ratio for the mix?")
    assert wanted == Wanted()
    assert wanted.held_by(sentence) is holds


def test_a_duration_is_read_through_a_bracketed_option() -> None:
    """A specification's bracketed options (`within[ 60][ 90] minutes`) still hold the
    duration asked."""
    wanted = value_named("Within how many minutes must concrete be discharged?")
    assert wanted is not None and (wanted.kinds, wanted.unit) == (("duration",), "minute")
    assert wanted.held_by("Discharge concrete within[ 60][ 90] minutes after water is added.")
    assert not wanted.held_by("Discharge concrete before it reaches [ 32] °C.")


def test_at_what_intervals_may_ask_a_spacing_not_how_often() -> None:
    """A safety manual's rest platforms and a specification's joints are spaced at intervals
    of feet: `At what intervals ...?` is not read as a frequency question."""
    wanted = value_named("At what intervals must rest platforms be provided on a long climb?")
    assert wanted is None or "frequency" not in wanted.kinds


@pytest.mark.parametrize(
    ("question", "sentence", "holds"),
    [
        (
            "How long must the inspection records be kept?",
            "Records shall be kept for 3 years after completion of the work.",
            True,
        ),
        ("How long are the dowel bars?", "Dowel bars shall be 18 inches long.", True),
        (
            "On a contract over $150,000, how long must the surety's pledge be maintained?",
            "Contracts over $150,000 require bonds under 40 U.S.C. 3131.",
            False,
        ),
    ],
)
def test_how_long_is_answered_by_a_duration_or_a_length(question, sentence, holds) -> None:
    """A contract's retention periods and a specification's bar lengths: neither a sum nor a
    statute's number answers `How long ...?`."""
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == ("duration", "measure")
    assert wanted.held_by(sentence, besides=question) is holds


# Issue 53, the question side continued: how a question is read before its kinds.


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        (
            "To whom are change proposals submitted, and in how many copies?",
            "Proposals shall be submitted to the Resident Engineer.",
        ),
        (
            "Who has to check our ladders for defects, and how often?",
            "A competent person shall inspect the ladders.",
        ),
    ],
)
def test_a_part_naming_no_value_lets_a_sentence_without_one_answer(question, sentence) -> None:
    """A multi-fact question asking a party and a count (`To whom ..., and in how many
    copies?`): the sentence naming the party answers its first part though it counts
    nothing."""
    wanted = value_named(question)
    assert wanted is None or wanted.held_by(sentence, besides=question)


def test_each_part_of_a_question_asking_two_values_is_read() -> None:
    """`How far apart ..., and how many skiffs ...?` (a safety manual's water rules): the
    sentence with the skiffs' count answers the second part, the buoys' spacing the first."""
    question = "How far apart may ring buoys be, and how many lifesaving skiffs are needed?"
    wanted = value_named(question)
    assert wanted is not None
    assert wanted.held_by("At least one lifesaving skiff shall be available.")
    assert wanted.held_by("Ring buoys shall not be more than 200 feet apart.")
    assert not wanted.held_by("Employees shall wear life jackets.")


def test_an_and_inside_one_question_does_not_part_it() -> None:
    """`above and below which percentages` asks one thing: the `and` is no second question."""
    question = "Is the adjustment based on the variation above and below which percentage?"
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == ("percent",)


@pytest.mark.parametrize(
    "question",
    [
        "What proof do we need before the agency pays us back for what our bonds cost us?",
        "Can we recover what the delay cost us?",
        "Within the period in which the fee is paid, who signs?",
    ],
)
def test_a_what_inside_a_clause_asks_nothing(question) -> None:
    """A paraphrase's or a contract's relative clause (`for what our bonds cost us`, `in
    which the fee is paid`) names no cost or fee asked."""
    assert value_named(question) is None


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("At what height above a lower level must workers be protected?", ("measure",)),
        ("In a street, what is the maximum cost of the sidewalk?", ("amount", "percent")),
        ("The adjustment is paid above which amount?", ("amount", "percent")),
    ],
)
def test_a_what_opening_its_clause_or_before_its_noun_asks(question, kinds) -> None:
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == kinds


def test_at_what_age_is_answered_by_a_duration() -> None:
    """A specification's strength at an age (`3,000 psi at 28 days`)."""
    wanted = value_named("At what age must the cylinders be tested?")
    assert wanted is not None and wanted.kinds == ("duration",)
    assert wanted.held_by("Test the cylinders at 28 days.")


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How often must the harness be inspected?", "frequency"),
        ("How many times a day is the log read?", "frequency"),
        ("What is the minimum concrete temperature at placing?", "temperature"),
    ],
)
def test_a_template_field_is_cued_to_a_frequency_or_a_temperature(question, kind) -> None:
    """A field of a safety manual's inspection schedule or a specification's placing rule."""
    asked = value_cued(question)
    assert asked is not None and asked.kinds[0] == kind
    assert "duration" not in asked.kinds


def test_a_time_allowed_is_a_duration_not_the_temperature_of_its_condition() -> None:
    """A specification's placing limit: `What is the maximum time from loading to pour when
    the temperature is above seventy degrees?` is answered by `one hour`."""
    question = "What is the maximum time from loading to pour when the temperature is high?"
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == ("duration",)
    assert wanted.first_in("The maximum time from loading to pour shall be one hour.") == (
        "one hour"
    )
    assert value_named("At what time must work stop?") == Wanted(("time",))


def test_how_many_times_the_load_asks_a_multiple() -> None:
    """A safety manual's capacities: `four times the maximum intended load`, not the `(2)`
    of a paragraph label nor a count."""
    question = "How many times the maximum intended load must each scaffold support?"
    wanted = value_named(question)
    assert wanted is not None
    sentence = "(a)(2) Each scaffold shall support at least 4 times the maximum intended load."
    assert wanted.first_in(sentence) == "4 times"
    assert wanted.first_in(sentence, bounded=True) == "at least 4 times"


@pytest.mark.parametrize(
    ("question", "kinds", "sentence"),
    [
        ("How steep may the ramp be?", ("measure",), "No ramp shall be inclined over 20 degrees."),
        ("How close must the extinguisher be?", ("measure",), "Place one within 50 feet."),
        ("How soon can we pull the edge forms?", ("duration",), "Forms stay for 12 hours."),
        ("How fast do we have to pay our subs?", ("duration",), "Pay them within 7 days."),
    ],
)
def test_how_steep_close_soon_or_fast_wants_a_measure_or_a_duration(
    question, kinds, sentence
) -> None:
    """Every corpus's paraphrases ask a slope or a distance (`How steep`, `How close`: a
    safety manual) or a waiting time (`How soon`: a specification's form removal; `How
    fast`: a contract's payment terms) so."""
    wanted = value_named(question)
    assert wanted is not None and wanted.kinds == kinds
    assert wanted.held_by(sentence)


def test_days_asked_in_working_days_are_not_answered_by_calendar_days() -> None:
    """A contract counts days one way or the other and says which; `business days` are
    working days, and a duration saying neither may be either."""
    wanted = value_named("Within how many working days must the contractor submit shop drawings?")
    assert not wanted.held_by("submit a request within 7 calendar days of receipt")
    assert wanted.held_by("submit a request within 10 business days of receipt")
    assert wanted.held_by("submit a request within 7 days of receipt")
    calendar = value_named("How many calendar days after the notice must work commence?")
    assert calendar.held_by("commence work within 10 calendar days after the notice")
    assert not calendar.held_by("commence work within 10 working days after the notice")


def test_a_ceiling_asked_wants_an_amount_or_a_percentage_not_the_questions_own_sum() -> None:
    """`What overhead ceiling applies to changes costing over $500,000?` is not answered by
    the sentence restating that $500,000 (an agency supplement's applicability paragraph)."""
    question = "What overhead ceiling applies to VA contract changes costing over $500,000?"
    wanted = value_named(question)
    assert wanted == Wanted(("amount", "percent"))
    assert not wanted.held_by(
        "Paragraphs (a)(1) through (a)(4) apply to proposed contract changes costing over "
        "$500,000.",
        besides=question,
    )
    assert wanted.held_by("Overhead shall not exceed 10 percent.", besides=question)


def test_a_strength_is_a_stress_a_force_or_a_share_of_one_never_a_length() -> None:
    """A specification's `What compressive strength ...?` is answered by `4,000 P.S.I.`,
    `3,900 pounds per square inch` or `70 percent of the specified strength`, a safety
    manual's tensile strength by `5,000 pounds`, neither by the `two feet` of a neighbouring
    rule."""
    wanted = value_named("What compressive strength must concrete for street cuts have?")
    assert not wanted.held_by("Concrete will not be used within two feet of a utility line.")
    for stated, value in [
        ("Concrete shall have compressive strength of 4,000 P.S.I. after 28 days.", "4,000 P.S.I"),
        ("A strength in 28 days of 3,900 pounds per square inch.", "3,900 pounds per square inch"),
        ("Forms stay until 70 percent of the specified strength is reached.", "70 percent"),
    ]:
        assert wanted.held_by(stated)
        assert wanted.first_in(stated) == value
    hooks = value_named("What minimum tensile strength must snaphooks have?")
    assert hooks.first_in("Snaphooks shall have a tensile strength of 5,000 pounds (22.2 kN).")
    assert value_named("How strong must a guardrail be?").held_by("withstand 200 pounds")
    assert value_named("How strong must a scaffold be?").held_by("four times the intended load")
