"""The words asked are kept (issue 53, item 1): in the fused ranking, a passage holding every
term of the query is placed above every passage lacking one of them
(strongroom.retrieval.semantic.every_word_first), whichever fusion."""

from __future__ import annotations

import uuid

import pytest

from strongroom.retrieval.search import Candidate, holding_every
from strongroom.retrieval.semantic import Semantic, every_word_first, fuse
from strongroom.text import analysis

EVERY, SOME, NONE, OTHER = (uuid.UUID(int=n) for n in (1, 2, 3, 4))


class NoProvider:
    model = "none"


def semantic(**options) -> Semantic:
    return Semantic(NoProvider(), **options)


def order(ranking) -> list[uuid.UUID]:
    return [chunk_id for chunk_id, _ in ranking]


@pytest.mark.parametrize("fusion", ["blend", "rrf"])
def test_a_passage_holding_every_query_word_is_never_below_one_holding_none(fusion):
    # The shape: the passage with the words is the weakest lexical hit (min-max
    # gives it 0 by words) and not among the closest by meaning; two passages without a
    # word are close to the question by meaning.
    lexical = [(SOME, 9.0), (EVERY, 2.0)]
    vectors = [(NONE, 0.62), (OTHER, 0.6), (SOME, 0.3)]
    plain = order(fuse(semantic(fusion=fusion), lexical, vectors))
    assert plain.index(NONE) < plain.index(EVERY)  # what the blend alone does
    kept = order(fuse(semantic(fusion=fusion), lexical, vectors, frozenset({EVERY})))
    assert kept[0] == EVERY
    assert kept.index(EVERY) < kept.index(NONE) and kept.index(EVERY) < kept.index(OTHER)


def test_a_passage_holding_every_query_word_is_never_below_one_holding_only_some():
    lexical = [(SOME, 9.0), (EVERY, 8.0)]
    vectors = [(SOME, 0.9), (EVERY, 0.2)]
    assert order(fuse(semantic(), lexical, vectors, {EVERY})) == [EVERY, SOME]


def test_meaning_still_orders_the_passages_holding_every_word():
    other_every = uuid.UUID(int=9)
    lexical = [(EVERY, 5.0), (other_every, 4.0), (SOME, 1.0)]
    vectors = [(other_every, 0.9), (EVERY, 0.1), (SOME, 0.0)]
    ranked = order(fuse(semantic(), lexical, vectors, {EVERY, other_every}))
    assert ranked == [other_every, EVERY, SOME]


def test_meaning_still_lifts_a_passage_sharing_no_word_above_one_sharing_only_some():
    lexical = [(EVERY, 5.0), (SOME, 1.0)]
    vectors = [(NONE, 0.9), (EVERY, 0.5), (SOME, 0.1)]
    assert order(fuse(semantic(), lexical, vectors, {EVERY})) == [EVERY, NONE, SOME]


def test_without_a_passage_holding_every_word_the_fused_ranking_is_the_blend():
    lexical = [(SOME, 9.0), (OTHER, 2.0)]
    vectors = [(NONE, 0.62), (OTHER, 0.6), (SOME, 0.3)]
    assert fuse(semantic(), lexical, vectors, frozenset()) == fuse(semantic(), lexical, vectors)


def test_the_scores_still_read_best_first_a_lifted_passage_tying_the_best_of_the_rest():
    ranking = [(NONE, 0.6), (SOME, 0.5), (EVERY, 0.2), (OTHER, 0.1)]
    assert every_word_first(ranking, {EVERY, OTHER}) == [
        (EVERY, 0.6),
        (OTHER, 0.6),
        (NONE, 0.6),
        (SOME, 0.5),
    ]
    already_first = [(EVERY, 0.9), (NONE, 0.6)]
    assert every_word_first(already_first, {EVERY}) == already_first


def test_holding_every_reads_the_question_s_analysed_terms_against_the_passage_s():
    # A thesaurus phrase is its concept: "LDs" in a passage holds "liquidated damages".
    wanted = analysis.query("liquidated damages").terms
    candidates = [
        Candidate(EVERY, analysis.terms("The Contractor shall pay LDs of 500 pounds a day.")),
        Candidate(SOME, analysis.terms("Damages for delay are set out below.")),
        Candidate(NONE, analysis.terms("Disputes go to the Contracting Officer.")),
    ]
    assert holding_every(wanted, candidates) == {EVERY}
    two = analysis.query("retention release").terms
    assert holding_every(two, [Candidate(SOME, analysis.terms("retention is held"))]) == set()
