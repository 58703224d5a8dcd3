"""Sentence vectors (issue 40): the blob they are kept in, and which texts a piece of a
document's vectors (issue 50) sends to the provider (strongroom.retrieval.vectors.embed_piece)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from strongroom.answers.extractive import candidate_sentences, sentence_texts
from strongroom.embeddings import EmbeddingError
from strongroom.retrieval import vectors
from strongroom.retrieval.sentence_vectors import KEY_BYTES, from_blob, key, to_blob


def unit_rows(count: int, dimensions: int = 8, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, dimensions)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class Recording:
    """A provider that records what it is asked to embed and answers each text with a vector
    made from its hash. Not a model: these tests check which texts are sent and where each
    vector lands, which a real model would only blur (tests/vault/test_sentence_vectors.py
    runs the real offline one)."""

    model = "test:recording"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    @staticmethod
    def vector(text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return unit_rows(1, seed=seed)[0]

    async def embed(self, texts) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.vector(text) for text in texts], dtype=np.float32).reshape(-1, 8)


class Failing:
    model = "test:failing"

    async def embed(self, texts) -> np.ndarray:
        raise EmbeddingError("the upstream is down")


def test_a_blob_gives_back_each_texts_vector_to_float16_precision():
    texts = ["The Employer may retain 5%.", "Workers must wear hard hats."]
    rows = unit_rows(2, 384)
    found = from_blob(to_blob(texts, rows))
    assert set(found) == {key(text) for text in texts}
    for text, row in zip(texts, rows, strict=True):
        assert found[key(text)].dtype == np.float32
        np.testing.assert_allclose(found[key(text)], row, rtol=0, atol=5e-4)
        assert np.array_equal(found[key(text)], row.astype(np.float16).astype(np.float32))


def test_a_blob_costs_its_count_then_8_bytes_and_2_a_dimension_per_sentence():
    assert len(to_blob(["a b c", "d e f"], unit_rows(2, 384))) == 4 + 2 * (KEY_BYTES + 384 * 2)


def test_a_text_seen_twice_is_kept_once_with_its_first_vector():
    rows = unit_rows(3)
    blob = to_blob(["same", "other", "same"], rows)
    found = from_blob(blob)
    assert len(found) == 2 and len(blob) == 4 + 2 * (KEY_BYTES + 8 * 2)
    assert np.array_equal(found[key("same")], rows[0].astype(np.float16).astype(np.float32))


def test_a_truncated_blob_is_ignored_not_trusted():
    blob = to_blob(["one sentence", "another one"], unit_rows(2))
    for cut in (1, 3, 4 + KEY_BYTES, len(blob) - 1, len(blob) - 3):
        assert from_blob(blob[:cut]) == {}


def test_no_blob_or_no_sentences_gives_no_vectors():
    assert from_blob(None) == {} and from_blob(b"") == {}
    assert from_blob(to_blob([], np.zeros((0, 8), dtype=np.float32))) == {}
    assert to_blob([], np.zeros((0, 8))) == b"\0\0\0\0"


PASSAGES = [
    "1. Payment. The Employer shall pay the Contractor within 30 days of each invoice. "
    "The Employer may retain 5% of each payment until practical completion.",
    "2. Safety. Workers must wear hard hats and steel-toed boots at all times. "
    "The Employer may retain 5% of each payment until practical completion.",
]


def sentences_of(passages: list[str]) -> list[list[str]]:
    return candidate_sentences(passages, vectors.MAX_SENTENCES)


class FromSentences(Recording):
    """A provider whose passages' vectors are their sentences' mean (as `minilm`'s)."""

    passages_from_sentences = True


async def piece(provider, passages: list[str], wanted: bool = True):
    return await vectors.embed_piece(
        provider, passages, sentences_of(passages), [wanted] * len(passages)
    )


async def test_each_passage_gets_the_vectors_of_the_sentences_the_engine_compares():
    provider = Recording()
    passage_vectors, blobs = await piece(provider, PASSAGES)
    for passage, vector in zip(PASSAGES, passage_vectors, strict=True):
        assert np.array_equal(vector, provider.vector(passage))  # its own run
    for passage, blob in zip(PASSAGES, blobs, strict=True):
        found = from_blob(blob)
        texts = sentence_texts(passage)
        assert texts and set(found) == {key(text) for text in texts}
        for text in texts:
            expected = provider.vector(text).astype(np.float16).astype(np.float32)
            assert np.array_equal(found[key(text)], expected)


async def test_a_passages_vector_is_its_sentences_mean_where_the_provider_says_so():
    provider = FromSentences()
    passage_vectors, _ = await piece(provider, PASSAGES)
    for passage, vector in zip(PASSAGES, passage_vectors, strict=True):
        mean = np.mean([provider.vector(text) for text in sentence_texts(passage)], axis=0)
        assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-6)
    [sent] = provider.calls
    assert not set(PASSAGES) & set(sent)  # no passage run: every token embedded once


async def test_a_passage_without_a_candidate_sentence_is_run_itself():
    provider = FromSentences()
    [vector], [blob] = await piece(provider, ["## Title"])
    assert provider.calls == [["## Title"]] and np.array_equal(vector, provider.vector("## Title"))
    assert from_blob(blob) == {}


async def test_a_passage_whose_vector_is_current_gets_only_its_sentences():
    provider = Recording()
    passage_vectors, blobs = await piece(provider, PASSAGES, wanted=False)
    assert passage_vectors == [None, None] and all(from_blob(blob) for blob in blobs)
    [sent] = provider.calls
    assert not set(PASSAGES) & set(sent)


async def test_a_text_several_passages_hold_is_embedded_once_a_piece():
    provider = Recording()
    await piece(provider, PASSAGES)
    [sent] = provider.calls
    assert len(sent) == len(set(sent)) == len({*PASSAGES, *sentence_texts(PASSAGES[0]),
                                               *sentence_texts(PASSAGES[1])})  # fmt: skip


async def test_a_passage_that_is_one_sentence_is_embedded_once_for_both():
    provider = Recording()
    sentence = "The Employer shall pay the Contractor within 30 days of each invoice."
    assert sentences_of([sentence]) == [[sentence]]
    [vector], [blob] = await piece(provider, [sentence])
    assert provider.calls == [[sentence]]
    assert np.allclose(from_blob(blob)[sentence], vector, atol=1e-3)


async def test_a_passage_of_many_sentences_has_at_most_max_sentences_embedded():
    provider = Recording()
    many = " ".join(
        f"Clause {n} binds the Contractor to item {n} of the works." for n in range(200)
    )
    _, [blob] = await piece(provider, [many], wanted=False)
    texts = sentence_texts(many)
    assert len(texts) > vectors.MAX_SENTENCES
    assert set(from_blob(blob)) == {key(text) for text in texts[: vectors.MAX_SENTENCES]}
    assert [len(call) for call in provider.calls] == [vectors.MAX_SENTENCES]


async def test_passages_without_candidate_sentences_get_an_empty_blob_and_no_call():
    provider = Recording()
    _, blobs = await piece(provider, ["Page 3", "## Title"], wanted=False)
    assert blobs == [b"\0\0\0\0"] * 2 and provider.calls == []


async def test_a_failing_provider_fails_the_piece():
    with pytest.raises(EmbeddingError):
        await piece(Failing(), PASSAGES)
