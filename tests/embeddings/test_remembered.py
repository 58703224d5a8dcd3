"""The request path's remembered embeddings (strongroom.embeddings.remembered): each text is
embedded once while remembered, the vectors are the provider's, in the caller's order, and
the memory is bounded. The provider is the real offline MiniLM, counted."""

from __future__ import annotations

import numpy as np
import pytest

from strongroom.answers.meaning import Meaning
from strongroom.embeddings.minilm import MiniLMEmbeddings
from strongroom.embeddings.remembered import RememberedEmbeddings
from strongroom.runtime import Runtime


class Counted:
    """MiniLM, counting the texts it is asked to embed."""

    def __init__(self, provider: MiniLMEmbeddings) -> None:
        self.provider = provider
        self.model = provider.model
        self.answer_floor = provider.answer_floor
        self.texts: list[str] = []

    async def embed(self, texts):
        self.texts += texts
        return await self.provider.embed(texts)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


async def test_a_question_searched_then_answered_is_embedded_once(minilm):
    counted = Counted(minilm)
    remembered = RememberedEmbeddings(counted)
    question = "Who furnishes the payment bond?"
    sentences = ["The Contractor shall furnish a payment bond.", "Retain 10 percent."]
    (searched,) = await remembered.embed([question])  # the search's vector half
    closeness = await Meaning(remembered).closeness(question, sentences)  # the answer
    assert counted.texts == [question, *sentences]
    again = await Meaning(remembered).closeness(question, sentences)  # the next answer
    assert counted.texts == [question, *sentences] and again == closeness
    direct = await minilm.embed([question, *sentences])
    assert np.allclose(searched, direct[0], atol=1e-6)
    assert closeness == pytest.approx([float(direct[1] @ direct[0]), float(direct[2] @ direct[0])])


async def test_vectors_come_back_in_the_callers_order_with_repeats(minilm):
    remembered = RememberedEmbeddings(minilm)
    await remembered.embed(["beta clause"])
    vectors = await remembered.embed(["alpha clause", "beta clause", "alpha clause"])
    direct = await minilm.embed(["alpha clause", "beta clause"])
    assert np.allclose(vectors, direct[[0, 1, 0]], atol=1e-6)


async def test_what_is_remembered_is_bounded_and_the_oldest_goes_first(minilm):
    counted = Counted(minilm)
    remembered = RememberedEmbeddings(counted, max_bytes=3 * 384 * 4)  # 3 vectors
    texts = [f"Clause {number} of the contract." for number in range(5)]
    await remembered.embed(texts)
    assert len(remembered) == 3 and remembered.nbytes <= remembered.max_bytes
    await remembered.embed(texts[-3:])  # still remembered: not embedded again
    assert counted.texts == texts
    await remembered.embed(texts[:1])  # forgotten: embedded again
    assert counted.texts == [*texts, texts[0]]


async def test_the_request_path_remembers_and_ingestion_calls_the_provider_itself(runtime):
    with_provider = runtime.settings.model_copy(update={"embeddings_provider": "minilm"})
    created = Runtime.create(with_provider)
    try:
        assert created.request_embeddings.provider is created.embeddings
        assert created.semantic().provider is created.request_embeddings
        assert created.answers.meaning.provider is created.request_embeddings
    finally:
        await created.close()
