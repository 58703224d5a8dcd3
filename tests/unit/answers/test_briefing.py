"""A template field's value narrowed from what chat quotes (strongroom.answers.briefing): the
field holds what chat says first, and a question asking when gets the clause stating the
moment, not the clause restating the question."""

from __future__ import annotations

from strongroom.answers.briefing import brief_value
from strongroom.answers.composing import Choice, choose
from strongroom.answers.reading import sentences_of
from strongroom.text.question import Question
from tests.unit.answers.test_extractive import passages


def brief(question: str, *texts: str) -> str:
    read = Question.read(question)
    choice = choose(read, passages(*texts))
    assert choice.sentences, "the question is answered"
    return brief_value(read, choice)


def test_a_field_holds_the_value_chat_says_first_not_the_best_scored() -> None:
    """The sibling item negating a word asked may score higher; chat says the item asked
    about first (composing.said_first), and the field holds what chat says first."""
    (passage,) = passages(
        "(2) Air content.\n"
        "(a) For concrete exposed to weather: 5% plus or minus 1.5%.\n"
        "(b) For concrete not exposed to weather: not to exceed 5%."
    )
    exposed, not_exposed = [s for s in sentences_of(passage) if s.text.startswith("(")][-2:]
    said = Choice(sentences=[exposed, not_exposed], score=0.8, closest=[])
    said.picked.extend([not_exposed, exposed])  # the order of their scores
    question = Question.read("What air content is required for concrete exposed to weather?")
    assert brief_value(question, said) == "For concrete exposed to weather: 5% plus or minus 1.5%."


def test_a_when_question_gets_the_last_clause_stating_a_moment() -> None:
    """The clause holding most of the question's words only restates it (`The Contractor
    shall furnish all executed bonds`); the binding moment is the last clause led by
    `before`."""
    value = brief(
        "When must the Contractor furnish the executed bonds?",
        "The Contractor shall furnish all executed bonds, including any necessary reinsurance "
        "agreements, to the Contracting Officer, within the time period specified in the Bid "
        "Guarantee provision of the solicitation, or otherwise specified by the Contracting "
        "Officer, but in any event, before starting work.",
    )
    assert value == "before starting work"


def test_a_field_takes_its_value_from_the_sentence_holding_most_words_asked() -> None:
    """Chat says `... assess ... periodically ... the first aid kit` first (it scored best),
    then `The contents of the first aid kit shall be checked at least weekly`, which also
    holds `checked`: the field holds the second's frequency, not the first's."""
    (passage,) = passages(
        "Employers should assess their worksite periodically and augment the first aid kit. "
        "The contents of the first aid kit shall be checked at least weekly."
    )
    assess, checked = sentences_of(passage)
    said = Choice(sentences=[assess, checked], score=0.8, closest=[])
    question = Question.read("How often must the first aid kit be checked?")
    assert brief_value(question, said) == "at least weekly"
