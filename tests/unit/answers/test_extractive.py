"""The offline answer engine (strongroom.answers.extractive): it follows the retrieval
ranking, quotes the answering sentence first, reads table rows with their header, and says
"not found" when no sentence holds enough of the question, citing the closest passages."""

from __future__ import annotations

import re
import uuid

import pytest

from strongroom.answers.base import CLOSEST, Cite, Delta, NotFound, Passage, Usage
from strongroom.answers.composing import choose
from strongroom.answers.extractive import NOT_FOUND, ExtractiveEngine
from strongroom.answers.reading import sentences_of
from strongroom.text.question import Question


def passages(*texts: str) -> list[Passage]:
    return [
        Passage(number, uuid.uuid4(), uuid.uuid4(), "contract.pdf", 1, text, 1.0)
        for number, text in enumerate(texts, start=1)
    ]


async def answer(question: str, found: list[Passage], **options) -> tuple[str, list[Cite]]:
    events = [
        event
        async for event in ExtractiveEngine().answer(Question.read(question), found, **options)
    ]
    assert isinstance(events[-1], Usage)
    text = "".join(event.text for event in events if isinstance(event, Delta))
    # A "not found" is said as such (answer_type), before the closest passages' citations.
    assert (NotFound() in events) == (text == NOT_FOUND)
    if NotFound() in events:
        assert events.index(NotFound()) == 0
    return text, [event for event in events if isinstance(event, Cite)]


CONTRACT = passages(
    "3. Retention.\n\nThe Employer may retain 5% of each interim payment until completion.",
    "The Contractor shall give the Engineer notice of a claim within 28 days.",
    "The retention of records is the Contractor's duty for seven years after completion.",
)


def test_the_first_quoted_sentence_holds_the_fact() -> None:
    chosen = choose(Question.read("What is the retention on interim payments?"), CONTRACT).sentences
    assert chosen[0].text == (
        "The Employer may retain 5% of each interim payment until completion."
    )


def test_a_title_lends_its_words_to_the_sentence_under_it_and_is_never_quoted() -> None:
    chosen = choose(Question.read("What is the retention?"), CONTRACT).sentences
    assert chosen[0].text.startswith("The Employer may retain 5%")
    assert all(sentence.text != "3. Retention." for sentence in chosen)


def test_the_retrieval_ranking_breaks_a_near_tie() -> None:
    """Two sentences answering alike: the one from the better-ranked passage comes first."""
    found = passages(
        "The notice period for a claim is 28 days.", "The notice period for a claim is 30 days."
    )
    assert (
        choose(Question.read("notice period for a claim"), found).sentences[0].passage.number == 1
    )


async def test_a_question_the_passages_do_not_answer_gets_not_found_citing_the_closest() -> None:
    """Issue 15: one shared common word (`completion`) is no answer. Issue 27: the "not
    found" cites the closest passages (those whose sentences share most of the question
    first), for a person to read."""
    text, cites = await answer("How many stripes does a zebra have at completion?", CONTRACT)
    assert text == NOT_FOUND
    numbers = [cite.passage.number for cite in cites]
    assert len(numbers) == CLOSEST == 3
    assert set(numbers[:2]) == {1, 3}  # the two holding `completion`, then the other
    assert all(cite.excerpt == cite.passage.content for cite in cites)


async def test_the_answer_cites_the_passage_it_quotes() -> None:
    text, cites = await answer("How many days for notice of a claim?", CONTRACT)
    assert text.startswith("The Contractor shall give the Engineer notice of a claim within 28")
    assert [cite.passage.number for cite in cites] == [2]
    assert "within 28 days" in cites[0].excerpt
    passage = cites[0].passage
    start, end = cites[0].highlight
    assert passage.content[start:end] == cites[0].excerpt


async def test_every_marker_names_a_citation_that_is_returned() -> None:
    """Issue 40: markers count the citations returned, in order (`[1]` for the one citation
    of the passage ranked second), never the passage's rank in retrieval."""
    text, cites = await answer("How many days for notice of a claim?", CONTRACT)
    assert text.endswith("[1]") and len(cites) == 1
    markers = {int(number) for number in re.findall(r"\[(\d+)\]", text)}
    assert markers <= set(range(1, len(cites) + 1))


async def test_not_found_points_at_the_closest_sentence_of_each_closest_passage() -> None:
    """Issue 40: a "not found" cites its closest passages with the span of the sentence that
    came closest, for a client to highlight (none for a passage no sentence of which shares
    anything with the question)."""
    text, cites = await answer("What insurance excess applies to flood claims?", CONTRACT)
    assert text == NOT_FOUND
    start, end = cites[0].highlight
    assert cites[0].passage.content[start:end] == (
        "The Contractor shall give the Engineer notice of a claim within 28 days."
    )


async def test_a_table_row_is_read_with_its_header() -> None:
    found = passages(
        "Milestone | Date | Amount\nFoundations complete | 1 March 2027 | $120,000\n"
        "Roof complete | 9 August 2027 | $95,000"
    )
    text, cites = await answer("When is the roof complete?", found)
    assert text.startswith("Milestone: Roof complete; Date: 9 August 2027; Amount: $95,000")
    assert cites[0].excerpt.splitlines() == [
        "Milestone | Date | Amount",
        "Roof complete | 9 August 2027 | $95,000",
    ]


async def test_brief_answers_give_the_value_the_question_asks_for() -> None:
    text, cites = await answer("How many days' notice of a claim?", CONTRACT, brief=True)
    assert text == "28 days"
    assert [cite.passage.number for cite in cites] == [2]


async def test_brief_answers_leave_a_field_the_documents_do_not_answer() -> None:
    text, _ = await answer("How many stripes does a zebra have?", CONTRACT, brief=True)
    assert text == NOT_FOUND


async def test_a_brief_value_may_come_from_a_sentence_after_the_best_one() -> None:
    """The sentence naming the bonds holds no amount; the next one, about the same bonds,
    does: the field gets the amount, cited from that sentence's passage."""
    found = passages(
        "The amount of the performance and payment bonds required is set by the officer. "
        "Performance and payment bonds are required for contracts above $150,000."
    )
    text, cites = await answer(
        "Above what amount are performance and payment bonds required?", found, brief=True
    )
    assert text == "$150,000"
    assert [cite.passage.number for cite in cites] == [1]


async def test_a_number_question_is_not_answered_by_a_sentence_without_one() -> None:
    """Every word of the question is in the passage, but not the number it asks for."""
    found = passages(
        "The Government may terminate the contract for convenience by written notice. "
        "Notice of termination for convenience is given by the Contracting Officer."
    )
    question = "How many days' notice of termination for convenience must the Government give?"
    assert (await answer(question, found))[0] == NOT_FOUND


FINAL_PAYMENT = passages(
    "(g) *Reimbursement for bond premiums*. The Government shall reimburse the Contractor for "
    "bond premiums when the surety has been paid.\n\n"
    "(h) *Final payment*. The Government shall pay the amount due the Contractor after-\n\n"
    "(1) Completion and acceptance of all work;\n\n"
    "(2) Presentation of a properly executed voucher; and\n\n"
    "(3) Presentation of a release of all claims.\n\n"
    "(i) *Interest*. The Government shall pay interest on late payments as the Act provides."
)


def test_a_list_item_holds_the_words_of_its_lead_in() -> None:
    (item,) = [s for s in sentences_of(FINAL_PAYMENT[0]) if s.text.startswith("(1)")]
    assert {"govern", "contractor"} <= item.terms
    assert FINAL_PAYMENT[0].content[item.lead[0] : item.lead[1]].endswith("after-")


def test_a_paragraph_after_the_list_is_no_item_of_it() -> None:
    """`(i)` after `(1)`, `(2)`, `(3)` starts a paragraph of its own: the list ended."""
    (interest,) = [s for s in sentences_of(FINAL_PAYMENT[0]) if "interest" in s.text]
    assert interest.lead is None


def test_a_run_in_paragraph_heading_lends_its_words_and_is_never_quoted() -> None:
    found = sentences_of(FINAL_PAYMENT[0])
    assert all("*Final payment*" not in sentence.text for sentence in found)
    (lead_in,) = [s for s in found if s.text.endswith("after-")]
    assert "final" in lead_in.terms


async def test_a_lead_in_is_quoted_with_its_items_as_one_sentence() -> None:
    text, cites = await answer("What must happen before the final payment?", FINAL_PAYMENT)
    assert text.startswith(
        "The Government shall pay the amount due the Contractor after- (1) Completion and "
        "acceptance of all work; (2) Presentation of a properly executed voucher; and (3) "
        "Presentation of a release of all claims. [1]"
    )
    assert "after-\n\n(1) Completion" in cites[0].excerpt


async def test_a_sum_question_is_not_answered_by_a_sentence_holding_only_days() -> None:
    """A number of another kind (`28 days`) is no answer to `What is the contract sum?`."""
    found = passages("The Contractor shall give notice of a claim on the contract within 28 days.")
    assert (await answer("What is the total contract sum?", found))[0] == NOT_FOUND


async def test_a_question_of_days_is_not_answered_by_a_period_in_years() -> None:
    found = passages("The Contractor shall keep the records of the contract for seven years.")
    question = "How many days must the Contractor keep the records of the contract?"
    assert (await answer(question, found))[0] == NOT_FOUND


async def test_a_value_question_is_answered_by_the_sentence_holding_that_value() -> None:
    found = passages(
        "The Contractor shall give notice of a claim within 28 days. The Employer may retain "
        "5% of each payment as retention."
    )
    text, _ = await answer("What percentage of each payment may the Employer retain?", found)
    assert text.startswith("The Employer may retain 5% of each payment as retention.")


def test_a_lead_in_to_nothing_the_passage_holds_is_no_answer() -> None:
    """`... insert the following clause:` introduces the rest of the document, not an answer
    (it was quoted as one for `Who is the architect of record?`)."""
    (passage,) = passages(
        "As prescribed in 42.1305(a), insert the following clause in solicitations and "
        "contracts when an architect-engineer contract is contemplated:\n\n"
        "Suspension of Work (Apr 1984)"
    )
    assert not any(s.text.endswith("contemplated:") for s in sentences_of(passage))


async def test_a_sentence_that_goes_on_with_the_answer_is_said_with_it() -> None:
    """Issue 27 point 1: "When is the retention released?" was answered with the first half
    (at Practical Completion) and not the sentence after it (the second half)."""
    found = passages(
        "12. Retention. Half of the retention is released at Practical Completion. The "
        "balance is paid to the Contractor after the end of the defects liability period. "
        "Retention monies are held on trust."
    )
    text, _ = await answer("When is the retention released?", found)
    assert text.startswith("Half of the retention is released at Practical Completion.")
    assert "The balance is paid to the Contractor after the end of the defects" in text


async def test_a_sentence_after_the_answer_that_does_not_go_on_with_it_is_left_out() -> None:
    found = passages(
        "Half of the retention is released at Practical Completion. Insurance of the works "
        "is the Contractor's duty."
    )
    text, _ = await answer("When is the retention released?", found)
    assert "Insurance" not in text


async def test_the_sentence_saying_the_questions_phrase_comes_first() -> None:
    """Issue 27: of two sentences sharing the question's words, the one saying `personal
    fall arrest` as a phrase answers a question about personal fall arrest anchorages."""
    found = passages(
        "Positioning device anchorages shall be capable of supporting 3,000 pounds per "
        "employee, and personal equipment used for fall arrest shall be inspected.",
        "Anchorages used for attachment of personal fall arrest equipment shall be capable "
        "of supporting at least 5,000 pounds per employee attached.",
    )
    question = "How many pounds must anchorages for personal fall arrest equipment support?"
    text, _ = await answer(question, found)
    assert "5,000 pounds" in text.split(" [")[0]


async def test_a_clause_title_and_its_prescription_are_never_the_answer() -> None:
    """Issue 27: `Warranty of Construction (Mar 1994)`, `52.246-21 Warranty of Construction.`
    and `As prescribed in 46.710(e)(1), insert the following clause.` were quoted as answers."""
    found = passages(
        "52.246-21 Warranty of Construction.\n\nAs prescribed in 46.710(e)(1), insert the "
        "following clause.\n\nWarranty of Construction (Mar 1994)\n\n(a) The Contractor "
        "warrants that work performed under this contract conforms to the contract "
        "requirements and is free of any defect of equipment, material, or design."
    )
    text, _ = await answer("What does the warranty of construction clause warrant?", found)
    assert text.startswith("(a) The Contractor warrants that work performed")
    assert "As prescribed" not in text and "(Mar 1994)" not in text and "52.246-21" not in text


def test_with_meaning_the_best_sentences_own_score_decides_answer_or_not_found() -> None:
    """Issue 40: one calibrated signal, the best sentence's score (words and meaning as it is
    ranked), against the model's floor; words alone keep ABSTAIN_BELOW."""
    from strongroom.answers.ranking import ABSTAIN_BELOW, Scored, answers

    sentence = sentences_of(CONTRACT[1])[0]
    near = sentences_of(CONTRACT[0])[0]  # another sentence scoring about as well
    assert answers([Scored(0.73, 0.2, 0.9, sentence)], 0.72)
    # many words, no meaning (a lone sentence that high would stand out: issue 53)
    assert not answers([Scored(0.71, 0.9, 0.2, sentence), Scored(0.7, 0.9, 0.2, near)], 0.72)
    assert answers([Scored(0.9, ABSTAIN_BELOW, None, sentence)], None)
    assert not answers([Scored(0.9, ABSTAIN_BELOW - 0.01, None, sentence)], None)
    assert not answers([], 0.0)


def test_a_sentence_holding_the_percentage_asked_counts_as_saying_percentage() -> None:
    """`What percentage of retention ...?`: `retain 5%` says the percentage with its value."""
    chosen = choose(Question.read("What percentage of the payments is retained?"), CONTRACT)
    assert chosen.sentences[0].text.startswith("The Employer may retain 5%")


def test_an_exception_is_quoted_after_the_rule_it_qualifies() -> None:
    """Issue 40: answers quoted the exception instead of the rule."""
    found = passages(
        "(e) The Contracting Officer shall pay 100 percent of the amount due when satisfactory "
        "progress has been made. However, if satisfactory progress has not been made, the "
        "Contracting Officer may retain a maximum of 10 percent of the amount of the payment."
    )
    chosen = choose(
        Question.read("When may the Contracting Officer retain 10 percent of the payment?"), found
    ).sentences
    assert chosen[0].text.startswith("(e) The Contracting Officer shall pay 100 percent")
    assert chosen[1].text.startswith("However, if satisfactory progress has not been made")


# Issue 53 item 4: a condition on a rule (`If ...`, `Where ...`, `When ...`, `In the event
# ...`) following it in its paragraph is quoted after the rule, one shape each.
CONDITIONS = {
    "If": "If such controls fail, the employer shall provide respirators to each employee.",
    "Where": "Where such controls fail, the employer shall provide respirators to each employee.",
    "When": "When such controls fail, the employer shall provide respirators to each employee.",
    "In the event": "In the event such controls fail, the employer shall provide respirators "
    "to each employee.",
}
RULE = "Engineering controls shall be used to keep dust below the permissible exposure limit."


@pytest.mark.parametrize("shape", sorted(CONDITIONS))
def test_a_condition_is_quoted_after_the_rule_it_follows(shape) -> None:
    found = passages(f"{RULE} {CONDITIONS[shape]}")
    chosen = choose(
        Question.read("When must the employer provide respirators to each employee?"), found
    ).sentences
    assert [sentence.text for sentence in chosen[:2]] == [RULE, CONDITIONS[shape]]


def test_a_labelled_condition_is_a_provision_of_its_own_and_quoted_alone() -> None:
    condition = f"(b) {CONDITIONS['If']}"
    found = passages(f"(a) {RULE} {condition}")
    chosen = choose(
        Question.read("When must the employer provide respirators to each employee?"), found
    ).sentences
    assert chosen[0].text == condition


def test_a_condition_opening_its_paragraph_is_quoted_alone() -> None:
    found = passages(f"{RULE}\n\n{CONDITIONS['If']}")
    chosen = choose(
        Question.read("When must the employer provide respirators to each employee?"), found
    ).sentences
    assert chosen[0].text == CONDITIONS["If"]


def test_the_bound_the_question_asks_for_comes_first() -> None:
    """Issue 40: maximum and minimum told apart where the question says which."""
    found = passages(
        "Joints shall be spaced at least 10 feet apart. Joints shall be spaced not more than "
        "20 feet apart."
    )
    most = choose(Question.read("What is the maximum spacing of the joints?"), found)
    least = choose(Question.read("What is the minimum spacing of the joints?"), found)
    assert most.sentences[0].text.startswith("Joints shall be spaced not more than 20 feet")
    assert least.sentences[0].text.startswith("Joints shall be spaced at least 10 feet")


def test_a_defined_term_is_answered_by_the_sentence_that_states_its_value() -> None:
    """Issue 40: `What is the Contract Sum?` was answered with the sentence capping
    liquidated damages at 10% of the Contract Sum."""
    found = passages(
        "The total liquidated damages shall not exceed 10% of the Contract Sum. "
        "The Contract Sum is $4,250,000, subject to adjustment under this Contract."
    )
    chosen = choose(Question.read("What is the Contract Sum?"), found).sentences
    assert chosen[0].text.startswith("The Contract Sum is $4,250,000")


# Issue 53, item 2: sentences as a reader sees them.

BONDS = passages(
    "(b) Performance and payment bonds. The Contractor shall furnish the bonds within 10 "
    "days after award of the contract.\n\n"
    "(c) Retention of payments. If satisfactory progress is not made, the Contracting "
    "Officer may retain 10 percent of each progress payment.\n\n"
    "(d) Final payment. The final payment is made after completion and acceptance."
)


def test_a_labelled_heading_is_kept_with_its_body_and_never_a_sentence_alone() -> None:
    """A clause's run-in heading (`(f) Retention.`), with or without emphasis, lends its
    words to the sentences under it and is never a candidate itself."""
    found = sentences_of(BONDS[0])
    texts = [sentence.text for sentence in found]
    assert not any(
        text.startswith(("(b) Performance", "(c) Retention", "(d) Final")) for text in texts
    )
    (furnish,) = [s for s in found if "furnish" in s.text]
    assert {"perform", "payment", "bond"} <= furnish.terms


async def test_a_heading_is_never_appended_to_an_answer() -> None:
    text, _ = await answer("Within how many days must the payment bonds be furnished?", BONDS)
    assert text.startswith("The Contractor shall furnish the bonds within 10 days")
    assert "Retention of payments." not in text and "Final payment." not in text


def test_an_item_of_a_list_is_no_heading() -> None:
    """`(3) Presentation of a release of all claims.` ends a list its lead-in begins."""
    found = sentences_of(FINAL_PAYMENT[0])
    assert any(s.text.startswith("(3) Presentation of a release") for s in found)


async def test_a_table_row_under_a_title_line_is_read_with_its_header() -> None:
    found = passages("Table 2 Minimum curing periods\nCement type | Days\nType I | 7\nType III | 3")
    text, _ = await answer("What is the minimum curing period for Type III cement?", found)
    assert text.startswith("Cement type: Type III; Days: 3")
    assert not any(s.text.startswith("Table 2") for s in sentences_of(found[0]))
    (row,) = [s for s in sentences_of(found[0]) if s.raw == "Type III | 3"]
    assert {"minimum", "cure", "period"} <= row.terms


async def test_a_bracketed_option_is_quoted_as_its_own_sentence() -> None:
    found = passages(
        "Discharge concrete within[ 60][ 90] minutes after water is added.[ Reduce the time "
        "in hot weather to stay within the temperature limits.] Place concrete in layers."
    )
    text, _ = await answer("Within how many minutes must concrete be discharged?", found)
    assert text.startswith("Discharge concrete within[ 60][ 90] minutes after water is added.")
    assert "temperature limits" not in text.split(" [1]")[0]


# Issue 53, item 5: said first.


def test_a_further_sentence_adding_a_fact_asked_is_said_after_the_first() -> None:
    found = passages(
        "The warranty continues for 1 year after final acceptance of the work. "
        "The Government shall give the Contractor notice of any defect within 30 days."
    )
    question = Question.read("What is the warranty period, and when is notice of a defect given?")
    chosen = choose(question, found, closeness=[0.7, 0.6], floor=0.3).sentences
    assert sorted(s.text[:30] for s in chosen) == [
        "The Government shall give the ",
        "The warranty continues for 1 y",
    ]


# Issue 53, item 5: said alone. With a Meaning, a further sentence scoring under
# MORE_UNLESS_NEW (0.8) of the best is quoted only when it adds something asked.

GUARDRAILS = "When must guardrails be inspected?"
INSPECTED = "Guardrails shall be inspected by the competent person before each shift."
DAMAGE = "If damage is found the guardrail shall be replaced before work resumes."


def test_a_further_sentence_adding_nothing_asked_is_not_said() -> None:
    """A sentence of another paragraph, at 0.77 of the best, adding no word of the question
    and no value of the kind asked (a time: `before each shift`)."""
    found = passages(f"{INSPECTED}\n\n{DAMAGE}")
    chosen = choose(Question.read(GUARDRAILS), found, closeness=[0.6, 0.8], floor=0.3).sentences
    assert [s.text for s in chosen] == [INSPECTED]


def test_the_sentence_right_after_the_best_in_its_paragraph_is_still_said() -> None:
    """The same sentence, next in the best one's paragraph: a condition on the rule or the
    sentence going on with it often holds the fact asked (held out: O-P17, C-L21)."""
    found = passages(f"{INSPECTED} {DAMAGE}")
    chosen = choose(Question.read(GUARDRAILS), found, closeness=[0.6, 0.8], floor=0.3).sentences
    assert [s.text for s in chosen] == [INSPECTED, DAMAGE]


def test_a_further_sentence_with_another_value_of_the_kind_asked_is_said() -> None:
    """At 0.79 of the best, with no new word asked: said when it states another distance
    (the maximum beside the minimum), not when it restates the same one."""
    question = Question.read("How far from the working edge is the control line erected?")
    least = "The control line shall be erected not less than 10 feet from the working edge."
    for other, said in (("not more than 15 feet", True), ("not less than 10 feet", False)):
        found = passages(
            least, f"The control line shall be erected {other} from the working edge of the roof."
        )
        chosen = choose(question, found, closeness=[0.8, 0.4], floor=0.3).sentences
        assert len(chosen) == (2 if said else 1)


async def test_a_rule_and_its_exception_are_said_as_one_sentence_holding_the_value() -> None:
    """The first quoted sentence (up to its marker) holds the value asked, also when the
    rule is said before the exception that states it."""
    found = passages(
        "(e) The Contracting Officer shall pay 100 percent of the amount due when satisfactory "
        "progress has been made. However, if satisfactory progress has not been made, the "
        "Contracting Officer may retain a maximum of 10 percent of the amount of the payment."
    )
    text, _ = await answer(
        "When may the Contracting Officer retain 10 percent of the payment?", found
    )
    first = text.split(" [1]")[0]
    assert first.startswith("(e) The Contracting Officer shall pay 100 percent")
    assert "retain a maximum of 10 percent" in first


# Issue 53, item 4: a standout is an answer.


def test_a_best_sentence_far_above_the_rest_is_an_answer_under_the_floor() -> None:
    """With meaning, a best sentence under the floor still answers when it stands out: the
    next sentence of another text scores STANDOUT_MARGIN or more below it (calibrated on the
    tuning halves), and it reaches STANDOUT_FLOOR."""
    from strongroom.answers.ranking import STANDOUT_FLOOR, STANDOUT_MARGIN, Scored, answers

    best, other = sentences_of(CONTRACT[0])[0], sentences_of(CONTRACT[1])[0]
    top = STANDOUT_FLOOR + 0.01
    assert top < 0.72
    assert answers(
        [Scored(top, 0.5, 0.5, best), Scored(top - STANDOUT_MARGIN, 0.2, 0.2, other)], 0.72
    )


def test_a_best_sentence_near_the_next_is_not_asserted_under_the_floor() -> None:
    from strongroom.answers.ranking import STANDOUT_FLOOR, STANDOUT_MARGIN, Scored, answers

    best, other = sentences_of(CONTRACT[0])[0], sentences_of(CONTRACT[1])[0]
    top = STANDOUT_FLOOR + 0.01
    near = top - STANDOUT_MARGIN + 0.02
    assert not answers([Scored(top, 0.5, 0.5, best), Scored(near, 0.2, 0.2, other)], 0.72)
    # far above the rest but too low to be any answer; and words alone keep ABSTAIN_BELOW
    low = STANDOUT_FLOOR - 0.01
    assert not answers([Scored(low, 0.5, 0.5, best), Scored(0.0, 0.0, 0.0, other)], 0.72)
    assert not answers([Scored(top, 0.5, None, best), Scored(0.0, 0.0, None, other)], None)


def test_a_lone_best_sentence_stands_out_when_it_reaches_the_standout_floor() -> None:
    from strongroom.answers.ranking import STANDOUT_FLOOR, Scored, answers

    best = sentences_of(CONTRACT[0])[0]
    assert answers([Scored(STANDOUT_FLOOR + 0.01, 0.5, 0.5, best)], 0.72)


async def test_a_field_gets_the_citations_of_chats_answer_to_its_question() -> None:
    """Issue 53 item 6: one engine for chat and fill; the field's value is narrowed from
    chat's answer, which it cites as chat does."""
    question = "What percentage may the Employer retain of each interim payment?"
    chat, chat_cites = await answer(question, CONTRACT)
    text, cites = await answer(question, CONTRACT, brief=True)
    assert "retain 5%" in chat
    assert text == "5%"
    assert cites == chat_cites


async def test_a_field_is_not_filled_where_chat_finds_no_answer() -> None:
    text, cites = await answer("How many stripes does a zebra have?", CONTRACT, brief=True)
    chat, chat_cites = await answer("How many stripes does a zebra have?", CONTRACT)
    assert text == chat == NOT_FOUND
    assert cites == chat_cites


async def test_a_field_asking_a_number_of_no_named_kind_gets_the_clause_stating_it() -> None:
    """`What is the maximum number of ...?` names no kind: the field is the clause of the
    sentence stating a number the question does not, not the clause restating it."""
    found = passages(
        "(j) The maximum number of manually controlled jacks on one slab shall be limited "
        "to a number that will permit the operator to keep the slab level within the "
        "tolerances of paragraph (g) of this section, but in no case shall that number "
        "exceed 14."
    )
    text, _ = await answer(
        "What is the maximum number of manually controlled jacks on one slab?", found, brief=True
    )
    assert text == "but in no case shall that number exceed 14."


async def test_a_short_answering_sentence_is_the_field_without_its_list_label() -> None:
    found = passages("(c) Ring buoys shall be provided for emergency rescue operations.")
    question = "What must be provided for emergency rescue operations?"
    text, _ = await answer(question, found, brief=True)
    assert text == "Ring buoys shall be provided for emergency rescue operations."


async def test_a_long_sentence_without_a_value_asked_gives_its_clause_holding_the_question():
    found = passages(
        "Where the work is suspended by the Contracting Officer for the convenience of the "
        "Government, an adjustment shall be made for any increase in the cost of performance, "
        "excluding profit, and the contract modified in writing accordingly."
    )
    text, _ = await answer(
        "What happens to the contract when the increase in the cost of performance is adjusted?",
        found,
        brief=True,
    )
    assert text == "an adjustment shall be made for any increase in the cost of performance"


async def test_a_long_sentence_restating_the_question_gives_what_it_adds() -> None:
    """A rule that says the field's question around its answer, with no clause to cut to:
    the field is the stretch of it the question does not say."""
    found = passages(
        "Paragraphs (a)(1) through (a)(4) of this clause apply to proposed contract changes "
        "costing over $500,000."
    )
    question = "To which proposed contract changes do paragraphs (a)(1) through (a)(4) apply?"
    text, _ = await answer(question, found, brief=True)
    assert text == "costing over $500,000"


async def test_a_fields_value_keeps_the_bound_it_is_stated_with() -> None:
    found = passages("The first aid kit shall be checked by the employer at least weekly.")
    question = "How often must the employer check the first aid kit?"
    text, _ = await answer(question, found, brief=True)
    assert text == "at least weekly"


# Issue 53, item 5: the fact said first. The sentence scored best is moved behind the one
# answering what the question asks first (composing.said_first); `picked` keeps the scores'
# order.


def test_a_question_asking_two_things_is_answered_first_part_first() -> None:
    copies = "Proposals shall be submitted in legible form, original and two copies."
    engineer = "The contractor shall submit proposals for changes to the resident engineer."
    question = Question.read("To whom are change proposals submitted, and in how many copies?")
    choice = choose(question, passages(copies, engineer), closeness=[0.8, 0.7], floor=0.3)
    assert [s.text for s in choice.picked] == [copies, engineer]
    assert [s.text for s in choice.sentences] == [engineer, copies]


def test_a_list_item_negating_a_word_asked_is_said_after_its_sibling() -> None:
    items = (
        "(a) For concrete not exposed to weather: not to exceed 5%.\n"
        "(b) For concrete exposed to weather: 5% plus or minus 1.5%."
    )
    question = Question.read("What air content is required for concrete exposed to weather?")
    choice = choose(question, passages(items), closeness=[0.8, 0.75], floor=0.3)
    assert choice.picked[0].text.startswith("(a) For concrete not exposed")
    assert choice.sentences[0].text.startswith("(b) For concrete exposed")
    asked_not = Question.read("What air content is required for concrete not exposed to weather?")
    choice = choose(asked_not, passages(items), closeness=[0.8, 0.75], floor=0.3)
    assert choice.sentences[0].text.startswith("(a) For concrete not exposed")


def test_a_condition_is_said_after_its_rule_unless_the_question_asks_under_it() -> None:
    condition = (
        "If the Government takes possession of any part of the work before final acceptance, "
        "this warranty shall continue for 1 year from the date the Government takes possession."
    )
    rule = "(b) This warranty shall continue for 1 year from the date of final acceptance."
    found = passages(f"{rule}\n\n{condition}")
    question = Question.read("How long does the warranty continue after final acceptance?")
    choice = choose(question, found, closeness=[0.7, 0.8], floor=0.3)
    assert [s.text for s in choice.picked] == [condition, rule]
    assert [s.text for s in choice.sentences] == [rule, condition]
    asked_if = Question.read(
        "If the Government takes possession before final acceptance, how long does the "
        "warranty continue?"
    )
    choice = choose(asked_if, found, closeness=[0.7, 0.8], floor=0.3)
    assert choice.sentences[0].text == condition
