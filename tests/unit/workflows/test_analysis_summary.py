"""The extractive summary: central sentences per document and overall, with evidence."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid

from strongroom.workflows.analysis_summary import sentence_spans, summarise
from strongroom.workflows.analysis_types import Source, squash
from tests.unit.workflows.contracts import (
    assert_cites,
    contract_v1_sources,
    contract_v2_sources,
    sources,
)

PILING = [
    "The piling contractor mobilised the rig to the north site on Monday.",
    "Bored piles on the north site reached the design depth of eighteen metres.",
    "The concrete for the piles was tested for slump before each pour.",
    "The pile caps were poured over the bored piles once the concrete had cured.",
    "The canteen serves hot lunches to visitors every Friday afternoon.",
    # The hub: it shares words with every piling sentence above.
    "The piling contractor poured concrete into the bored piles on the north site and "
    "cast the pile caps.",
    "Ground water seeped into two piles and the contractor pumped the bores dry.",
]


def _text(summary_sentences) -> list[str]:
    return [sentence.text for sentence in summary_sentences]


def _position(passages: list[Source], evidence) -> tuple[int, int]:
    index = next(i for i, source in enumerate(passages) if source.chunk_id == evidence.chunk_id)
    return index, passages[index].content.index(evidence.excerpt)


def test_the_sentence_most_like_the_others_ranks_first() -> None:
    passages = sources("piling.txt", [" ".join(PILING)])
    summary = summarise(passages, max_sentences=1)
    assert _text(summary.documents[0].sentences) == [PILING[5]]


def test_an_off_topic_sentence_is_not_chosen_while_on_topic_ones_remain() -> None:
    passages = sources("piling.txt", [" ".join(PILING)])
    chosen = _text(summarise(passages, max_sentences=4).documents[0].sentences)
    assert len(chosen) == 4
    assert PILING[4] not in chosen


def test_each_documents_sentences_are_in_document_order() -> None:
    passages = contract_v1_sources()
    sentences = summarise(passages, max_sentences=6).documents[0].sentences
    positions = [_position(passages, sentence.evidence) for sentence in sentences]
    assert len(positions) == 6
    assert positions == sorted(positions)


def test_every_evidence_excerpt_is_text_of_its_source() -> None:
    passages = contract_v1_sources(wrapped=True) + contract_v2_sources()
    summary = summarise(passages, max_sentences=5)
    everything = [s for document in summary.documents for s in document.sentences]
    assert len(everything) == 10 and len(summary.overall) == 5
    for sentence in [*everything, *summary.overall]:
        assert_cites(sentence.evidence, passages)
        assert squash(sentence.evidence.excerpt) == sentence.text
        assert sentence.document_id == sentence.evidence.document_id


def test_max_sentences_limits_each_document_and_the_overall_summary() -> None:
    passages = contract_v1_sources() + sources("piling.txt", [" ".join(PILING)])
    summary = summarise(passages, max_sentences=3)
    assert [len(document.sentences) for document in summary.documents] == [3, 3]
    assert len(summary.overall) == 3
    assert summarise(passages, max_sentences=0).overall == ()


def test_a_document_shorter_than_the_limit_is_given_whole() -> None:
    passages = sources("short.txt", [PILING[0] + " " + PILING[1]])
    summary = summarise(passages, max_sentences=8)
    assert _text(summary.documents[0].sentences) == PILING[:2]
    assert summary.documents[0].sentence_count == 2


def test_wrapped_lines_do_not_change_the_summary() -> None:
    plain = summarise(contract_v1_sources(), max_sentences=6)
    wrapped = summarise(contract_v1_sources(wrapped=True), max_sentences=6)
    assert _text(wrapped.documents[0].sentences) == _text(plain.documents[0].sentences)
    assert any("\n" in s.evidence.excerpt for s in wrapped.documents[0].sentences)


def test_a_single_line_break_inside_a_sentence_is_a_wrapped_line() -> None:
    text = (
        "The Contractor shall pay the\nEmployer the sum of five thousand pounds within\n"
        "fourteen days. The Employer shall\nissue a payment notice."
    )
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "The Contractor shall pay the\nEmployer the sum of five thousand pounds within\n"
        "fourteen days.",
        "The Employer shall\nissue a payment notice.",
    ]


def test_abbreviations_and_bare_clause_numbers_do_not_end_sentences() -> None:
    text = (
        "1. The Employer is Harbour Holdings Ltd. and the Contractor is Northgate plc. "
        "Payment follows cl. 5 of the Conditions, e.g. interim payments. Mr. J. Smith signs."
    )
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "1. The Employer is Harbour Holdings Ltd. and the Contractor is Northgate plc.",
        "Payment follows cl. 5 of the Conditions, e.g. interim payments.",
        "Mr. J. Smith signs.",
    ]


def test_a_heading_line_is_not_joined_to_the_sentence_below_it() -> None:
    text = "5. PAYMENT\nThe Employer shall pay monthly.\n6. Governing Law\nEnglish law applies."
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "5. PAYMENT",
        "The Employer shall pay monthly.",
        "6. Governing Law",
        "English law applies.",
    ]


def test_a_line_in_capitals_inside_a_sentence_is_not_a_heading() -> None:
    text = "This contract is made between\nHARBOUR HOLDINGS LIMITED\nand the contractor named."
    assert len(sentence_spans(text)) == 1


def test_headings_are_never_summary_sentences() -> None:
    summary = summarise(contract_v1_sources(), max_sentences=50)
    texts = _text(summary.documents[0].sentences)
    assert texts and not any(text.isupper() for text in texts)
    assert "4. LIQUIDATED DAMAGES" not in " ".join(texts)


def test_running_headers_and_footers_are_left_out() -> None:
    pages = [
        f"Harbour Tower Build Contract Confidential Draft Page {n}\n\n{sentence}"
        for n, sentence in enumerate(PILING, start=1)
    ]
    summary = summarise(sources("paged.pdf", pages), max_sentences=8)
    texts = _text(summary.documents[0].sentences)
    assert len(texts) == len(PILING)
    assert not any("Confidential" in text for text in texts)


def test_a_near_repeat_of_a_chosen_sentence_is_not_chosen_again() -> None:
    # The two versions share most sentences: the overall summary takes each once.
    summary = summarise(contract_v1_sources() + contract_v2_sources(), max_sentences=8)
    texts = [text.split(" ", 1)[1] for text in _text(summary.overall)]  # without numbers
    assert len(texts) == 8
    assert len(set(texts)) == len(texts)


def test_the_overall_summary_ranks_all_documents_together_in_document_order() -> None:
    passages = sources("piling.txt", [" ".join(PILING)]) + contract_v1_sources()
    summary = summarise(passages, max_sentences=6)
    documents = [s.document_name for s in summary.overall]
    assert set(documents) == {"piling.txt", "contract-v1.pdf"}
    assert documents == sorted(documents, key=["piling.txt", "contract-v1.pdf"].index)
    every_sentence = {
        s.text for d in summarise(passages, max_sentences=99).documents for s in d.sentences
    }
    assert {s.text for s in summary.overall} <= every_sentence


def test_documents_are_listed_in_order_of_first_appearance() -> None:
    second, first = contract_v2_sources(), contract_v1_sources()
    summary = summarise(second + first)
    assert [d.document_name for d in summary.documents] == ["contract-v2.pdf", "contract-v1.pdf"]
    assert summary.documents[0].document_id == second[0].document_id


def test_no_sources_give_an_empty_summary() -> None:
    summary = summarise([])
    assert summary.documents == () and summary.overall == ()
    assert summarise(sources("blank.txt", ["a b.", "   "])).overall == ()


def test_the_summary_is_json_with_uuids_as_strings() -> None:
    passages = contract_v1_sources()
    payload = summarise(passages, max_sentences=2).to_json()
    decoded = json.loads(json.dumps(payload))
    assert decoded == payload
    sentence = decoded["documents"][0]["sentences"][0]
    assert sentence["document_id"] == str(passages[0].document_id)
    assert uuid.UUID(sentence["evidence"]["chunk_id"]) in {s.chunk_id for s in passages}
    assert set(decoded["overall"][0]) == {
        "document_id", "document_name", "text", "score", "evidence"
    }  # fmt: skip


def test_the_summary_is_deterministic_even_across_hash_seeds() -> None:
    passages = contract_v1_sources() + contract_v2_sources(wrapped=True)
    first = summarise(passages).to_json()
    assert summarise(list(passages)).to_json() == first
    script = (
        "import json\n"
        "from strongroom.workflows.analysis_summary import summarise\n"
        "from tests.unit.workflows.contracts import contract_v1_sources, contract_v2_sources\n"
        "passages = contract_v1_sources() + contract_v2_sources(wrapped=True)\n"
        "print(json.dumps(summarise(passages).to_json(), sort_keys=True))\n"
    )
    # Another process, with string hashing (and so set order) unlike this one's.
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    output = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONHASHSEED": seed},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(output) == json.loads(json.dumps(first, sort_keys=True))


def test_a_few_thousand_sentences_are_summarised() -> None:
    rng = random.Random(7)
    syllables = [consonant + vowel for consonant in "bdfgklmnprstvz" for vowel in "aeiou"]
    vocabulary = ["".join(rng.sample(syllables, 3)) for _ in range(400)]
    pages = [
        " ".join(
            "The " + " ".join(rng.choice(vocabulary) for _ in range(12)) + "." for _ in range(100)
        )
        for _ in range(30)
    ]
    passages = sources("large.pdf", pages)
    summary = summarise(passages, max_sentences=8)
    assert summary.documents[0].sentence_count == 3000
    assert len(summary.overall) == 8
    for sentence in summary.overall:
        assert_cites(sentence.evidence, passages)


def test_code_and_bullet_fragments_are_not_summary_sentences() -> None:
    """Issue 15: summaries picked bullets and code."""
    text = "\n\n".join(
        [
            *PILING,
            "- piles bored north site contractor concrete caps",
            "if (pile.depth >= 18) { pour(concrete); cap(pile_caps); }",
        ]
    )
    summary = summarise(sources("site-diary.md", [text]), max_sentences=9)
    texts = _text(summary.documents[0].sentences)
    assert not any(text.startswith("-") or "{" in text for text in texts)


def test_a_sentence_saying_no_more_than_a_chosen_one_is_not_chosen_again() -> None:
    longer = "The piling contractor poured concrete into the bored piles on the north site today."
    shorter = "The piling contractor poured concrete into the bored piles on the north site."
    summary = summarise(sources("diary.txt", [f"{longer} {shorter}"]), max_sentences=5)
    assert len(summary.documents[0].sentences) == 1


def test_one_long_document_does_not_fill_the_overall_summary_of_many() -> None:
    """Issue 15: each document gets its share of the overall summary while it has sentences
    to give (three near-copies of the piling diary would otherwise take three of four)."""
    variants = [
        sentence.replace("north", side).replace(
            "piles", "pile shafts" if side == "south" else "piles"
        )
        for side in ("north", "south", "east")
        for sentence in PILING
    ]
    summary = summarise(
        sources("long.txt", [" ".join(variants)]) + contract_v1_sources(), max_sentences=4
    )
    documents = [sentence.document_name for sentence in summary.overall]
    assert documents == ["long.txt", "long.txt", "contract-v1.pdf", "contract-v1.pdf"]
