"""Questions worded otherwise than the documents (issue 53: paraphrases): the thesaurus meets
a site team's words with a contract's, a specification's and a safety manual's, and never
takes away a word the question asked."""

from __future__ import annotations

import re
import uuid

import pytest

from strongroom.answers.base import Delta, NotFound, Passage
from strongroom.answers.extractive import ExtractiveEngine
from strongroom.text import analysis
from strongroom.text.question import Question


def passages(*texts: str) -> list[Passage]:
    return [
        Passage(number, uuid.uuid4(), uuid.uuid4(), "manual.pdf", 1, text, 1.0)
        for number, text in enumerate(texts, start=1)
    ]


async def said(question: str, found: list[Passage]) -> str | None:
    """The answer's text, or None for "not found"."""
    events = [event async for event in ExtractiveEngine().answer(Question.read(question), found)]
    if NotFound() in events:
        return None
    return "".join(event.text for event in events if isinstance(event, Delta))


def concept(word: str) -> str:
    return analysis.query(word).terms[0]


# Rule: site slang is matched as said, small words included, never by its stem (every
# document shape: a question's ordinary word is not replaced by a slang concept no passage
# holds).


def test_slang_is_matched_as_said_not_by_its_stem() -> None:
    """`fired` (slang for a termination) stems to `fire`, `sacked` to `sack`, and `kept`
    was withholding: a fire extinguisher question lost `fire` and `kept`, a mix design's
    sack of cement lost `sack`."""
    assert analysis.query("Where must fire extinguishers be kept?").terms == (
        "fire",
        "extinguish",
        "kept",
    )
    assert "sack" in analysis.query("How much water per sack of cement?").terms
    fired = concept("fired")
    assert analysis.query("Can they fire us?").terms == (fired,)
    assert analysis.query("What if we get sacked?").terms == (fired,)


def test_a_phrase_is_matched_with_its_small_words() -> None:
    """`stand down`, `hand over`, `taking over` are not any `stand`, `hand` or `take`."""
    assert analysis.query("Who may stand under the slab?").terms == ("stand", "slab")
    assert concept("stop") in analysis.query("Can the CO make us stand down?").terms
    acceptance = concept("acceptance")
    assert acceptance not in analysis.terms("Take the hand tools back to the store.")
    assert acceptance in analysis.terms("The Works are handed over to the Employer.")
    assert acceptance in analysis.terms("Taking over of the Works.")


async def test_a_safety_question_keeps_the_words_slang_took() -> None:
    """A safety manual's extinguisher rule answers where extinguishers are kept."""
    found = passages(
        "A fire extinguisher, rated not less than 10B, shall be kept within 50 feet of "
        "wherever more than 5 gallons of flammable liquids are stored.",
        "Employees shall be trained in the use of portable ladders.",
    )
    answer = await said("Where must fire extinguishers be kept?", found)
    assert answer is not None and "within 50 feet" in answer


# Rule: the thesaurus holds the words a contract, a specification or a safety manual uses
# interchangeably with a site team's (each group a true synonym set, issue 53).


@pytest.mark.parametrize(
    ("group", "question", "passage"),
    [
        # a concrete specification
        (
            "longitudinal",
            "How are the lengthwise joints tied?",
            "Longitudinal joints shall be tied.",
        ),
        ("fine aggregate", "How many parts of sand?", "Two parts of fine aggregate."),
        ("coarse aggregate", "How many parts of stone?", "Three parts of coarse aggregate."),
        ("coarse aggregate", "Is gravel allowed?", "Coarse aggregate shall be crushed stone."),
        ("coarse aggregate", "How much coarse aggregate?", "Four parts stone to one of cement."),
        # a construction contract
        (
            "not submitted",
            "What if we never hand in a programme?",
            "If the Contractor fails to submit a schedule",
        ),
        (
            "reimburse",
            "Will they pay us back for the bond?",
            "The Government shall reimburse the premiums.",
        ),
        (
            "conflict",
            "The schedule disagrees with the plan.",
            "Conflicting information on any drawing",
        ),
        ("precedence", "Which one wins?", "Schedules shall take precedence over the drawings."),
        (
            "reject",
            "Can the State throw out every bid?",
            "A proposal to reject all bids shall be submitted",
        ),
        ("dispute", "We have a fight over wage rates.", "Any dispute arising under this contract"),
        (
            "settle",
            "Will they sort out the difference?",
            "The Government will not settle differences.",
        ),
        ("foreign", "Can it be made here and coated overseas?", "Foreign steel shall not be used."),
        (
            "domestic",
            "Must it be American-made?",
            "Only domestic construction material shall be used.",
        ),
        (
            "accumulate",
            "Can offcuts pile up in the yard?",
            "Keep the area free from accumulations of waste.",
        ),
        (
            "punch list",
            "Who compiles the snag list?",
            "The punch list is prepared by the Engineer.",
        ),
        ("suspend", "Can the CO make us stand down?", "The Contracting Officer may suspend work."),
        ("delay", "Will that slow us down?", "Any delay caused by the Government."),
        ("substantial completion", "The building is nearly done.", "At substantial completion."),
        ("negligence", "Our crew carelessly hit a car.", "Damage caused by its negligence."),
        ("expense", "Who foots the bill?", "It is done at the Contractor's expense."),
        ("possession", "The agency moved into one wing.", "The Government may take possession."),
        ("off site", "Stored away from the site?", "Delivered at locations other than the site."),
        ("reduce", "Can they cut our price?", "The contract price shall be reduced."),
        ("interpretation", "We misread the logs.", "Any interpretation of the data."),
        ("property", "Do we pay for their stuff?", "Damage to Government property."),
        ("request", "Do we have to ask for the interest?", "Paid without request."),
        ("rubbish", "Who clears the offcuts?", "Debris shall be removed daily."),
        ("concur", "Does FHWA concur in the award?", "Concurrence in award is formal."),
        ("law", "Our state's law does not allow it.", "Where State statute does not permit."),
        # a safety manual
        (
            "inspect",
            "Who has to check our ladders?",
            "Ladders shall be inspected by a competent person.",
        ),
        (
            "extend",
            "How far must the ladder stick up?",
            "The side rails shall extend at least 3 feet.",
        ),
        ("workers", "Can my guys stand on a bucket?", "Employees shall not stand on buckets."),
        ("adjacent", "The pole next to him?", "Belting off to an adjacent pole."),
        ("adjacent", "The pole beside him?", "Never tie off to a pole next to the lift."),
        ("precedence", "Which controls override which?", "Lower controls provide for overriding."),
        ("tie off", "Can he clip on to the pole?", "Belting off to a pole is not permitted."),
        ("unsafe", "A saw that isn't up to code?", "Unsafe tools shall not be used."),
    ],
)
def test_a_site_teams_words_meet_the_documents(group, question, passage) -> None:
    """The question and the passage carry the group's concept term."""
    term = "zz" + re.sub(r"[^a-z0-9]", "", group)
    assert term in analysis.query(question).terms
    assert term in analysis.terms(passage)


async def test_a_specification_answers_a_question_in_site_words() -> None:
    """A concrete specification's `longitudinal` joints answer a `lengthwise` question."""
    found = passages(
        "A. Longitudinal construction joints shall be tied with number four deformed tie "
        "bars, thirty inches long at thirty-inch intervals.",
        "B. Expansion joints shall be placed at intervals of 100 feet.",
    )
    answer = await said("What size bars tie the lengthwise joints, and how long are they?", found)
    assert answer is not None and answer.startswith("A. Longitudinal")
