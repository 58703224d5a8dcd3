"""The `openai` embeddings provider against a FAKE upstream (tests/embeddings/fake_upstream:
an embedding model cannot run as a service here)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import SecretStr

from strongroom.embeddings import EmbeddingError, create_provider
from strongroom.embeddings.openai import OpenAIEmbeddings
from strongroom.settings import Settings
from tests.embeddings.fake_upstream import FakeEmbeddingsUpstream, letter_counts


def provider(upstream: FakeEmbeddingsUpstream, **overrides) -> OpenAIEmbeddings:
    options = {"base_url": upstream.base_url, "upstream_model": "fake-embed", "max_retries": 0}
    return OpenAIEmbeddings(**(options | overrides))


async def test_vectors_come_back_in_order_unit_length_one_per_text():
    texts = ["aaa", "bbb", "abab", "zzz"]
    async with FakeEmbeddingsUpstream() as upstream:
        vectors = await provider(upstream).embed(texts)
    assert vectors.shape == (4, 26) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.array([letter_counts(text) for text in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected, atol=1e-6)


async def test_texts_go_in_batches_of_the_batch_size():
    async with FakeEmbeddingsUpstream() as upstream:
        vectors = await provider(upstream, batch_size=2).embed(["a", "b", "c", "d", "e"])
        sizes = [len(body["input"]) for _, body in upstream.requests]
    assert sizes == [2, 2, 1] and vectors.shape[0] == 5
    assert {body["model"] for _, body in upstream.requests} == {"fake-embed"}


async def test_input_is_cut_to_max_input_chars():
    async with FakeEmbeddingsUpstream() as upstream:
        await provider(upstream, max_input_chars=100).embed(["x" * 5000])
        (_, body) = upstream.requests[0]
    assert body["input"] == ["x" * 100]


async def test_the_key_is_a_bearer_token_and_never_in_an_error():
    async with FakeEmbeddingsUpstream() as upstream:
        upstream.statuses = [401]
        with pytest.raises(EmbeddingError) as failure:
            await provider(upstream, api_key=SecretStr("sk-very-secret")).embed(["a"])
        headers, _ = upstream.requests[0]
    assert headers["authorization"] == "Bearer sk-very-secret"
    assert "sk-very-secret" not in str(failure.value)


async def test_5xx_and_429_are_retried_then_succeed():
    async with FakeEmbeddingsUpstream() as upstream:
        upstream.statuses = [503, 429]
        vectors = await provider(upstream, max_retries=2).embed(["abc"])
        assert len(upstream.requests) == 3
    assert vectors.shape == (1, 26)


async def test_a_slow_upstream_times_out_as_an_embedding_error():
    async with FakeEmbeddingsUpstream() as upstream:
        upstream.delay = 2.0
        with pytest.raises(EmbeddingError, match="timed out"):
            await provider(upstream, timeout_seconds=0.2).embed(["abc"])


@pytest.mark.parametrize(
    "body",
    ["not json", '{"data": [{"index": 0, "embedding": "nope"}]}', '{"data": []}', "{}"],
)
async def test_a_malformed_answer_is_an_embedding_error(body):
    async with FakeEmbeddingsUpstream() as upstream:
        upstream.body = body
        with pytest.raises(EmbeddingError):
            await provider(upstream).embed(["abc"])


async def test_an_unreachable_upstream_is_an_embedding_error():
    dead = OpenAIEmbeddings(base_url="http://127.0.0.1:9/v1", upstream_model="m", max_retries=0)
    with pytest.raises(EmbeddingError, match="could not be reached"):
        await dead.embed(["abc"])


def test_settings_choose_the_provider_like_the_chat_engines():
    from strongroom.embeddings.minilm import MiniLMEmbeddings

    assert isinstance(create_provider(Settings()), MiniLMEmbeddings)  # the default (issue 40)
    assert create_provider(Settings(embeddings_provider="none")) is None
    chosen = create_provider(
        Settings(
            embeddings_provider="openai",
            embeddings_openai_base_url="http://tei:8080/v1/",
            embeddings_openai_model="bge-small",
        )
    )
    assert isinstance(chosen, OpenAIEmbeddings)
    assert chosen.model == "openai:bge-small" and chosen.base_url == "http://tei:8080/v1"
    with pytest.raises(ValueError, match="EMBEDDINGS_OPENAI_BASE_URL"):
        Settings(embeddings_provider="openai")
