"""Questions worded otherwise than the documents (issue 53: paraphrases): the thesaurus meets
a site team's words with a contract's, a specification's and a safety manual's, and never
takes away a word the question asked."""

from __future__ import annotations

import uuid

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
