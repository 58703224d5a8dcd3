"""The offline `wordllama` provider: WordLlama's l2_supercat table from its wheel, averaged in
numpy (no mock)."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from strongroom.embeddings import create_provider
from strongroom.embeddings.wordllama import BATCH, MODEL, WordLlamaEmbeddings
from strongroom.settings import Settings

# From the library itself, 0.4.0.post1, loaded offline with
# `WordLlama.load(cache_dir=<the package folder>, disable_download=True)` and
# `embed(texts, norm=True)`: the pairs' cosines and the first text's first four values.
REFERENCE_TEXTS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome",
    "The new movie is so great",
]
REFERENCE_COSINES = (0.7070062, 0.9343281)
REFERENCE_START = [-0.0289314054, 0.0734709725, -0.1008789539, -0.0325635374]


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbeddings:
    return WordLlamaEmbeddings()


@pytest.fixture
def no_network(monkeypatch, tmp_path) -> list:
    """Every connect or name look-up to anything but this machine fails, and is recorded when
    it comes from another thread than the event loop's: the provider loads and embeds in a
    thread of its own, while the loop's thread may be delivering the session app's webhooks
    (other tests' endpoints) at the same moment. The hub's offline switch is on and the home
    folder is empty, so no cache can serve."""
    attempts = []
    connect, lookup = socket.socket.connect, socket.getaddrinfo
    loop_thread = threading.get_ident()

    def record(attempt) -> None:
        if threading.get_ident() != loop_thread:
            attempts.append(attempt)

    def local(host) -> bool:
        return isinstance(host, str) and (
            host.startswith("127.") or host in ("::1", "localhost") or host.startswith("/")
        )

    def guarded_connect(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family != socket.AF_UNIX and not local(host):
            record(address)
            raise OSError(f"network blocked by the test: {address}")
        return connect(self, address)

    def guarded_lookup(host, *args, **kwargs):
        if not local(host):
            record(host)
            raise OSError(f"network blocked by the test: {host}")
        return lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_lookup)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    return attempts


async def test_it_loads_from_the_wheel_with_the_network_blocked(no_network, tmp_path):
    fresh = WordLlamaEmbeddings()  # loads here, under the block
    vectors = await fresh.embed(["The contractor shall insure the works."])
    assert vectors.shape == (1, 256) and np.abs(vectors).sum() > 0
    assert no_network == [] and list(tmp_path.iterdir()) == []  # nothing asked, nothing cached


async def test_vectors_have_256_dimensions_and_unit_length(wordllama):
    vectors = await wordllama.embed(["The contractor shall insure the works.", "Payment terms."])
    assert vectors.shape == (2, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_it_gives_the_librarys_own_vectors(wordllama):
    a, b, c, d = await wordllama.embed(REFERENCE_TEXTS)
    assert (a @ b, c @ d) == pytest.approx(REFERENCE_COSINES, abs=1e-5)
    assert a[:4] == pytest.approx(REFERENCE_START, abs=1e-6)


async def test_the_same_text_gives_the_same_vector_alone_or_in_any_batch(wordllama):
    texts = ["retention money", "final payment is due thirty days after completion " * 3]
    together = await wordllama.embed(texts)
    alone = np.concatenate([await wordllama.embed([text]) for text in texts])
    reversed_ = await wordllama.embed(texts[::-1])
    assert np.array_equal(together, alone) and np.array_equal(together, reversed_[::-1])


async def test_more_texts_than_a_batch_each_get_their_own_vector(wordllama):
    texts = [f"clause {number} of the contract" for number in range(2 * BATCH + 3)]
    together = await wordllama.embed(texts)
    assert together.shape == (len(texts), 256)
    for index in (0, BATCH - 1, BATCH, 2 * BATCH + 2):
        assert np.array_equal(together[index], (await wordllama.embed([texts[index]]))[0])
    assert not np.array_equal(together[BATCH - 1], together[BATCH])


async def test_a_paraphrase_pair_is_closer_than_an_unrelated_pair(wordllama):
    question, paraphrase, unrelated = await wordllama.embed(
        [
            "Can the owner throw the contractor off the job?",
            "The owner may terminate the contract for the contractor's default.",
            "The café serves fresh croissants every morning.",
        ]
    )
    assert question @ paraphrase > question @ unrelated + 0.2


async def test_an_empty_text_is_a_zero_row_and_a_long_one_is_cut(wordllama):
    cut = WordLlamaEmbeddings(max_input_chars=100)
    empty, long = await cut.embed(["", "retention " * 10 + "insurance " * 500])
    assert not empty.any()
    assert long == pytest.approx((await wordllama.embed(["retention " * 10]))[0], abs=1e-6)


async def test_the_work_runs_off_the_event_loop(wordllama):
    seen = []
    original = wordllama.embed_blocking

    def spy(texts):
        seen.append(threading.current_thread() is threading.main_thread())
        return original(texts)

    wordllama.embed_blocking = spy
    try:
        await wordllama.embed(["the loop keeps turning"])
    finally:
        del wordllama.embed_blocking
    assert seen == [False]


def test_settings_choose_wordllama():
    chosen = create_provider(Settings(embeddings_provider="wordllama"))
    assert isinstance(chosen, WordLlamaEmbeddings) and chosen.model == MODEL
    assert MODEL == "wordllama:l2_supercat-256"
