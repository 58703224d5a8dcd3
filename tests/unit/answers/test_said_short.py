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
    found = passages(BALUSTERS.replace("\n\n(iv) ", " "))
    question = Question.read("How far apart may balusters between posts be?")
    chosen = choose(question, found, closeness=[0.8, 0.8], floor=0.3).sentences
    assert [s.text[:5] for s in chosen] == ["(iii)", "Balus"]


# A long sentence said down to the part that answers, word for word, `…` where words are
# left out (strongroom.answers.trimming); the citation still quotes and highlights the whole.

SCHEDULE = (
    "The Contractor shall submit three copies of the schedule to the Engineer for approval, "
    "and the dates on which the Contractor contemplates starting and completing the several "
    "salient features of the work."
)


async def test_a_trailing_clause_adding_nothing_asked_is_left_out_with_an_ellipsis() -> None:
    found = passages(SCHEDULE)
    text, cites = await answer("How many copies of the schedule must the Contractor submit?", found)
    assert text == (
        "The Contractor shall submit three copies of the schedule to the Engineer for "
        "approval \u2026 [1]"
    )
    start, end = cites[0].highlight  # the whole sentence, which holds what is quoted
    assert found[0].content[start:end] == SCHEDULE
    # A clause bounding, excepting or conditioning what goes before it is said.
    for clause in ("unless the Engineer extends the period", "nor more than 14 copies"):
        found = passages(SCHEDULE.replace("and the dates on which", f"{clause}, and the dates"))
        text, _ = await answer("How many copies of the schedule must the Contractor submit?", found)
        assert clause in text


async def test_a_cut_never_leaves_the_sentence_before_its_verb() -> None:
    """`The Contractor shall, within five days ...` cut before `prepare` says nothing: said
    whole. The same sentence with its verb before the clause is cut after it."""
    sentence = (
        "(a) The Contractor shall, within five days after the work commences on the contract "
        "or another period of time determined by the Engineer, prepare a schedule for approval "
        "showing the order of the work."
    )
    question = "Within how many days after the work commences?"
    text, _ = await answer(question, passages(sentence))
    assert text == f"{sentence} [1]"
    moved = (
        "(a) The Contractor shall prepare within five days after the work commences on the "
        "contract a schedule, to be approved by the Engineer, showing the order of the several "
        "salient features of all the work."
    )
    text, _ = await answer(question, passages(moved))
    assert text.endswith("\u2026 [1]")


async def test_an_aside_holding_nothing_asked_is_left_out_with_an_ellipsis() -> None:
    sentence = (
        "The Contractor shall submit three copies of the schedule showing the dates on which "
        "it will complete the several salient features of the work (including acquiring "
        "materials, plant, and equipment) to the Engineer."
    )
    question = "How many copies of the schedule must the Contractor submit?"
    text, _ = await answer(question, passages(sentence))
    assert text == (
        "The Contractor shall submit three copies of the schedule showing the dates on which "
        "it will complete the several salient features of the work \u2026 to the Engineer. [1]"
    )
    # An aside holding a word asked (`copies`) is said.
    kept = sentence.replace("acquiring materials", "the copies of materials")
    text, _ = await answer(question, passages(kept))
    assert "(including the copies of materials, plant, and equipment)" in text


async def test_a_comma_between_items_of_a_series_is_never_a_cut() -> None:
    """`any rubbish, tools, scaffolding, equipment, and materials ...` is one list: cut
    after `scaffolding` (the word asked) it would leave items out unsaid."""
    sentence = (
        "Before completing the work, the Contractor shall remove from the work and premises "
        "any rubbish, tools, scaffolding, equipment, and materials that are not the property "
        "of the Government."
    )
    text, _ = await answer("Who has to haul away the scaffolding?", passages(sentence))
    assert text == f"{sentence} [1]"


async def test_a_clause_is_cut_after_a_leading_condition_but_not_after_a_trailing_one() -> None:
    """A leading `If ...,` is closed by the main clause after it (`the Contractor shall
    comply ...`): the clause after the answer is cut. A condition after the sentence's
    verb (`is void unless it is in writing, signed ...`) may go on into the clause: said
    whole."""
    leading = (
        "(c) If this contract is for construction with any defence agency, the Contractor "
        "shall comply with all pertinent provisions of the latest safety and health manual, "
        "as published by the Corps of Engineers for its own contractors and their workers."
    )
    text, _ = await answer(
        "Which safety and health manual must the Contractor comply with?", [*passages(leading)]
    )
    assert text.endswith("latest safety and health manual \u2026 [1]")
    trailing = (
        "Any waiver of the right to sue on the payment bond is void unless it is in writing, "
        "signed by the person whose right is waived, and witnessed by a person who has "
        "furnished labor or material for use in the performance of the contract."
    )
    text, _ = await answer(
        "Can a waiver of the right to sue on the payment bond be void?", [*passages(trailing)]
    )
    assert text == f"{trailing} [1]"


# The same provision printed again (a regulation and the guidance quoting it, two editions):
# a further sentence sharing most of its words with a chosen one, negating the same words and
# stating no figure it lacks, is not said.

ADDENDA = (
    "Minor addenda need not receive prior approval but may be identified by the State DOT at "
    "the time of requesting the concurrence in award."
)


def test_a_further_sentence_restating_a_chosen_one_is_not_said() -> None:
    question = Question.read("Do minor addenda need to receive prior approval?")
    found = passages(ADDENDA, ADDENDA.replace("may be", "should be"))
    chosen = choose(question, found, closeness=[0.8, 0.8], floor=0.3).sentences
    assert [s.text for s in chosen] == [ADDENDA]
    # A sibling negating a word (`not self-supporting`) says something else: said.
    question = Question.read("Which portable ladders must support four times the load?")
    found = passages(
        "(i) Each self-supporting portable ladder: At least four times the maximum load.",
        "(ii) Each portable ladder that is not self-supporting: At least four times the "
        "maximum load.",
    )
    chosen = choose(question, found, closeness=[0.8, 0.8], floor=0.3).sentences
    assert len(chosen) == 2


def test_a_question_asking_how_much_of_something_is_answered_by_the_sentence_stating_it() -> None:
    """`How much line ...?` asks any figure (no kind named): the first sentence holding one
    (`at least 90 feet of line`) is said alone, as for a question naming its kind."""
    question = Question.read("How much line must ring buoys have where employees work over water?")
    found = passages(
        "(c) Where employees work over water, ring buoys with at least 90 feet of line shall "
        "be provided for rescue.\n\n"
        "(d) At least one lifesaving skiff shall be available where employees work over water."
    )
    chosen = choose(question, found, closeness=[0.9, 0.7], floor=0.3).sentences
    assert [s.text[:3] for s in chosen] == ["(c)"]


def test_and_joining_two_things_asked_keeps_both_answers_and_joining_nouns_does_not() -> None:
    """`How wide and how thick ...?` asks two values: both sentences are said. `... the
    rungs, cleats and steps ...` names one thing asked: the first sentence stating its
    value is said alone."""
    found = passages(
        "(a) Slabs of rungs, cleats and steps shall be not less than 12 inches wide.\n\n"
        "(b) Slabs of rungs, cleats and steps shall be not less than 4 inches thick."
    )
    question = Question.read("How wide and how thick must slabs of rungs, cleats and steps be?")
    chosen = choose(question, found, closeness=[0.8, 0.8], floor=0.3).sentences
    assert sorted(s.text[:3] for s in chosen) == ["(a)", "(b)"]
    question = Question.read("How wide must slabs of rungs, cleats and steps be?")
    chosen = choose(question, found, closeness=[0.8, 0.8], floor=0.3).sentences
    assert [s.text[:3] for s in chosen] == ["(a)"]


def test_the_next_labelled_item_of_a_paragraph_is_no_sequel() -> None:
    """`(14) Cross-bracing ...` right after `(13) The top step ...` on its line is a provision
    of its own: under MORE_UNLESS_NEW of the best and adding no word asked, not said (an
    unlabelled next sentence, a condition or the sentence going on, still is)."""
    found = passages(
        "(13) The top step of a stepladder shall not be used as a step. (14) Cross-bracing on "
        "the rear section of stepladders shall not be used for climbing."
    )
    question = Question.read("Can I stand on the top step of a stepladder?")
    chosen = choose(question, found, closeness=[0.8, 0.8], floor=0.3).sentences
    assert [s.text[:4] for s in chosen] == ["(13)"]


def test_two_things_asked_in_parallel_phrases_are_answered_first_part_first() -> None:
    """`a fixed ladder and each of its steps`: no question word after `and`, but two things
    asked; the sentence answering the first (the ladder) is said before the one answering
    the second (a step), though scored below it."""
    found = passages(
        "(1) Each step or rung shall support a single load of at least 250 pounds.\n\n"
        "(2) Each fixed ladder shall support at least two loads of 250 pounds each."
    )
    question = Question.read("What loads must a fixed ladder and each of its steps support?")
    choice = choose(question, found, closeness=[0.9, 0.7], floor=0.3)
    assert [s.text[:3] for s in choice.picked] == ["(1)", "(2)"]
    assert [s.text[:3] for s in choice.sentences] == ["(2)", "(1)"]


async def test_what_follows_the_last_item_of_a_series_or_an_alternative_is_said() -> None:
    """`..., participated in any collusion, or otherwise taken any action, in restraint of
    free competitive bidding ...`: the phrase after the series' last item qualifies every
    item; left out, the sentence would say more than the document does. Said whole."""
    sentence = (
        "Each bidder shall file a statement certifying that the bidder has not entered into "
        "any agreement, participated in any collusion, or otherwise taken any action, in "
        "restraint of free competitive bidding in connection with the submitted bid."
    )
    text, _ = await answer("What statement must each bidder file?", passages(sentence))
    assert text == f"{sentence} [1]"


NOISE = (
    "Duration per day, hours | Sound level dBA slow response\n"
    "8 | 90\n"
    "2 | 100\n"
    "1 1/2 | 102\n"
    "1/2 | 110"
)


def test_a_further_row_keyed_by_a_number_the_question_writes_is_said() -> None:
    """A table's rows alike but for their key: the row whose key the question writes (`2
    hours`) is said though it adds no word asked; `1 1/2` and `1/2` hold no whole `2`."""
    question = Question.read("What sound levels are permitted for 2 hours per day?")
    found = passages(NOISE)
    chosen = choose(question, found, closeness=[0.9, 0.7, 0.9, 0.7], floor=0.3).sentences
    assert [s.raw for s in chosen] == ["1 1/2 | 102", "2 | 100"]


def test_the_next_labelled_item_stating_the_rule_of_an_exception_goes_on() -> None:
    """`(i) ... except when erecting precast concrete members.` then `(ii) When erecting
    precast concrete members, ...`: the next labelled item is the exception's own rule, said
    with the rule it excepts from (a regulation's rule, exception, and the exception's rule)."""
    found = passages(
        "(i) When control lines are used, they shall be erected not less than 6 feet nor more "
        "than 25 feet from the unprotected or leading edge, except when erecting precast "
        "concrete members. (ii) When erecting precast concrete members, the control line shall "
        "be erected not less than 6 feet nor more than 60 feet from the leading edge."
    )
    question = Question.read("How far from the leading edge may control lines be erected?")
    chosen = choose(question, found, closeness=[0.9, 0.5], floor=0.3).sentences
    assert [s.text[:4] for s in chosen] == ["(i) ", "(ii)"]


def test_a_further_sentence_holding_a_word_asked_the_first_lacks_is_said() -> None:
    """Said alone, but the first sentence's `periodically` may be the frequency of something
    else (`assess ... and augment the first aid kit`): the sentence holding `checked`, asked
    and missing from the first, is said too."""
    question = Question.read("How often must the first aid kit be checked?")
    found = passages(
        "Employers should assess their worksite periodically and augment the first aid kit.\n\n"
        "The contents of the first aid kit shall be checked at least weekly."
    )
    chosen = choose(question, found, closeness=[0.95, 0.6], floor=0.3).sentences
    assert [s.text[:9] for s in chosen] == ["Employers", "The conte"]
