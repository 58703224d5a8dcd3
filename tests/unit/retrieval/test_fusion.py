"""Fusing the ranking by words with the ranking by meaning (issue 16)."""

from __future__ import annotations

import uuid

import pytest

from strongroom.retrieval.semantic import Semantic, fuse

A, B, C = (uuid.UUID(int=n) for n in (1, 2, 3))


class NoProvider:
    model = "none"


def semantic(**options) -> Semantic:
    return Semantic(NoProvider(), **options)


def test_blend_sums_weighted_min_max_normalised_scores():
    lexical = [(A, 12.0), (B, 4.0)]  # normalised: A 1, B 0
    vectors = [(C, 0.8), (B, 0.6), (A, 0.4)]  # normalised: C 1, B 0.5, A 0
    fused = dict(fuse(semantic(lexical_weight=0.4, vector_weight=0.6), lexical, vectors))
    assert fused[A] == pytest.approx(0.4)
    assert fused[B] == pytest.approx(0.3)
    assert fused[C] == pytest.approx(0.6)


def test_the_fused_ranking_is_best_first_ties_by_id():
    lexical = [(B, 2.0), (A, 1.0)]
    vectors = [(A, 0.9), (B, 0.1)]
    assert [
        chunk for chunk, _ in fuse(semantic(lexical_weight=1, vector_weight=1), lexical, vectors)
    ] == [A, B]


def test_a_zero_vector_weight_is_the_lexical_order_and_zero_lexical_the_vector_order():
    lexical = [(A, 3.0), (B, 2.0), (C, 1.0)]
    vectors = [(C, 0.9), (B, 0.5), (A, 0.1)]
    only_words = fuse(semantic(lexical_weight=1, vector_weight=0), lexical, vectors)
    only_meaning = fuse(semantic(lexical_weight=0, vector_weight=1), lexical, vectors)
    assert [chunk for chunk, _ in only_words][:2] == [A, B]
    assert [chunk for chunk, _ in only_meaning][:2] == [C, B]


def test_rrf_weights_each_ranking_by_rank():
    lexical = [(A, 9.0), (B, 1.0)]
    vectors = [(B, 0.9), (C, 0.5)]
    fused = dict(fuse(semantic(fusion="rrf", lexical_weight=1, vector_weight=2), lexical, vectors))
    assert fused[A] == pytest.approx(1 / 61)
    assert fused[B] == pytest.approx(1 / 62 + 2 / 61)
    assert fused[C] == pytest.approx(2 / 62)


def test_a_single_candidate_scores_its_full_weight():
    assert fuse(semantic(), [(A, 5.0)], []) == [(A, pytest.approx(0.4))]
