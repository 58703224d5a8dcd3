"""The vault's one text analysis (strongroom.text.analysis): the words the index, search and
the engines see."""

from __future__ import annotations

import pytest

from strongroom.text import analysis
from strongroom.text.sentences import is_heading


def test_inflections_meet_through_the_snowball_stemmer() -> None:
    """Issue 15: `utilities`/`utility` and `warranties`/`warranty` did not meet."""
    assert analysis.terms("utilities")[0] == analysis.terms("utility")[0]
    assert analysis.terms("warranties")[0] == analysis.terms("warranty")[0]


def test_a_contraction_is_one_word_and_a_stop_word() -> None:
    """Issue 15: `won` matched `won't` for a question about a football final."""
    assert analysis.terms("They won't") == []
    assert analysis.terms("They won") == ["won"]


def test_a_possessive_is_its_noun() -> None:
    assert analysis.terms("the Contractor's") == analysis.terms("contractor")


def test_stop_words_and_accents() -> None:
    assert analysis.terms("The café of the site") == [
        "cafe",
        "site",
        analysis.query("site").terms[0],
    ]


def test_question_words_are_left_out_of_questions_only() -> None:
    assert analysis.query("How many days does the contractor have?").terms == tuple(
        analysis.query("days contractor").terms
    )
    assert "long" in analysis.terms("a long beam")


@pytest.mark.parametrize(
    ("question", "passage"),
    [
        ("What are the LDs?", "Liquidated damages of $500 per day apply."),
        ("What are the liquidated damages?", "LDs are capped at 10%."),
        ("Can the subs be changed?", "The subcontractor may be replaced."),
        ("When is the programme due?", "The schedule is due in May."),
        ("Who signs a CO?", "Each change order is signed by the Engineer."),
        ("Can they throw us off the job? thrown off", "The Government may terminate the contract."),
        ("Is the retention released?", "Retainage is released at completion."),
        ("Who hauls away the junk?", "The Contractor shall remove any rubbish."),
        ("Can we swap the brand?", "A substitute equal to the manufacturer named may be used."),
        ("Who fixes it after handover?", "The Contractor shall remedy defects after acceptance."),
        ("Can they hold back part of the pay?", "The Government may withhold 10 percent."),
    ],
)
def test_thesaurus_concepts_meet_whichever_words_each_side_uses(question, passage) -> None:
    assert set(analysis.query(question).terms) & set(analysis.terms(passage))


def test_acronyms_match_their_case_only() -> None:
    """`co-operate` and `Co.` are no change order; `CO` and `COs` are."""
    change_order = analysis.query("change order").terms[0]
    assert change_order not in analysis.terms("We co-operate with Smith & co.")
    assert change_order in analysis.terms("Two COs were issued.")


def test_slang_counts_in_questions_only() -> None:
    """A passage's `sub-clause` is not tagged as a subcontractor; a question's `subs` is."""
    subcontractor = analysis.query("subcontractor").terms[0]
    assert subcontractor not in analysis.terms("See sub-clause 4.")
    assert subcontractor in analysis.query("subs").terms


def test_index_text_is_the_terms_joined() -> None:
    text = "The Contractor's LDs."
    assert analysis.index_text(text) == " ".join(analysis.terms(text))
    assert all(term.isalnum() for term in analysis.terms(text))  # one word to every parser


def test_query_terms_are_distinct_and_bounded() -> None:
    query = analysis.query(" ".join(f"word{n} word{n}" for n in range(200)))
    assert len(query.terms) == analysis.MAX_QUERY_TERMS
    assert len(set(query.terms)) == len(query.terms)


def test_a_markdown_line_in_bold_is_a_heading_not_an_answer() -> None:
    """`**Liquidated Damages-Construction (Sept 2000)**` names the clause that follows."""
    assert is_heading("**Liquidated Damages-Construction (Sept 2000)**")
    assert not is_heading("The **Contractor** shall pay liquidated damages.")


@pytest.mark.parametrize(
    ("question", "passage"),
    [
        ("How long do we keep the slab wet?", "Curing shall continue for 7 days."),
        ("Can we pour when it is freezing out?", "Placing in cold weather requires heating."),
        ("When can we strip the forms?", "Form removal is permitted after 24 hours."),
        ("Someone lost a finger, do we report it?", "Report every amputation within 24 hours."),
        ("How often must they redo their first aid course?", "Workers are retrained yearly."),
        ("Do we need to shore up the trench?", "A protective system is required."),
    ],
)
def test_site_words_find_the_documents_words(question, passage) -> None:
    """Issue 40: the construction vocabulary as data, used by search and sentence choice."""
    asked = set(analysis.query(question).terms)
    assert asked & set(analysis.terms(passage))
