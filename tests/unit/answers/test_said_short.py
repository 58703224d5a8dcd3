"""Said short (issue 53 item 5: the median right answer at most 40 words, the fact in the
first quoted sentence): what an answer leaves out of what it would otherwise quote, each
rule named after the document shape it serves."""

from __future__ import annotations

import uuid

from strongroom.answers.base import Cite, Delta, Passage, Usage
from strongroom.answers.composing import choose
from strongroom.answers.extractive import ExtractiveEngine
from strongroom.text.question import Question


def passages(*texts: str) -> list[Passage]:
    return [
        Passage(number, uuid.uuid4(), uuid.uuid4(), "contract.pdf", 1, text, 1.0)
        for number, text in enumerate(texts, start=1)
    ]


async def answer(question: str, found: list[Passage]) -> tuple[str, list[Cite]]:
    events = [event async for event in ExtractiveEngine().answer(Question.read(question), found)]
    assert isinstance(events[-1], Usage)
    text = "".join(event.text for event in events if isinstance(event, Delta))
    return text, [event for event in events if isinstance(event, Cite)]


# A table: a further row of the table the answer already quotes a row of, adding no word
# asked, is not said, however close its score (a price-range table's next range, a clause
# table's next clause: rows alike but for the key the question names).

RANGES = (
    "Range | Estimated price | Lower bound\n"
    "(e) | Between $500,000 and $1,000,000 | 500000\n"
    "(f) | Between $1,000,000 and $5,000,000 | 1000000"
)


def test_a_further_row_of_the_same_table_adding_no_word_asked_is_not_said() -> None:
    question = Question.read("What is the estimated price of magnitude range (e)?")
    chosen = choose(question, passages(RANGES), closeness=[0.8, 0.8], floor=0.3).sentences
    assert [s.text for s in chosen] == [
        "Range: (e); Estimated price: Between $500,000 and $1,000,000; Lower bound: 500000"
    ]
    # A row holding a word asked that the first lacks is still said.
    question = Question.read("What are the estimated prices of ranges (e) and (f)?")
    chosen = choose(question, passages(RANGES), closeness=[0.8, 0.8], floor=0.3).sentences
    assert [s.text[:10] for s in chosen] == ["Range: (e)", "Range: (f)"]


# Said alone: a question asking one value, the sentence said first stating a value of the
# kind asked: a regulation's neighbouring provisions, each with a value of that kind, are
# not said after it (unless the very next sentence of its paragraph, or two things asked).

BALUSTERS = (
    "(iii) Balusters between posts shall be not more than 19 inches apart.\n\n"
    "(iv) Balusters of steel stairrails shall be not more than 4 inches apart."
)


def test_a_question_asking_one_value_is_answered_by_the_sentence_stating_it_alone() -> None:
    question = Question.read("How far apart may balusters between posts be?")
    chosen = choose(question, passages(BALUSTERS), closeness=[0.8, 0.8], floor=0.3).sentences
    assert [s.text[:5] for s in chosen] == ["(iii)"]
    # Two things asked, joined by `and`: both provisions are still said.
    question = Question.read("How far apart may balusters be, and how far apart steel ones?")
    chosen = choose(question, passages(BALUSTERS), closeness=[0.8, 0.8], floor=0.3).sentences
    assert sorted(s.text[:5] for s in chosen) == ["(iii)", "(iv) "]
    # The very next sentence of its paragraph (the condition, the sentence going on) is said.
    found = passages(BALUSTERS.replace("\n\n", " "))
    question = Question.read("How far apart may balusters between posts be?")
    chosen = choose(question, found, closeness=[0.8, 0.8], floor=0.3).sentences
    assert [s.text[:5] for s in chosen] == ["(iii)", "(iv) "]
